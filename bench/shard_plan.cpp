// The epoch plan at 10^6, 10^8 and 10^10 samples: the heap it holds (a counting global allocator
// in this binary) and the time per sample index, for the materialised Fisher-Yates order (where it
// fits in --max-materialised-gib) against the per-index permutation, and for streaming's chunk
// windows computed per index. Time per index: the median over --repeats of rank 3 of 8 (batch
// 256) taking 4096 consecutive batches; the materialised order adds its draw, spread over N.
#include "phalanx/data/shard_plan.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "counting_allocator.hpp"

using counted_heap::live_bytes;
using counted_heap::peak_bytes;

namespace {
using phalanx::data::EpochOrder;
using phalanx::data::ShardOrder;
using phalanx::data::ShardPlan;

constexpr int world_size = 8, local_batch = 256, rank = 3;
constexpr std::int64_t batches = 4096;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Measured {
  std::int64_t plan_bytes = 0;  // peak heap of the plan, its epoch order and one batch of indices
  double draw_seconds = 0;      // taking the epoch's order
  double lookup_ns = 0;         // per index, taking batches
};

Measured measure(std::int64_t dataset_size, ShardOrder order, int repeats) {
  std::vector<double> draws, lookups;
  Measured result;
  std::int64_t checksum = 0;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    const std::int64_t before = live_bytes.load();
    peak_bytes = before;
    const ShardPlan plan(dataset_size, local_batch, rank, world_size, 99, order);
    const auto draw_start = std::chrono::steady_clock::now();
    EpochOrder epoch = plan.epoch_order(repeat);
    draws.push_back(seconds_since(draw_start));
    const std::int64_t first = plan.steps_per_epoch() / 3,
                       count = std::min(batches, plan.steps_per_epoch() - first);
    const auto lookup_start = std::chrono::steady_clock::now();
    for (std::int64_t step = first; step < first + count; ++step)
      checksum += plan.rank_indices(epoch, step)[7];
    lookups.push_back(seconds_since(lookup_start) * 1e9 / static_cast<double>(count * local_batch));
    result.plan_bytes = peak_bytes.load() - before;
  }
  std::sort(draws.begin(), draws.end());
  std::sort(lookups.begin(), lookups.end());
  result.draw_seconds = draws[draws.size() / 2];
  result.lookup_ns = lookups[lookups.size() / 2];
  if (checksum == -1) std::puts("");  // keeps the lookups from being optimised away
  return result;
}

void print(const char* order, std::int64_t dataset_size, const Measured& measured) {
  const double per_index =
      measured.lookup_ns + measured.draw_seconds * 1e9 / static_cast<double>(dataset_size);
  std::printf("%-13.0e %-24s %14lld %12.6f %12.1f %14.1f\n", static_cast<double>(dataset_size), order,
              static_cast<long long>(measured.plan_bytes), measured.draw_seconds, measured.lookup_ns,
              per_index);
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::int64_t> sizes;
  int repeats = 5;
  double max_materialised_gib = 2;
  for (int index = 1; index < argc; ++index) {
    const std::string argument = argv[index];
    if (argument == "--repeats" && index + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++index]));
    } else if (argument == "--max-materialised-gib" && index + 1 < argc) {
      max_materialised_gib = std::atof(argv[++index]);
    } else if (!argument.empty() && argument[0] != '-') {
      sizes.push_back(static_cast<std::int64_t>(std::atof(argument.c_str())));
    } else {
      std::fprintf(stderr, "usage: %s [--repeats R] [--max-materialised-gib G] [SAMPLES...]\n", argv[0]);
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1'000'000, 100'000'000, 10'000'000'000};
  std::printf("world %d, local batch %d, rank %d; median of %d; materialised limit %lld items\n", world_size,
              local_batch, rank, repeats, static_cast<long long>(ShardOrder::materialised_limit));
  std::printf("%-13s %-24s %14s %12s %12s %14s\n", "samples", "order", "plan_bytes", "draw_s", "lookup_ns",
              "ns_per_index");
  const ShardOrder materialised = ShardOrder{}.with_shuffle(ShardOrder::Shuffle::Materialised);
  const ShardOrder per_index = ShardOrder{}.with_shuffle(ShardOrder::Shuffle::PerIndex);
  const ShardOrder streaming =
      ShardOrder::chunk_windows(64, 16384).with_shuffle(ShardOrder::Shuffle::PerIndex);
  for (const std::int64_t size : sizes) {
    if (static_cast<double>(size) * 8 <= max_materialised_gib * (1 << 30)) {
      print("materialised", size, measure(size, materialised, repeats));
    } else {
      std::printf("%-13.0e %-24s %14.0f  (not built: over --max-materialised-gib %.1f)\n",
                  static_cast<double>(size), "materialised", static_cast<double>(size) * 8,
                  max_materialised_gib);
    }
    print("per-index", size, measure(size, per_index, repeats));
    print("chunk-windows per-index", size, measure(size, streaming, repeats));
  }
  return 0;
}
