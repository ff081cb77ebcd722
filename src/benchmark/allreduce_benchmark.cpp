// All-reduce bandwidth (see allreduce_benchmark.hpp). Each iteration starts after a barrier, so
// the ranks enter together, and counts as long as its slowest rank took: that is what a
// synchronous training step waits for.
#include "phalanx/benchmark/allreduce_benchmark.hpp"

#include <algorithm>
#include <cstdio>

#include "phalanx/core/error.hpp"
#include "phalanx/core/median.hpp"
#include "phalanx/core/tensor.hpp"
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
  for (std::size_t bytes = std::max<std::size_t>(minimum / 4 * 4, 4); bytes <= maximum; bytes *= 2) {
    sizes.push_back(bytes);
    if (bytes > maximum / 2) break;  // the next size is past `maximum`, or past size_t's end
  }
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

namespace {

// Busy until `seconds` have passed, without an MPI call: a rank computing its backward.
void spin(double seconds) {
  Stopwatch stopwatch;
  while (stopwatch.seconds() < seconds) {
  }
}

struct Remaining {
  double wait = 0;       // after the last test
  double from_call = 0;  // from the start of the last test: its time inside and the wait after it
  double in_call = 0;    // inside the last test; 0 where the all-reduce was done before it
};

// Launch, `calls` tests a `gap` apart, then the wait: the slowest rank's times, the median over
// `iterations` launches.
Remaining remaining_after(const comm::Communicator& communicator, std::vector<float>& buffer, int calls,
                          double gap, int iterations) {
  std::vector<double> waits, from_calls, in_calls;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    communicator.barrier();
    comm::Request request =
        communicator.allreduce_sum_async(buffer.data(), static_cast<std::int64_t>(buffer.size()));
    double in_call = 0;
    for (int call = 0; call < calls && request.active(); ++call) {
      spin(gap);
      Stopwatch inside;
      request.test();
      if (call == calls - 1) in_call = inside.seconds();
    }
    Stopwatch stopwatch;
    request.wait();
    const double wait = stopwatch.seconds();
    double times[3] = {wait, in_call + wait, in_call};
    communicator.allreduce_max(times, 3);
    waits.push_back(times[0]);
    from_calls.push_back(times[1]);
    in_calls.push_back(times[2]);
  }
  return {median(waits), median(from_calls), median(in_calls)};
}

}  // namespace

std::vector<ProgressStages> measure_progress_stages(const comm::Communicator& communicator,
                                                    const AllreduceSettings& settings, int iterations,
                                                    int max_calls) {
  PHALANX_CHECK(iterations >= 1 && max_calls >= 1, "progress stages need iterations and calls >= 1");
  std::vector<ProgressStages> results;
  for (const std::size_t bytes : settings.bytes) {
    std::vector<float> buffer(bytes / sizeof(float), 1.0f);
    for (int warmup = 0; warmup < settings.warmup; ++warmup)
      communicator.allreduce_sum_async(buffer.data(), static_cast<std::int64_t>(buffer.size())).wait();
    ProgressStages result;
    result.bytes = bytes;
    // Every figure below is the ranks' maximum, so every rank takes the same decisions.
    const double whole = remaining_after(communicator, buffer, 0, 0, iterations).wait;
    // A gap longer than the whole all-reduce: what a call starts is over before the next call.
    const double gap = 1.5 * whole + 20e-6;
    const double negligible = std::max(2e-6, 0.01 * whole);
    // Stage j: what the j-th call (the launch first) starts, and the time inside that call: the time
    // from the start of call j to the end, less the same from call j + 1.
    double previous = whole;
    double previous_in_call = 0;  // the launch's, which is not timed
    bool done = false;
    for (int calls = 1; calls <= max_calls && !done; ++calls) {
      // Fewer launches where each takes long (a large size over a slow link), down to one.
      const int launches = std::clamp(static_cast<int>(2.0 / (calls * gap + whole)), 1, iterations);
      const Remaining remaining = remaining_after(communicator, buffer, calls, gap, launches);
      const double from_call = std::min(previous, remaining.from_call);
      result.stages.push_back(previous - from_call);
      result.seconds_in_calls.push_back(previous_in_call);
      previous = from_call;
      previous_in_call = remaining.in_call;
      // Done within this call, or before it: the call's own work (a copy inside it) is its stage.
      done = remaining.wait < negligible;
      if (done && previous_in_call < negligible) previous = 0;
    }
    if (previous > 0) {  // the last call's stage, or what runs at the final wait after max_calls
      result.stages.push_back(previous);
      result.seconds_in_calls.push_back(previous_in_call);
    }
    results.push_back(result);
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
