// The worker loop (see worker.hpp). A job names a trial, the rung to reach and its budget; the
// worker turns the budget into train.max_steps of a run whose train.epochs spans the sweep's
// maximum budget, so every rung is a prefix of the same trajectory (the schedule included) and
// a promoted trial continues from its checkpoint exactly as an uninterrupted run would, on a
// group of any size.
#include "phalanx/sweep/worker.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/sweep/protocol.hpp"
#include "phalanx/train/batch_split.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/run_directory.hpp"
#include "phalanx/train/stop_request.hpp"
#include "phalanx/train/trainer.hpp"

namespace phalanx::sweep {
namespace {

// Budget -> optimizer steps of the trial's global batch (the same on every group it runs on).
void set_budget(const config::SweepConfig& sweep, double budget, std::int64_t global_batch,
                config::Config& config) {
  const auto info = data::read_source_info(config.data);
  const auto* split = info.find_split(config.data.train_split);
  PHALANX_REQUIRE_INPUT(split != nullptr, config.data.path, ": has no split '", config.data.train_split, "'");
  PHALANX_REQUIRE_INPUT(split->count >= global_batch, config.data.path, ": split '", config.data.train_split,
                        "' has ", split->count, " samples, fewer than one global batch of ", global_batch);
  const std::int64_t steps_per_epoch = split->count / global_batch;  // as data::ShardPlan cuts an epoch
  if (sweep.budget_unit == "epochs") {
    config.train.max_steps =
        std::max<std::int64_t>(1, std::llround(budget * static_cast<double>(steps_per_epoch)));
    config.train.epochs = std::max(1, static_cast<int>(std::ceil(sweep.max_budget - 1e-9)));
  } else {
    config.train.max_steps = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(budget / static_cast<double>(global_batch))));
    const auto max_steps =
        static_cast<std::int64_t>(std::ceil(sweep.max_budget / static_cast<double>(global_batch)));
    config.train.epochs =
        static_cast<int>(std::max<std::int64_t>(1, (max_steps + steps_per_epoch - 1) / steps_per_epoch));
  }
}

// A trial's global batch is fixed where it starts: train.batch_size x the ranks of that group.
// A promotion may resume it on a group of another size; the checkpoint's global batch is then cut
// over the group's ranks (as `phalanx train --resume` does, docs/CHECKPOINTS.md "Elastic resume"),
// evenly, so every update takes the same samples and the rungs stay prefixes of one trajectory.
// `resume`: the header of the checkpoint the trial resumes from, null for a new trial. Returns the
// trial's global batch and fills `split` when the group's ranks do not each train train.batch_size.
std::int64_t trial_batch_split(const config::Config& config, const train::CheckpointHeader* resume,
                               const comm::Communicator& group, const backend::Backend& backend,
                               train::BatchSplit& split) {
  split = train::BatchSplit{};
  if (!resume) return static_cast<std::int64_t>(config.train.batch_size) * group.size();
  const train::CheckpointHeader& header = *resume;
  const std::int64_t global_batch = train::stored_global_batch(header);
  if (header.world_size == group.size()) {
    const auto stored = train::stored_split(header, config, group.size());
    if (std::all_of(stored.begin(), stored.end(),
                    [&](int batch) { return batch == config.train.batch_size; }))
      return global_batch;
    split.local_batches = stored;
  } else {
    split.local_batches = train::elastic_split(header, config, group.size(), {});
    split.checkpoint_local_batches = header.local_batches;
    if (split.checkpoint_local_batches.empty())
      split.checkpoint_local_batches.assign(static_cast<std::size_t>(header.world_size),
                                            static_cast<int>(global_batch / header.world_size));
  }
  split.method = config.distributed.local_batches.empty() ? "equal" : "explicit";
  split.stored_in = header.path;
  const auto kinds = group.allgather(static_cast<std::uint64_t>(backend.device_kind() == DeviceKind::Cuda));
  for (const auto kind : kinds) split.devices.push_back(kind ? "cuda" : "cpu");
  return global_batch;
}

