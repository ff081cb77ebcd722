// Clock offset estimates for the trace: the round-trip estimate TraceRecorder uses against the
// barrier + allgather median it replaced (kept here as the reference), alternating in one run.
// All ranks share one machine, so every true offset is zero: the printed |offset| is the error.
// Also prints what each estimate costs (rank 0's wall time), since it runs once per traced run.
// WORK_MS > 0 has every rank compute that long (unequally: rank r for (1 + r/4) x WORK_MS)
// before each estimate, as a run's ranks arrive from training at different moments.
//   mpirun -np 2 ./phalanx_bench_clock_offset [REPETITIONS] [WORK_MS]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "phalanx/core/median.hpp"
#include "phalanx/core/timer.hpp"
#include "reporting/trace_recorder.hpp"

namespace {

// The estimate before the round trips: after a barrier every rank reads its clock, and the
// median over 7 rounds of the differences to rank 0's reading is the offset.
double barrier_median_offset(const phalanx::comm::Communicator& world) {
  std::vector<double> offsets;
  for (int round = 0; round < 7; ++round) {
    world.barrier();
    const double now = phalanx::steady_seconds();
    offsets.push_back(now - world.allgather(now)[0]);
  }
  return phalanx::median(offsets);
}

// Busy arithmetic for `seconds` on the steady clock (what a training step does to the scheduler).
double compute_for(double seconds) {
  const double until = phalanx::steady_seconds() + seconds;
  double sum = 0;
  while (phalanx::steady_seconds() < until)
    for (int index = 1; index < 1000; ++index) sum += 1.0 / index;
  return sum;
}

int count_over(const std::vector<double>& values, double limit) {
  return static_cast<int>(
      std::count_if(values.begin(), values.end(), [&](double value) { return value > limit; }));
}

double percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  phalanx::comm::MpiSession session(&argc, &argv);
  const auto world = phalanx::comm::Communicator::world();
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 51;
  const double work_seconds = (argc > 2 ? std::atof(argv[2]) : 0.0) * 1e-3 * (1.0 + world.rank() / 4.0);
  double checksum = 0;
  const int last = world.size() - 1;  // the rank whose offset is reported
  std::vector<double> old_error, new_error, new_bound, old_cost, new_cost;
  for (int repetition = 0; repetition < repetitions; ++repetition) {
    checksum += compute_for(work_seconds);
    phalanx::Stopwatch clock;
    const double old_offset = barrier_median_offset(world);
    old_cost.push_back(clock.seconds());
    old_error.push_back(std::fabs(world.allgather(old_offset)[static_cast<std::size_t>(last)]));
    checksum += compute_for(work_seconds);
    clock.restart();
    const auto offsets = phalanx::train::TraceRecorder::estimate_clock_offsets(world);
    new_cost.push_back(clock.seconds());
    new_error.push_back(std::fabs(offsets[static_cast<std::size_t>(last)].offset));
    new_bound.push_back(offsets[static_cast<std::size_t>(last)].error_bound);
  }
  if (world.rank() == 0) {
    // With work, rank 0's cost includes waiting for the ranks that work longer.
    std::printf(
        "%d ranks, %d repetitions, %.0f ms of work on rank 0 before each, rank %d against rank 0 "
        "(microseconds; checksum %.3g)\n",
        world.size(), repetitions, work_seconds * 1e3, last, checksum);
    std::printf("%-26s %10s %10s %10s %8s %12s\n", "estimate", "median", "p90", "max", ">1 ms",
                "cost median");
    std::printf("%-26s %10.1f %10.1f %10.1f %8d %12.1f\n", "barrier + allgather |off|",
                phalanx::median(old_error) * 1e6, percentile(old_error, 0.9) * 1e6,
                percentile(old_error, 1.0) * 1e6, count_over(old_error, 1e-3),
                phalanx::median(old_cost) * 1e6);
    std::printf("%-26s %10.1f %10.1f %10.1f %8d %12.1f\n", "round trip |off|",
                phalanx::median(new_error) * 1e6, percentile(new_error, 0.9) * 1e6,
                percentile(new_error, 1.0) * 1e6, count_over(new_error, 1e-3),
                phalanx::median(new_cost) * 1e6);
    std::printf("%-26s %10.1f %10.1f %10.1f\n", "round trip error bound", phalanx::median(new_bound) * 1e6,
                percentile(new_bound, 0.9) * 1e6, percentile(new_bound, 1.0) * 1e6);
  }
  return 0;
}
