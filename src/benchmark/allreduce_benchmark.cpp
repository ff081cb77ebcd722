// All-reduce bandwidth (see allreduce_benchmark.hpp). Each iteration starts after a barrier, so
// the ranks enter together, and counts as long as its slowest rank took: that is what a
// synchronous training step waits for.
#include "phalanx/benchmark/allreduce_benchmark.hpp"

#include <algorithm>
#include <cstdio>

#include "phalanx/core/error.hpp"
#include "phalanx/core/tensor.hpp"
#include "phalanx/core/median.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::benchmark {
namespace {

AllreduceResult result_of(std::size_t bytes, double seconds, int ranks) {
  AllreduceResult result{bytes, seconds, 0, 0};
  result.algorithm_bandwidth = seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
  result.bus_bandwidth = result.algorithm_bandwidth * bus_bandwidth_factor(ranks);
  return result;
}

template <typename Operation>
double timed_median(const comm::Communicator& communicator, const AllreduceSettings& settings,
                    Operation&& operation) {
  for (int iteration = 0; iteration < settings.warmup; ++iteration) operation();
  std::vector<double> times;
  for (int iteration = 0; iteration < settings.iterations; ++iteration) {
    communicator.barrier();
    Stopwatch stopwatch;
    operation();
    double seconds = stopwatch.seconds();
    communicator.allreduce_max(&seconds, 1);
    times.push_back(seconds);
  }
  return median(times);
}

}  // namespace

std::vector<std::size_t> doubling_sizes(std::size_t minimum, std::size_t maximum) {
  std::vector<std::size_t> sizes;
  for (std::size_t bytes = std::max<std::size_t>(minimum / 4 * 4, 4); bytes <= maximum; bytes *= 2)
    sizes.push_back(bytes);
  return sizes;
}

double bus_bandwidth_factor(int ranks) {
  return ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0;
}

std::vector<AllreduceResult> benchmark_mpi_allreduce(const comm::Communicator& communicator,
                                                     const AllreduceSettings& settings, bool nonblocking) {
  std::vector<AllreduceResult> results;
  for (const std::size_t bytes : settings.bytes) {
    const auto count = static_cast<std::int64_t>(bytes / sizeof(float));
    std::vector<float> buffer(static_cast<std::size_t>(count), 1.0f);
    const double seconds = timed_median(communicator, settings, [&] {
      if (nonblocking)
        communicator.allreduce_sum_async(buffer.data(), count).wait();
      else
        communicator.allreduce_sum(buffer.data(), count);
    });
    results.push_back(result_of(bytes, seconds, communicator.size()));
  }
  return results;
}

std::vector<AllreduceResult> benchmark_nccl_allreduce(comm::NcclCommunicator& nccl, backend::Backend& backend,
                                                      const comm::Communicator& communicator,
                                                      const AllreduceSettings& settings) {
  std::vector<AllreduceResult> results;
  const std::size_t largest =
      settings.bytes.empty() ? 4 : *std::max_element(settings.bytes.begin(), settings.bytes.end());
  Tensor buffer(backend, Shape{static_cast<std::int64_t>(largest / sizeof(float))});
  backend.fill(buffer.data(), buffer.elements(), 1.0f);
  backend.synchronize();
  for (const std::size_t bytes : settings.bytes) {
    const auto count = static_cast<std::int64_t>(bytes / sizeof(float));
    const double seconds = timed_median(communicator, settings, [&] {
      nccl.allreduce_sum(buffer.data(), count);
      nccl.wait(nccl.timeout_seconds());
    });
    results.push_back(result_of(bytes, seconds, communicator.size()));
  }
  return results;
}

std::string allreduce_table(int ranks, const std::vector<std::string>& names,
                            const std::vector<std::vector<AllreduceResult>>& columns) {
  std::string table;
  char line[512];
  std::snprintf(line, sizeof(line),
                "# all-reduce, float32 sum, %d ranks; busbw = algbw x 2(n-1)/n = algbw x %.3f\n", ranks,
                bus_bandwidth_factor(ranks));
  table += line;
  std::snprintf(line, sizeof(line), "%12s %12s", "size (B)", "count");
  table += line;
  for (const auto& name : names) {
    std::snprintf(line, sizeof(line), " | %-34s", name.c_str());
    table += line;
  }
  table += "\n";
  std::snprintf(line, sizeof(line), "%12s %12s", "", "");
  table += line;
  for (std::size_t column = 0; column < names.size(); ++column) {
    std::snprintf(line, sizeof(line), " | %10s %11s %11s", "time (us)", "algbw GB/s", "busbw GB/s");
    table += line;
  }
  table += "\n";
  const std::size_t rows = columns.empty() ? 0 : columns.front().size();
  for (std::size_t row = 0; row < rows; ++row) {
    std::snprintf(line, sizeof(line), "%12zu %12zu", columns.front()[row].bytes,
                  columns.front()[row].bytes / 4);
    table += line;
    for (const auto& column : columns) {
      const auto& result = column[row];
      std::snprintf(line, sizeof(line), " | %10.1f %11.3f %11.3f", result.seconds * 1e6,
                    result.algorithm_bandwidth / 1e9, result.bus_bandwidth / 1e9);
      table += line;
    }
    table += "\n";
  }
  return table;
}

}  // namespace phalanx::benchmark
