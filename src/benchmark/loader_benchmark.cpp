// Loader throughput through the real data::Loader (its thread, ring buffer and augmentation).
#include "phalanx/benchmark/loader_benchmark.hpp"

#include <algorithm>
#include <memory>

#include "phalanx/core/allocator.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/loader.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::benchmark {

LoaderResult benchmark_loader(const LoaderSettings& settings) {
  PHALANX_REQUIRE_INPUT(settings.batch_size >= 1, "--batch-size must be >= 1 (got ", settings.batch_size,
                        ")");
  PHALANX_REQUIRE_INPUT(settings.prefetch >= 1, "--prefetch must be >= 1 (got ", settings.prefetch, ")");
  PHALANX_REQUIRE_INPUT(settings.batches >= 1, "--batches must be >= 1 (got ", settings.batches, ")");
  LoaderResult result;
  Stopwatch read_clock;
  auto split = std::make_shared<const data::Split>(data::read_split(settings.path, settings.split));
  result.read_seconds = read_clock.seconds();
  PHALANX_REQUIRE_INPUT(split->count >= settings.batch_size, settings.path, ": split '", settings.split,
                        "' has ", split->count, " samples, fewer than one batch of ", settings.batch_size);
  const int crop = settings.augment.random_resized_crop.size;
  PHALANX_REQUIRE_INPUT(crop >= 0 && crop <= split->height && crop <= split->width,
                        "--random-resized-crop must be between 1 and the ", split->height, "x", split->width,
                        " images' sides (got ", crop, ")");
  const data::ShardPlan plan(split->count, settings.batch_size, 0, 1, 0);
  // Enough epochs for the requested batches; the loader stops when the consumer does.
  const std::int64_t epochs = (settings.batches + plan.steps_per_epoch() - 1) / plan.steps_per_epoch();
  data::Loader loader(split, plan, settings.prefetch, 0, 0, epochs, HostAllocator::instance(),
                      settings.augment);
  std::int64_t checksum = 0;
  Stopwatch clock;
  while (result.batches < settings.batches) {
    const data::Batch* batch = loader.next();
    if (!batch) break;
    checksum += batch->images[0] + batch->labels[0];  // touch the batch as a consumer would
    ++result.batches;
  }
  result.seconds = clock.seconds();
  const double images = static_cast<double>(result.batches) * settings.batch_size;
  result.batches_per_second = result.batches / std::max(result.seconds, 1e-12);
  result.images_per_second = images / std::max(result.seconds, 1e-12);
  result.megabytes_per_second =
      images * static_cast<double>(split->image_bytes()) / 1e6 / std::max(result.seconds, 1e-12);
  if (checksum < 0) result.batches = -result.batches;  // never: keeps the reads observable
  return result;
}

}  // namespace phalanx::benchmark
