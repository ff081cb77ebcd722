// One worker group as the coordinator's state sees it: what its hello said, how fast it has been,
// the job it holds, and its part in merged jobs (no idle tail, docs/SWEEPS.md).
#pragma once

#include <cstdint>
#include <vector>

#include "messages.hpp"
#include "phalanx/sweep/asha.hpp"

namespace phalanx::sweep {

struct WorkerGroup {
  bool known = false;  // said hello
  Hello hello;

  // Budget units per second over the jobs it trained on its own, counting only what each trained:
  // one job's speed varies with its trial's batch size and model, the mean tracks the hardware.
  double speed = 0;
  double trained_units = 0, trained_seconds = 0;
  double busy_seconds = 0;

  bool busy = false;
  std::int64_t job_id = 0;
  Job job;
  double cost = 0;  // budget units of the current job
  double started = 0;

  // A job on merged groups is held by the group that reports it.
  std::vector<int> merged;      // the groups of its current job when merged, this one first
  int member_of = -1;           // busy in the merged job that this group reports
  int joining = -1;             // free, waiting to join the job of this group
  std::vector<int> joiners;     // groups waiting to join this group's job
  bool handover_asked = false;  // the current job was asked to stop for them

  // A group of a job that joined the sweep (sweep --join), reached over that job's connection; -1
  // for a group of this mpirun. Groups of different jobs share no MPI, so they never merge.
  int joined_job = -1;
  bool leaving = false;  // its job is leaving (a stop signal reached it): no new work
  bool left = false;     // gone with its job; a job it held was requeued

  int rank_count() const { return known ? static_cast<int>(hello.ranks.size()) : 1; }
  bool free() const { return known && !busy && joining < 0 && !leaving && !left; }
};

}  // namespace phalanx::sweep
