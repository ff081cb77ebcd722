// SweepJob: how a sweep is set up over the ranks of an mpirun and run (docs/SWEEPS.md), the one
// path for `phalanx sweep` as train::Job is a training job's. Set-up phases are agreed over the
// ranks (comm::agree): the sweep directory against --resume and its lock (rank 0), each rank's
// device, the worker groups, their communicators and NCCL. Running it starts the coordinator on a
// thread of rank 0 and serves this rank's group its trials until the sweep ends.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/sweep_config.hpp"

namespace phalanx::sweep {

struct SweepRequest {
  config::SweepConfig sweep;  // as loaded on this rank
  std::string directory;      // empty: sweeps/<name>
  bool resume = false;        // continue the sweep in `directory` after a kill or a stop
  // Join the sweep running in `directory` from this job (--join): its groups take the running
  // sweep's trials; its coordinator stays the only writer of the results.
  bool join = false;
};

struct SweepParts;

class SweepJob {
 public:
  // Collective over `world`; throws comm::AgreedFailure on every rank when set-up fails on any.
  SweepJob(SweepRequest request, const comm::Communicator& world);
  ~SweepJob();
  SweepJob(const SweepJob&) = delete;
  SweepJob& operator=(const SweepJob&) = delete;

  // Collective: runs the sweep to its end. Returns true when a stop signal ended it early (its
  // trials stopped with a checkpoint; --resume continues it). A failing coordinator ends the job.
  // A joined job serves the sweep until it ends (false) or a stop signal makes it leave (true);
  // when the sweep's coordinator is gone, rank 0 throws once its groups stopped with a checkpoint.
  bool run();

  // Rank 0 of a sweep's own job, after run(): set when the sweep ran to its end and every trial
  // failed, none giving a result, with the first failure's message. The command then exits 2: a
  // failure every trial shares is the sweep's input (its base config, its data), not a search result.
  const std::optional<std::string>& every_trial_failed() const { return every_trial_failed_; }

 private:
  std::unique_ptr<SweepParts> parts_;
  std::optional<std::string> every_trial_failed_;
};

}  // namespace phalanx::sweep