// The handover check of a job (TrainerOptions::handover_check): the group leader looks for the
// coordinator's "handover" message in each step, without blocking; the trainer's per-step
// agreement before the update tells the group's other ranks. Only the coordinator sends to a busy
// group, and only this for its current job.
std::function<bool()> handover_check(const WorkerOptions& options, const comm::Communicator& group,
                                     std::int64_t job_id) {
  if (group.rank() != 0) return {};
  return [&channel = *options.channel, job_id, worker = options.worker, asked = false]() mutable {
    comm::Message message;
    while (!asked && channel.try_receive_string(tag_to_worker, message)) {
      const auto request = nlohmann::json::parse(message.text);
      PHALANX_CHECK(request.at("type") == "handover", "worker ", worker, " received '",
                    request.at("type").get<std::string>(), "' from the coordinator while training job ",
                    job_id);
      asked = request.at("job").get<std::int64_t>() == job_id;
    }
    return asked;
  };
}

nlohmann::json run_job(const WorkerOptions& options, const nlohmann::json& job,
                       const comm::Communicator& group, comm::NcclCommunicator* nccl) {
  const int trial = job.at("trial").get<int>();
  auto config = config::trial_config(*options.sweep, job.at("assignments").get<std::vector<std::string>>());
  const std::string run_directory = trial_directory(options.sweep_directory, trial);
  // The group leader picks the checkpoint so that every rank of the group loads the same one.
  // Opened once on each rank (one seal check): the split and the trainer take its header, the
  // trainer its weights.
  std::shared_ptr<const train::OpenCheckpoint> checkpoint =
      group.rank() == 0 ? train::RunDirectory(run_directory, false).open_latest_checkpoint() : nullptr;
  std::string resume = checkpoint ? checkpoint->header().path : "";
  group.broadcast_string(resume, 0);
  if (!resume.empty() && !checkpoint) checkpoint = std::make_shared<const train::OpenCheckpoint>(resume);
  train::BatchSplit split;
  const std::int64_t global_batch =
      trial_batch_split(config, checkpoint ? &checkpoint->header() : nullptr, group, *options.backend, split);
  set_budget(*options.sweep, job.at("budget").get<double>(), global_batch, config);

  const std::int64_t target_step = *config.train.max_steps;
  train::TrainerOptions trainer_options{config, config::to_yaml(config), run_directory,
                                        resume, options.threads,         nccl};
  trainer_options.quiet = true;
  trainer_options.batch_split = std::move(split);
  trainer_options.checkpoint = std::move(checkpoint);
  if (options.sweep->join_running)
    trainer_options.handover_check = handover_check(options, group, job.at("job").get<std::int64_t>());
  Stopwatch clock;
  train::Trainer trainer(std::move(trainer_options), group, *options.backend);
  const std::int64_t start_step = trainer.position().global_step;
  // A job a kill cut short may have logged steps past the checkpoint this one resumes from (its
  // rank 0 appends to metrics.jsonl every step): they are trained again now, so their events go,
  // as `phalanx train --resume` drops them, and the trial's metrics hold every step once.
  if (group.rank() == 0 && !resume.empty()) train::prepare_run_directory(run_directory, true, start_step);
  const auto summary = trainer.run();
  // The coordinator asked for a handover: the trial continues on this group merged with idle
  // ones, from the checkpoint just written.
  if (summary.value("stopped_for_handover", false))
    return {{"type", "handed_over"},           {"job", job.at("job")},
            {"worker", options.worker},        {"start_step", start_step},
            {"end_step", summary.at("steps")}, {"target_step", target_step},
            {"resumed_from", resume},          {"train_seconds", clock.seconds()}};
  // A stop signal ended the trial early with a checkpoint: the coordinator records the job as
  // interrupted and --resume continues it from that checkpoint.
  if (summary.value("stopped_by_signal", false))
    return {{"type", "interrupted"},    {"job", job.at("job")},
            {"worker", options.worker}, {"signal", train::StopRequest::signal_received()},
            {"start_step", start_step}, {"end_step", summary.at("steps")},
            {"resumed_from", resume},   {"train_seconds", clock.seconds()}};
  const std::string& metric = options.sweep->metric;
  PHALANX_CHECK(summary.contains(metric), "the trial's summary has no '", metric, "'");
  return {{"type", "result"},
          {"job", job.at("job")},
          {"worker", options.worker},
          {"metric", summary.at(metric).get<double>()},
          {"start_step", start_step},
          {"end_step", summary.at("steps")},
          {"target_step", target_step},
          {"resumed_from", resume},
          {"train_seconds", clock.seconds()},
          {"images_per_sec", summary.value("images_per_sec", 0.0)},
          {"history", summary.value("history", nlohmann::json::array())}};
}

