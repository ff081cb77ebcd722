// The phases of a job's set-up (job.hpp), in the order a failure in one would make the later ones
// meaningless: the config, the device, the checkpoint, the batch size and split, the gradient
// communicator, the training set-up (data, model, resume), the ranks' start, the run directory.
// Each is agreed over the ranks; a phase that only reads what every rank holds alike (the config,
// a checkpoint's header) decides the same on every rank without talking.
#include "phalanx/train/job.hpp"

#include <algorithm>
#include <cstdio>

#include "loop/trainer.hpp"
#include "phalanx/comm/agreement.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/train/run_directory.hpp"
#include "setup/batch_size_search.hpp"
#include "setup/batch_split.hpp"
#include "setup/training_setup.hpp"

namespace phalanx::train {

struct JobState {
  JobRequest request;
  RankResources resources;  // this job's own device (phalanx train), or none when lent
  LentDevice device;
  std::unique_ptr<comm::NcclCommunicator> nccl;  // this job's own, when every rank drives a GPU
  std::shared_ptr<const OpenCheckpoint> checkpoint;
  BatchSplit batch_split;
  std::string resumed_from;
  TrainingPosition start;
  Arithmetic arithmetic;
};

namespace {

// Every rank must train the same thing: the resolved configs' hashes are compared with rank 0's;
// a rank that differs names the first line where it does.
void agree_on_config(const JobRequest& request, const comm::Communicator& communicator) {
  comm::agree(
      communicator,
      [&] {
        const auto hashes = communicator.allgather(config::hash(request.config));
        if (std::all_of(hashes.begin(), hashes.end(),
                        [&](std::uint64_t value) { return value == hashes[0]; }))
          return;
        const std::string mine = config::to_yaml(request.config);
        std::string reference = mine;
        communicator.broadcast_string(reference, 0);
        if (hashes[static_cast<std::size_t>(communicator.rank())] != hashes[0])
          throw_input_error(
              request.config_source + ": the resolved config of rank " + std::to_string(communicator.rank()) +
              " differs from rank 0's: " + config::first_difference(mine, reference, "on rank 0") +
              " (every rank must get the same config file and --set options)");
      },
      request.config.distributed.timeout_s);
}

// --resume comes from each rank's own command line: ranks given different ones would take
// different paths through the set-up's collectives and wait in them for ever.
void agree_on_resume(const JobRequest& request, const comm::Communicator& communicator) {
  comm::agree(
      communicator,
      [&] {
        const std::string mine = request.resume == ResumeFrom::Nothing  ? std::string("(none)")
                                 : request.resume == ResumeFrom::Latest ? std::string("auto")
                                                                        : request.resume_path;
        std::string reference = mine;
        communicator.broadcast_string(reference, 0);
        PHALANX_REQUIRE_INPUT(mine == reference, "--resume: rank ", communicator.rank(), " was given '", mine,
                              "' but rank 0 '", reference, "' (every rank must get the same command line)");
      },
      request.config.distributed.timeout_s);
}

// Every rank opened the checkpoint by its name itself: a relative path in another working
// directory (or a node whose copy differs) would resume the ranks from different files. The seal's
// hash tells them apart before any rank loads a tensor.
void agree_on_checkpoint_contents(const OpenCheckpoint& checkpoint, const comm::Communicator& communicator,
                                  double timeout_seconds) {
  comm::agree(
      communicator,
      [&] {
        const auto hashes = communicator.allgather(checkpoint.header().contents_hash);
        const std::uint64_t mine = hashes[static_cast<std::size_t>(communicator.rank())];
        PHALANX_REQUIRE_INPUT(
            mine == hashes[0], checkpoint.header().path, ": rank ", communicator.rank(),
            " opened a checkpoint whose contents differ from the one rank 0 opened under that "
            "name (another working directory, or another copy of the file?); give every rank "
            "the same absolute path on a shared file system");
      },
      timeout_seconds);
}

// Rank 0 (the checkpoint writer) decides which checkpoint --resume auto means, so every rank loads
// the same one (or finds none: a fresh start). Every rank then opens it once: its seal is checked
// and its header read here, and the split and the training set-up take what was read.
std::shared_ptr<const OpenCheckpoint> open_checkpoint(const JobRequest& request,
                                                       const comm::Communicator& communicator) {
  std::shared_ptr<const OpenCheckpoint> checkpoint;
  std::string path = request.resume == ResumeFrom::Path ? request.resume_path : "";
  if (request.resume == ResumeFrom::Latest) {
    comm::agree(
        communicator,
        [&] {
          if (communicator.rank() == 0)
            checkpoint = RunDirectory(request.run_directory, false).open_latest_checkpoint();
          path = checkpoint ? checkpoint->header().path : "";
        },
        request.config.distributed.timeout_s);
    communicator.broadcast_string(path, 0);
  }
  if (path.empty()) return nullptr;
  comm::agree(
      communicator,
      [&] {
        if (!checkpoint) checkpoint = std::make_shared<const OpenCheckpoint>(path);
      },
      request.config.distributed.timeout_s);
  agree_on_checkpoint_contents(*checkpoint, communicator, request.config.distributed.timeout_s);
  return checkpoint;
}

// train.batch_size: auto. A resumed run keeps the batch of its checkpoint (the data order depends
// on it); a new one measures: every rank probes its own device, the job takes the smallest answer.
void resolve_batch_size(config::Config& config, const CheckpointHeader* resume, backend::Backend& backend,
                        const comm::Communicator& communicator) {
  BatchSizeChoice choice;
  comm::agree(
      communicator,
      [&] {
        if (resume)
          choice.batch_size = config::parse(resume->config_text, resume->path + ":/config").train.batch_size;
        else
          choice = find_batch_size(config, backend, communicator.size());
      },
      config.distributed.timeout_s);
  const auto answers = communicator.allgather(static_cast<std::uint64_t>(choice.batch_size));
  config.train.batch_size = static_cast<int>(*std::min_element(answers.begin(), answers.end()));
  config.train.batch_size_auto = false;
  if (communicator.rank() != 0) return;
  if (resume)
    std::printf("train.batch_size: auto -> %d per rank, as in %s\n", config.train.batch_size, resume->path.c_str());
  else
    std::printf("train.batch_size: auto -> %d per rank (rank 0: %d probes, %.1f of %.1f GiB in use at %d)\n",
                config.train.batch_size, choice.probes, static_cast<double>(choice.used_bytes) / (1 << 30),
                static_cast<double>(choice.total_bytes) / (1 << 30), choice.batch_size);
  std::fflush(stdout);
}

// Three steps, so that no rank waits in a collective another left with an error: each rank checks
// and measures on its own (agreed), the ranks gather devices and rates, then every rank decides
// the same split from the same numbers.
BatchSplit resolve_batch_split(const config::Config& config, const CheckpointHeader* resume,
                               backend::Backend& backend, const comm::Communicator& communicator) {
  SplitPlan plan;
  ThroughputProbe probe;
  comm::agree(
      communicator,
      [&] {
        plan = plan_batch_split(config, resume, communicator.size());
        if (plan.measure) probe = measure_throughput(config, backend, config.train.batch_size);
      },
      config.distributed.timeout_s);
  SplitMeasurements measured;
  for (const auto gpu : communicator.allgather(static_cast<std::uint64_t>(backend.device_kind() == DeviceKind::Cuda)))
    measured.gpu.push_back(gpu != 0);
  measured.rates = communicator.allgather(probe.images_per_second);
  measured.probe_seconds = probe.seconds;
  communicator.allreduce_max(&measured.probe_seconds, 1);
  BatchSplit split;
  comm::agree(
      communicator, [&] { split = decide_batch_split(config, resume, plan, measured); },
      config.distributed.timeout_s);
  return split;
}

// When every rank drives a GPU, gradients are summed by NCCL on the devices. A synchronous job of
// GPU and CPU ranks with equal batches would run every step at the CPU ranks' pace: refused unless
// the config sizes each rank's batch to its speed (then gradients go over MPI).
std::unique_ptr<comm::NcclCommunicator> make_gradient_communicator(const config::Config& config,
                                                                   backend::Backend& backend,
                                                                   const comm::Communicator& communicator) {
  std::unique_ptr<comm::NcclCommunicator> nccl;
  comm::agree(
      communicator,
      [&] {
        const auto gpu_ranks =
            communicator.allgather(static_cast<std::uint64_t>(backend.device_kind() == DeviceKind::Cuda));
        const auto gpu_count = std::count(gpu_ranks.begin(), gpu_ranks.end(), std::uint64_t{1});
        PHALANX_REQUIRE_INPUT(
            gpu_count == 0 || gpu_count == communicator.size() || asks_for_split(config), gpu_count,
            " of the ", communicator.size(),
            " ranks drive a GPU and the others train on the CPU (device: ", config.device,
            "): with equal local batches the slowest rank paces every step. Set "
            "distributed.batch_split: throughput (or distributed.local_batches) to size each rank's batch to "
            "its speed, start one rank per GPU, or set device: cpu; phalanx sweep puts GPU and CPU ranks to "
            "work side by side");
        if (gpu_count == communicator.size())
          nccl =
              std::make_unique<comm::NcclCommunicator>(communicator, backend, config.distributed.timeout_s);
      },
      config.distributed.timeout_s);
  return nccl;
}

void agree_on_start(const std::string& checkpoint, std::int64_t start_step, const comm::Communicator& communicator) {
  comm::agree(communicator, [&] {
    const auto steps = communicator.allgather(static_cast<std::uint64_t>(start_step));
    for (int rank = 1; rank < communicator.size(); ++rank)
      PHALANX_REQUIRE_INPUT(steps[static_cast<std::size_t>(rank)] == steps[0], checkpoint, ": rank ", rank,
                            " resumes at step ", steps[static_cast<std::size_t>(rank)], " but rank 0 at step ",
                            steps[0], " (is the run directory shared by all ranks?)");
  });
}

}  // namespace

Job::Job(JobRequest request, const comm::Communicator& communicator, std::optional<LentDevice> device)
    : state_(std::make_unique<JobState>()) {
  JobState& state = *state_;
  state.request = std::move(request);
  JobRequest& job = state.request;
  config::Config& config = job.config;

  agree_on_config(job, communicator);
  agree_on_resume(job, communicator);
  if (job.run_directory.empty())
    job.run_directory = communicator.rank() == 0 ? default_run_directory(config.name) : std::string();
  communicator.broadcast_string(job.run_directory, 0);
  if (device) {
    state.device = *device;
  } else {
    comm::agree(
        communicator,
        [&] { state.resources = make_rank_resources(config.device, config.threads, communicator); },
        config.distributed.timeout_s);
    state.device = LentDevice{state.resources.backend.get(), state.resources.threads, nullptr};
  }
  backend::Backend& backend = *state.device.backend;
  state.checkpoint = open_checkpoint(job, communicator);
  const CheckpointHeader* resume = state.checkpoint ? &state.checkpoint->header() : nullptr;
  if (config.train.batch_size_auto) resolve_batch_size(config, resume, backend, communicator);
  state.batch_split = resolve_batch_split(config, resume, backend, communicator);
  if (!device) {
    state.nccl = make_gradient_communicator(config, backend, communicator);
    state.device.nccl = state.nccl.get();
  }

  TrainingSetup setup;
  comm::agree(
      communicator,
      [&] {
        setup = set_up_training(
            TrainingRequest{config, job.run_directory, state.device.threads, state.device.nccl, job.quiet,
                            job.handover_check, state.batch_split, state.checkpoint.get(), job.set_length,
                            job.checkpoint_config_overrides, job.config_source},
            communicator, backend);
      },
      config.distributed.timeout_s);  // the set-up's collectives: a rank that fails before one ends the job
  // Loaded: the file closes.
  state.checkpoint.reset();
  state.resumed_from = setup.resumed_from;
  state.start = setup.position;
  state.arithmetic = setup.arithmetic;
  agree_on_start(state.resumed_from, state.start.global_step, communicator);
  // Created now that the run passed every check, so a refused run leaves no folder behind.
  comm::agree(
      communicator,
      [&] {
        if (communicator.rank() == 0)
          prepare_run_directory(job.run_directory, job.resume != ResumeFrom::Nothing,
                                state.resumed_from.empty() ? -1 : state.start.global_step, job.quiet);
      },
      config.distributed.timeout_s);
  trainer_ = std::make_unique<Trainer>(std::move(setup), communicator, backend);
}

Job::~Job() = default;

nlohmann::json Job::run() { return trainer_->run(); }

const std::string& Job::run_directory() const { return state_->request.run_directory; }
const std::string& Job::resumed_from() const { return state_->resumed_from; }
std::int64_t Job::start_step() const { return state_->start.global_step; }
std::int64_t Job::last_step() const { return trainer_->last_step(); }
config::Precision Job::precision() const { return state_->arithmetic.precision; }
config::Precision Job::activation_dtype() const { return state_->arithmetic.activation_dtype; }
const backend::Backend& Job::backend() const { return *state_->device.backend; }
bool Job::stopped_by_signal() const { return trainer_->stopped_by_signal(); }
bool Job::stopped_for_handover() const { return trainer_->stopped_for_handover(); }

}  // namespace phalanx::train
