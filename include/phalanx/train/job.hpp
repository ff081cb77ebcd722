// Job: how a training job is set up and run, the one path for `phalanx train`, `phalanx bench
// devices` and a sweep's trials (docs/TRAINER.md, "Setting up a job"). Set-up runs in phases on
// every rank, each agreed (comm::agree): a bad input on any rank ends every rank's set-up with the
// same message and exit status instead of a hang, and nothing is written before the last phase.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/rank_resources.hpp"

namespace phalanx::train {

// --resume: nothing, the newest checkpoint of the run directory (auto; a fresh start when it holds
// none), or a checkpoint's path.
enum class ResumeFrom { Nothing, Latest, Path };

struct JobRequest {
  config::Config config;      // as loaded on this rank
  std::string config_source;  // where it came from, named when the ranks' configs differ
  std::string run_directory;  // empty: runs/<name>-<timestamp>, rank 0's
  ResumeFrom resume = ResumeFrom::Nothing;
  std::string resume_path;  // with ResumeFrom::Path
  bool quiet = false;       // no progress lines on stdout (a sweep's trials: the leaderboard speaks)
  // Sets the run's length (train.max_steps, train.epochs) once the global batch and the training
  // split's samples are known: a sweep turns a trial's budget into steps of its global batch.
  std::function<void(config::Config& config, std::int64_t global_batch, std::int64_t training_samples)>
      set_length{};
  // Asked on every rank in every step but the last, before its update: true on any rank stops the
  // run after that step with a checkpoint, recorded as a handover (a sweep regrouping the trial
  // onto more ranks). Not asked when the training split is streamed (its order is cut per rank).
  std::function<bool()> handover_check{};
  // KEY=VALUE applied to the resumed checkpoint's config before the resume policy compares it with
  // this run's: the keys a sweep may change in a trial that continues a checkpoint (population-based
  // training's explored hyperparameters). Empty: every setting that fixes the trajectory must match.
  std::vector<std::string> checkpoint_config_overrides{};
};

// A device the job does not choose itself: a sweep worker group's, which serves one trial after
// another (its NCCL communicator, when the group sums gradients over NCCL, too).
struct LentDevice {
  backend::Backend* backend = nullptr;
  int threads = 1;
  comm::NcclCommunicator* nccl = nullptr;
};

class Trainer;
struct JobState;

class Job {
 public:
  // Collective over `communicator`. Throws comm::AgreedFailure on every rank when a phase fails on
  // any (its first failing rank prints it, or a sweep reports it); a bad input is exit status 2.
  Job(JobRequest request, const comm::Communicator& communicator, std::optional<LentDevice> device = {});
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Collective: trains to the end (or train.max_steps) and returns summary.json's content; after
  // a stop signal or a handover {"stopped_by_signal" | "stopped_for_handover": true, "steps": N}.
  nlohmann::json run();

  const std::string& run_directory() const;
  // The checkpoint the job resumed from (empty for a fresh start) and where training starts.
  const std::string& resumed_from() const;
  std::int64_t start_step() const;
  // The step the run ends at (train.max_steps, or the end of the epochs).
  std::int64_t last_step() const;
  // This rank's train.precision and activation_dtype, auto resolved.
  config::Precision precision() const;
  config::Precision activation_dtype() const;
  const backend::Backend& backend() const;
  bool stopped_by_signal() const;
  bool stopped_for_handover() const;

 private:
  std::unique_ptr<JobState> state_;
  std::unique_ptr<Trainer> trainer_;
};

}  // namespace phalanx::train