// Merged GPU groups sum their gradients over NCCL, as each group does alone: a communicator over
// the merged ranks, built for the job (its own groups' communicators cannot span the others) and
// destroyed at its end, when every group in it is free again. Its cost (an NCCL unique id broadcast
// over MPI, then the NCCL rendezvous) is part of the join's resume. The coordinator merges only
// groups of one kind; a mixed set would leave the CPU ranks outside the NCCL rendezvous, so the
// ranks agree on it first and refuse it together rather than hang.
std::unique_ptr<comm::NcclCommunicator> merged_gradient_communicator(const WorkerOptions& options,
                                                                     const comm::Communicator& merged,
                                                                     const nlohmann::json& job) {
  const auto over_nccl = merged.allgather(static_cast<std::uint64_t>(options.nccl != nullptr));
  const auto nccl_ranks = std::count(over_nccl.begin(), over_nccl.end(), std::uint64_t{1});
  if (nccl_ranks == 0) return nullptr;
  PHALANX_CHECK(nccl_ranks == static_cast<std::int64_t>(over_nccl.size()), "worker ", options.worker,
                ": job ", job.at("job").get<std::int64_t>(), " merges groups that train over NCCL with ",
                over_nccl.size() - static_cast<std::size_t>(nccl_ranks), " rank(s) that do not");
  return std::make_unique<comm::NcclCommunicator>(merged, *options.backend,
                                                  options.sweep->base.distributed.timeout_s);
}

}  // namespace

std::string trial_directory(const std::string& sweep_directory, int trial) {
  char name[32];
  std::snprintf(name, sizeof(name), "trials/%05d", trial);
  return sweep_directory + "/" + name;
}

void run_worker(const WorkerOptions& options) {
  const auto& group = *options.group;
  const auto& channel = *options.channel;
  const bool leader = group.rank() == 0;
  if (leader) {
    const nlohmann::json hello = {{"type", "hello"},
                                  {"worker", options.worker},
                                  {"ranks", options.ranks},
                                  {"gpu", options.backend->device_kind() == DeviceKind::Cuda},
                                  {"device", options.backend->name()},
                                  {"threads", options.threads},
                                  {"host", channel.host_name()}};
    channel.send_string(hello.dump(), 0, tag_to_coordinator);
  }
  for (;;) {
    std::string text;
    if (leader) {
      // A handover request that came after its job had ended (the job finished first, and the
      // coordinator has its result) is stale: the coordinator already gave up on it.
      do text = channel.receive_string(0, tag_to_worker).text;
      while (nlohmann::json::parse(text).at("type") == "handover");
    }
    group.broadcast_string(text, 0);
    const auto job = nlohmann::json::parse(text);
    if (job.at("type") == "stop") return;
    if (job.contains("ranks")) {
      // The trial continues on this group merged with others (no idle tail): the ranks of every
      // group in it form one communicator for the job, the reporting group's ranks first. Only
      // those ranks take part in forming it; the other groups train on undisturbed.
      const comm::Communicator merged =
          options.sweep_ranks->subgroup(job.at("ranks").get<std::vector<int>>(),
                                        static_cast<int>(job.at("job").get<std::int64_t>() % 32768));
      const auto merged_nccl = merged_gradient_communicator(options, merged, job);
      // A failure here ends the job: the other ranks may be inside a collective. A diverged trial
      // is the exception, as below: all of the merged ranks stopped at the same step.
      nlohmann::json report;
      try {
        report = run_job(options, job, merged, merged_nccl.get());
      } catch (const train::NonFiniteStop& error) {
        report = {
            {"type", "failed"}, {"job", job.at("job")}, {"worker", options.worker}, {"message", error.what()}};
      }
      if (merged.rank() == 0) channel.send_string(report.dump(), 0, tag_to_coordinator);
      continue;
    }
    nlohmann::json report;
    try {
      report = run_job(options, job, group, options.nccl);
    } catch (const train::NonFiniteStop& error) {
      // A diverged trial (train.nonfinite: stop): every rank of the group stopped at the same step,
      // none is inside a collective, so the group reports the failure and takes the next job.
      report = {
          {"type", "failed"}, {"job", job.at("job")}, {"worker", options.worker}, {"message", error.what()}};
    } catch (const Error& error) {
      // A lone rank can report a failed trial and go on; in a larger group the other ranks may be
      // inside a collective, so the failure ends the job (the caller aborts).
      if (group.size() > 1) throw;
      report = {
          {"type", "failed"}, {"job", job.at("job")}, {"worker", options.worker}, {"message", error.what()}};
    }
    if (leader) channel.send_string(report.dump(), 0, tag_to_coordinator);
  }
}

}  // namespace phalanx::sweep
