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
#include <optional>

#include "phalanx/core/error.hpp"
#include "phalanx/core/file_lock.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/comm/agreement.hpp"
#include "phalanx/sweep/pbt.hpp"
#include "phalanx/sweep/protocol.hpp"
#include "phalanx/train/job.hpp"
#include "phalanx/train/nonfinite_stop.hpp"
#include "phalanx/train/stop_request.hpp"

namespace phalanx::sweep {
namespace {

// Budget -> optimizer steps of the trial's global batch (the same on every group it runs on): the
// run's train.max_steps, while train.epochs spans the sweep's maximum budget.
void set_budget(const config::SweepConfig& sweep, double budget, std::int64_t global_batch,
                std::int64_t training_samples, config::Config& config) {
  const std::int64_t steps_per_epoch = training_samples / global_batch;  // as data::ShardPlan cuts an epoch
  if (sweep.budget_unit == config::BudgetUnit::Epochs) {
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

// One group at a time trains a trial: the job's rank 0 holds an flock on SWEEP_DIR/trials/NNNNN.lock
// from before the job reads the trial's checkpoints until after its last one is written. A job
// handed a trial that another is still stopping (a joined job that lost its coordinator, or the
// last step of a killed sweep's rank that outlives its mpirun for a moment) waits for it.
FileLock lease_trial(const std::string& path, double wait_seconds) {
  auto lease = FileLock::acquire(path, wait_seconds);
  if (!lease)
    throw_run_failure(path + ": another job still trains this trial after " +
                      std::to_string(static_cast<int>(wait_seconds)) + " s (distributed.timeout_s)");
  return std::move(*lease);
}

// A trial's job, set up as `phalanx train --resume auto` sets one up (train::Job) on the group's
// device: from the trial's newest checkpoint when it has one, its global batch cut over the
// group's ranks when another size of group wrote it.
nlohmann::json run_job(const WorkerOptions& options, const nlohmann::json& job, const comm::Communicator& group,
                       comm::NcclCommunicator* nccl) {
  const int trial = job.at("trial").get<int>();
  const double budget = job.at("budget").get<double>();
  train::JobRequest request;
  request.config = config::trial_config(*options.sweep, job.at("assignments").get<std::vector<std::string>>());
  request.config_source = options.sweep->source;
  request.run_directory = trial_directory(options.sweep_directory, trial);
  request.resume = train::ResumeFrom::Latest;
  request.quiet = true;
  request.set_length = [&sweep = *options.sweep, budget](config::Config& config, std::int64_t global_batch,
                                                         std::int64_t training_samples) {
    set_budget(sweep, budget, global_batch, training_samples, config);
  };
  // PBT: an exploit continues another trial's checkpoint with explored values of these keys.
  if (options.sweep->scheduler == config::Scheduler::Pbt)
    for (const auto& assignment : job.at("assignments").get<std::vector<std::string>>())
      if (pbt_mutable(assignment.substr(0, assignment.find('='))))
        request.checkpoint_config_overrides.push_back(assignment);
  if (options.sweep->join_running || options.joined)
    request.handover_check = handover_check(options, group, job.at("job").get<std::int64_t>());
  const Stopwatch clock;
  std::optional<FileLock> lease;
  if (group.rank() == 0)
    lease.emplace(lease_trial(request.run_directory + ".lock", std::max(60.0, options.sweep->base.distributed.timeout_s)));
  train::Job training(std::move(request), group, train::LentDevice{options.backend, options.threads, nccl});
  const std::int64_t start_step = training.start_step();
  const std::int64_t target_step = training.last_step();
  const std::string& resume = training.resumed_from();
  const auto summary = training.run();
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
  // JSON has no NaN or infinity (the report would carry null, which the coordinator cannot rank):
  // a trial whose metric is not a number failed, as a diverged one does. Every rank holds the same
  // all-reduced metric, so the whole group reports it alike.
  const nlohmann::json& value = summary.at(metric);
  if (!value.is_number() || !std::isfinite(value.get<double>()))
    return {{"type", "failed"},
            {"job", job.at("job")},
            {"worker", options.worker},
            {"message", "the trial's " + metric + " is " +
                            (value.is_number() ? std::to_string(value.get<double>()) : value.dump()) +
                            " (not a finite number): a search cannot rank it"}};
  return {{"type", "result"},
          {"job", job.at("job")},
          {"worker", options.worker},
          {"metric", value.get<double>()},
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
      } catch (const comm::AgreedFailure& error) {
        report = {
            {"type", "failed"}, {"job", job.at("job")}, {"worker", options.worker}, {"message", error.what()}};
      }
      if (merged.rank() == 0) channel.send_string(report.dump(), 0, tag_to_coordinator);
      continue;
    }
    nlohmann::json report;
    try {
      report = run_job(options, job, group, options.nccl);
    } catch (const comm::AgreedFailure& error) {
      // A trial the group could not set up (its config or data refused): every rank of the group
      // agreed on it, none is inside a collective, so the group reports the failure and goes on.
      report = {
          {"type", "failed"}, {"job", job.at("job")}, {"worker", options.worker}, {"message", error.what()}};
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
