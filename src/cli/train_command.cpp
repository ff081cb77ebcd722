// `phalanx train CONFIG [--set k=v ...] [--run-dir DIR] [--resume auto|PATH]`: one
// data-parallel training job over all ranks of the mpirun.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>

#include "batch_split_setup.hpp"
#include "commands.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/train/batch_size_search.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/run_directory.hpp"
#include "phalanx/train/stop_request.hpp"
#include "phalanx/train/trainer.hpp"
#include "rank_setup.hpp"

namespace phalanx::cli {
namespace {

struct TrainArguments {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string run_directory;
  std::string resume;
};

// train.batch_size: auto. A resumed run keeps the batch of its checkpoint (the data order depends
// on it); a new one measures: every rank probes its own GPU, the job takes the smallest answer.
// `resume`: the checkpoint's header, null for a new run.
int resolve_auto_batch_size(config::Config& config, const train::CheckpointHeader* resume,
                            backend::Backend& backend, const comm::Communicator& world) {
  train::BatchSizeChoice choice;
  const int status = agree(world, [&] {
    if (resume) {
      choice.batch_size = config::parse(resume->config_text, resume->path + ":/config").train.batch_size;
      return;
    }
    choice = train::find_batch_size(config, backend, world.size());
  });
  if (status) return status;
  const auto answers = world.allgather(static_cast<std::uint64_t>(choice.batch_size));
  config.train.batch_size = static_cast<int>(*std::min_element(answers.begin(), answers.end()));
  config.train.batch_size_auto = false;
  if (world.rank() == 0) {
    if (resume)
      std::printf("train.batch_size: auto -> %d per rank, as in %s\n", config.train.batch_size,
                  resume->path.c_str());
    else
      std::printf(
          "train.batch_size: auto -> %d per rank (rank 0: %d probes, %.1f of %.1f GiB in use at %d)\n",
          config.train.batch_size, choice.probes, static_cast<double>(choice.used_bytes) / (1 << 30),
          static_cast<double>(choice.total_bytes) / (1 << 30), choice.batch_size);
    std::fflush(stdout);
  }
  return 0;
}

int train(const TrainArguments& arguments, int* argc, char*** argv) {
  // From here SIGTERM/SIGUSR1 no longer kill the rank: training stops after a step with a checkpoint
  // (a signal during start-up stops it after the first step).
  const train::StopRequest stop_request;
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();

  config::Config config;
  std::string config_text;
  int status = agree(world, [&] {
    config = config::load(arguments.config_path, arguments.overrides);
    config_text = config::to_yaml(config);
  });
  if (status) return status;

  // Every rank must train the same thing: compare resolved configs with rank 0's, collectively;
  // a rank that differs names the first line where it does.
  status = agree(world, [&] {
    const auto hashes = world.allgather(config::hash(config));
    if (std::all_of(hashes.begin(), hashes.end(), [&](std::uint64_t value) { return value == hashes[0]; }))
      return;
    std::string reference = config_text;
    world.broadcast_string(reference, 0);
    if (hashes[world.rank()] != hashes[0])
      throw_input_error(
          arguments.config_path + ": the resolved config of rank " + std::to_string(world.rank()) +
          " differs from rank 0's: " + config::first_difference(config_text, reference, "on rank 0") +
          " (every rank must get the same config file and --set options)");
  });
  if (status) return status;

  std::string run_directory =
      arguments.run_directory.empty() ? train::default_run_directory(config.name) : arguments.run_directory;
  world.broadcast_string(run_directory, 0);

  // Rank 0 (the checkpoint writer) decides which checkpoint --resume auto means, so every rank
  // loads the same one (or fails to find it, which is an error, not a silent fresh start). Every
  // rank opens the checkpoint once (rank 0 keeps open the one it found): its seal is checked and its
  // header read here, and the batch size, the batch split and the trainer take what was read, the
  // trainer its weights from the same open file.
  std::string resume = arguments.resume;
  std::shared_ptr<const train::OpenCheckpoint> checkpoint;
  if (resume == "auto") {
    status = agree(world, [&] {
      if (world.rank() == 0) checkpoint = train::RunDirectory(run_directory, false).open_latest_checkpoint();
      resume = checkpoint ? checkpoint->header().path : "";
    });
    if (status) return status;
    world.broadcast_string(resume, 0);
  }
  // Entered by every rank, whether or not it holds the file open already: agree is collective.
  if (!resume.empty()) {
    status = agree(world, [&] {
      if (!checkpoint) checkpoint = std::make_shared<const train::OpenCheckpoint>(resume);
    });
    if (status) return status;
  }
  const train::CheckpointHeader* resume_header = checkpoint ? &checkpoint->header() : nullptr;

  // Declared in this order so that they are destroyed trainer first, backend last.
  RankResources resources;
  std::unique_ptr<comm::NcclCommunicator> nccl;
  std::unique_ptr<train::Trainer> trainer;
  status = agree(world, [&] { resources = make_rank_resources(config.device, config.threads, world); });
  if (status) return status;
  if (config.train.batch_size_auto) {
    status = resolve_auto_batch_size(config, resume_header, *resources.backend, world);
    if (status) return status;
    config_text = config::to_yaml(config);
  }
  // Local batches per rank (DESIGN §3): measured, given, or stored in the checkpoint.
  train::BatchSplit batch_split;
  status = resolve_batch_split(config, resume_header, *resources.backend, world, batch_split);
  if (status) return status;
  // When every rank drives a GPU, gradients are summed by NCCL on the devices. A synchronous job
  // of GPU and CPU ranks with equal batches would run every step at the CPU ranks' pace: refused
  // unless the config sizes each rank's batch to its speed (then gradients go over MPI).
  status = agree(world, [&] {
    const auto gpu_ranks =
        world.allgather(static_cast<std::uint64_t>(resources.backend->device_kind() == DeviceKind::Cuda));
    const auto gpu_count = std::count(gpu_ranks.begin(), gpu_ranks.end(), std::uint64_t{1});
    PHALANX_REQUIRE_INPUT(
        gpu_count == 0 || gpu_count == world.size() || asks_for_split(config), gpu_count, " of the ",
        world.size(), " ranks drive a GPU and the others train on the CPU (device: ", config.device,
        "): with equal local batches the slowest rank paces every step. Set "
        "distributed.batch_split: throughput (or distributed.local_batches) to size each rank's batch to "
        "its speed, start one rank per GPU, or set device: cpu; phalanx sweep puts GPU and CPU ranks to "
        "work side by side");
    if (std::all_of(gpu_ranks.begin(), gpu_ranks.end(), [](std::uint64_t gpu) { return gpu == 1; }))
      nccl =
          std::make_unique<comm::NcclCommunicator>(world, *resources.backend, config.distributed.timeout_s);
  });
  if (status) return status;
  status = agree(world, [&] {
    train::TrainerOptions options{config, config_text, run_directory, resume, resources.threads, nccl.get()};
    options.batch_split = batch_split;
    options.checkpoint = checkpoint;
    trainer = std::make_unique<train::Trainer>(std::move(options), world, *resources.backend);
  });
  if (status) return status;
  // Loaded: the file closes (the trainer has let go of it too).
  resume_header = nullptr;
  checkpoint.reset();
  status = agree(world, [&] {
    const auto steps = world.allgather(static_cast<std::uint64_t>(trainer->position().global_step));
    for (int rank = 1; rank < world.size(); ++rank)
      PHALANX_REQUIRE_INPUT(steps[rank] == steps[0], resume, ": rank ", rank, " resumes at step ",
                            steps[rank], " but rank 0 at step ", steps[0],
                            " (is the run directory shared by all ranks?)");
  });
  if (status) return status;

  // Created now that the run passed every check, so a refused run leaves no folder behind.
  status = agree(world, [&] {
    if (world.rank() == 0)
      train::prepare_run_directory(run_directory, !arguments.resume.empty(),
                                   resume.empty() ? -1 : trainer->position().global_step);
  });
  if (status) return status;

  status = run_or_abort(world, [&] { trainer->run(); });
  // After a stop only rank 0 reports it: mpirun tears a job down when a rank exits non-zero, and
  // waits out its kill timeouts for ranks that are still finalising.
  if (status == 0 && trainer->stopped_by_signal() && world.rank() == 0) return train::preempted_exit_status;
  return status;
}

}  // namespace

std::function<int()> add_train_command(CLI::App& app, int* argc, char*** argv) {
  auto arguments = std::make_shared<TrainArguments>();
  auto* command = app.add_subcommand("train", "Train a model data-parallel over the MPI ranks");
  command->add_option("config", arguments->config_path, "Training config (YAML)")->required();
  command
      ->add_option("--set", arguments->overrides, "Override a config key: --set train.epochs=3 (repeatable)")
      ->take_all();
  command->add_option("--run-dir", arguments->run_directory,
                      "Run directory (default runs/<name>-<timestamp>)");
  command->add_option("--resume", arguments->resume,
                      "Resume: 'auto' (newest checkpoint in the run directory, if any) or a checkpoint path");
  return [arguments, argc, argv, command] {
    if (!*command) return -1;
    return train(*arguments, argc, argv);
  };
}

}  // namespace phalanx::cli
