// Gradient all-reduce cost: GradSync (buckets of 25 MB launched non-blocking, as during backward) against one
// blocking all-reduce of the whole buffer, side by side in one run, for the fmnist_cnn gradient
// (421,642 floats) and a ResNet-50-sized one (25.6M floats). Prints medians of R repetitions and
// the bus bandwidth (nccl-tests' definition: algbw x 2(n-1)/n).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "phalanx/comm/grad_sync.hpp"
#include "phalanx/core/median.hpp"
#include "phalanx/core/timer.hpp"

using phalanx::median;

int main(int argc, char** argv) {
  phalanx::comm::MpiSession session(&argc, &argv);
  const auto world = phalanx::comm::Communicator::world();
  const int repetitions = 21;
  if (world.rank() == 0)
    std::printf("%-10s %-14s %12s %12s %8s %12s\n", "ranks", "floats", "raw ms", "gradsync ms", "ratio",
                "busbw GB/s");
  for (const std::int64_t count : {std::int64_t{421642}, std::int64_t{25557032}}) {
    std::vector<float> buffer(static_cast<std::size_t>(count), 1.0f);
    std::vector<double> raw, bucketed;
    phalanx::comm::GradSync sync(world, buffer.data(), count, 25u << 20);
    for (int repetition = 0; repetition < repetitions; ++repetition) {
      world.barrier();
      phalanx::Stopwatch clock;
      world.allreduce_sum(buffer.data(), count);
      raw.push_back(clock.seconds());
      world.barrier();
      clock.restart();
      sync.begin_step();
      sync.gradients_ready(0);  // as backward does: every bucket starts non-blocking
      sync.wait();
      bucketed.push_back(clock.seconds());
    }
    const double raw_median = median(raw), bucketed_median = median(bucketed);
    const double bytes = static_cast<double>(count) * sizeof(float);
    const double bus_bandwidth = bytes / raw_median * 2.0 * (world.size() - 1) / world.size() / 1e9;
    if (world.rank() == 0)
      std::printf("%-10d %-14lld %12.3f %12.3f %8.2f %12.2f\n", world.size(), static_cast<long long>(count),
                  raw_median * 1e3, bucketed_median * 1e3, bucketed_median / raw_median, bus_bandwidth);
  }
  return 0;
}
