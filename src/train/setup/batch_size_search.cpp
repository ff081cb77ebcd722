// One probe (ProbeStep) builds the configured model and optimizer on the device, runs a training
// step on a zero batch and reads the device's memory in use; everything it allocated is freed
// before the next probe (RAII), so probes do not add up.
#include "setup/batch_size_search.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/train/input_size.hpp"
#include "setup/probe_step.hpp"

namespace phalanx::train {
namespace {

// Device memory in use after one step at `batch`, or nullopt when an allocation failed.
std::optional<std::size_t> probe(const config::Config& config, backend::Backend& backend, const Shape& sample,
                                 int classes, int batch) {
  try {
    ProbeStep step(config, backend, sample, classes, batch);
    step.run();
    const auto memory = backend.device_memory();
    return memory->total_bytes - memory->free_bytes;
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::DeviceMemory) throw;
    return std::nullopt;
  }
}

}  // namespace

BatchSizeChoice find_batch_size(const config::Config& config, backend::Backend& backend, int world_size) {
  const auto memory = backend.device_memory();
  PHALANX_REQUIRE_INPUT(memory.has_value(),
                        "train.batch_size: auto sizes the batch to a GPU's memory, but this ",
                        "rank trains on ", backend.name(), "; give train.batch_size a number");
  const data::DatasetInfo info = data::read_source_info(config.data);
  const auto* split = info.find_split(config.data.train_split);
  PHALANX_REQUIRE_INPUT(split != nullptr, config.data.path, ": no split '", config.data.train_split,
                        "' (data.train_split)");
  const std::int64_t largest_useful = split->count / std::max(world_size, 1);
  const Shape sample = model_sample_shape(config.data, split->height, split->width, split->channels,
                                          data::source_name(config.data));
  const int classes = static_cast<int>(info.classes.size());
  const auto budget =
      static_cast<std::size_t>(batch_size_memory_fraction * static_cast<double>(memory->total_bytes));

  BatchSizeChoice choice;
  choice.total_bytes = memory->total_bytes;
  const auto fits = [&](int batch) {
    ++choice.probes;
    const auto used = probe(config, backend, sample, classes, batch);
    if (!used || *used > budget) return false;
    if (batch > choice.batch_size) {
      choice.batch_size = batch;
      choice.used_bytes = *used;
    }
    return true;
  };
  const int ceiling = static_cast<int>(std::clamp<std::int64_t>(largest_useful, 1, 1 << 20));
  int too_large = 0;
  for (int batch = 1;; batch = std::min(batch * 2, ceiling)) {
    if (!fits(batch)) {
      too_large = batch;
      break;
    }
    if (batch == ceiling) break;
  }
  PHALANX_REQUIRE_INPUT(choice.batch_size >= 1, "train.batch_size: auto: not even a batch of 1 fits in ",
                        memory->total_bytes >> 20, " MiB on ", backend.name());
  // Bisect between the largest power of two that fitted and the first size that did not, to within
  // an eighth of the answer (a few probes more).
  while (too_large > 0 && too_large - choice.batch_size > std::max(1, choice.batch_size / 8)) {
    const int middle = choice.batch_size + (too_large - choice.batch_size) / 2;
    if (!fits(middle)) too_large = middle;
  }
  return choice;
}

}  // namespace phalanx::train
