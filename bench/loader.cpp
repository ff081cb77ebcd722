// Loader throughput at the Fashion-MNIST shape: how many batches per second the prefetch thread
// gathers, against a bare memcpy gather of the same samples on the calling thread (the floor).
#include "phalanx/data/loader.hpp"

#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>

#include "phalanx/data/augmentation.hpp"

namespace {

std::shared_ptr<const phalanx::data::Split> fashion_shaped_split() {
  auto split = std::make_shared<phalanx::data::Split>();
  split->count = 60000;
  split->height = split->width = 28;
  split->channels = 1;
  split->images.resize(static_cast<std::size_t>(split->count * 784));
  std::mt19937 generator(1);
  for (auto& pixel : split->images) pixel = static_cast<std::uint8_t>(generator());
  for (std::int64_t index = 0; index < split->count; ++index) split->labels.push_back(index % 10);
  return split;
}

void LoaderBatches(benchmark::State& state) {
  static const auto split = fashion_shaped_split();
  const int batch = static_cast<int>(state.range(0));
  std::int64_t batches = 0;
  for (auto _ : state) {
    phalanx::data::ShardPlan plan(split->count, batch, 0, 1, 7);
    phalanx::data::Loader loader(split, plan, 4, 0, 0, 1, phalanx::HostAllocator::instance());
    while (const auto* next = loader.next()) {
      std::uint8_t first_byte = next->images[0];  // DoNotOptimize of a const reference is deprecated
      benchmark::DoNotOptimize(first_byte);
      ++batches;
    }
  }
  state.SetItemsProcessed(batches * batch);
  state.counters["batches_per_second"] =
      benchmark::Counter(static_cast<double>(batches), benchmark::Counter::kIsRate);
}
BENCHMARK(LoaderBatches)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

void GatherBaseline(benchmark::State& state) {
  static const auto split = fashion_shaped_split();
  const int batch = static_cast<int>(state.range(0));
  std::vector<std::uint8_t> images(static_cast<std::size_t>(batch) * 784);
  std::int64_t batches = 0;
  for (auto _ : state) {
    phalanx::data::ShardPlan plan(split->count, batch, 0, 1, 7);
    auto order = plan.epoch_order(0);
    for (std::int64_t step = 0; step < plan.steps_per_epoch(); ++step) {
      const auto indices = plan.rank_indices(order, step);
      for (int sample = 0; sample < batch; ++sample)
        std::memcpy(images.data() + sample * 784, split->images.data() + indices[sample] * 784, 784);
      benchmark::DoNotOptimize(images[0]);
      ++batches;
    }
  }
  state.SetItemsProcessed(batches * batch);
}
BENCHMARK(GatherBaseline)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

// Cost of CPU augmentation (random crop 4 + flip + cutout 8) on one 64-image batch, against the
// plain copy the loader does when augmentation is off.
void AugmentBatch(benchmark::State& state) {
  const int height = 28, width = 28, channels = 1, batch = 64;
  const bool augment = state.range(0) != 0;
  const phalanx::data::AugmentOptions options =
      augment ? phalanx::data::AugmentOptions{4, true, 8, {}, {}, {}} : phalanx::data::AugmentOptions{};
  std::vector<std::uint8_t> source(static_cast<std::size_t>(batch * height * width * channels));
  for (std::size_t index = 0; index < source.size(); ++index)
    source[index] = static_cast<std::uint8_t>(index * 31);
  std::vector<std::uint8_t> destination(source.size());
  const auto image_bytes = static_cast<std::size_t>(height * width * channels);
  std::int64_t epoch = 0;
  for (auto _ : state) {
    for (int sample = 0; sample < batch; ++sample)
      phalanx::data::augment_image(options, 1, epoch, sample, source.data() + sample * image_bytes,
                                   destination.data() + sample * image_bytes, height, width, channels);
    benchmark::DoNotOptimize(destination[0]);
    ++epoch;
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(AugmentBatch)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
