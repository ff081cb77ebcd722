// Per-step cost of the cluster-job safety net (train::RunControl): the agreement before the update
// (one all-reduce of four doubles per step: stop signal, its time, handover, finite gradients) and
// the watchdog's stage marks (three per step, atomic stores). Prints medians over blocks of steps,
// to set against a training step's time.
//   mpirun -np 2 ./phalanx_bench_run_control
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/watchdog.hpp"
#include "phalanx/core/median.hpp"
#include "phalanx/core/timer.hpp"

using phalanx::median;

int main(int argc, char** argv) {
  phalanx::comm::MpiSession session(&argc, &argv);
  const auto world = phalanx::comm::Communicator::world();
  const int blocks = 21, steps = 2000;
  const std::string folder =
      (std::filesystem::temp_directory_path() / ("phalanx-bench-heartbeat-" + std::to_string(::getpid())))
          .string();
  std::vector<double> agreement, marks;
  {
    phalanx::comm::Watchdog watchdog(folder, world.rank(), world.size(), world.host_name(), 300.0,
                                     [](const phalanx::comm::StallReport&) {});
    for (int block = 0; block < blocks; ++block) {
      world.barrier();
      phalanx::Stopwatch clock;
      for (int step = 0; step < steps; ++step) {
        double values[4] = {0.0, -1.0, 0.0, 0.0};
        world.allreduce_max(values, 4);
      }
      agreement.push_back(clock.seconds() / steps);
      clock.restart();
      for (int step = 0; step < steps; ++step) {
        watchdog.enter("forward and backward", step, phalanx::comm::StageKind::Local);
        watchdog.enter("gradient all-reduce", step, phalanx::comm::StageKind::Collective);
        watchdog.enter("optimizer", step, phalanx::comm::StageKind::Local);
      }
      marks.push_back(clock.seconds() / steps);
    }
  }
  std::filesystem::remove_all(folder);
  if (world.rank() == 0)
    std::printf(
        "ranks %d: stop agreement %.2f us per step, watchdog stage marks %.3f us per step "
        "(medians of %d blocks of %d steps)\n",
        world.size(), 1e6 * median(agreement), 1e6 * median(marks), blocks, steps);
  return 0;
}
