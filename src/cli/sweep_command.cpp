// `phalanx sweep SWEEP.yaml [--sweep-dir DIR] [--resume] [--set key=value ...]`: a hyperparameter
// sweep over all ranks of the mpirun (docs/SWEEPS.md). The world splits into worker groups
// (k GPU ranks over NCCL, CPU ranks in groups of the sizes workers.cpu_ranks_per_trial lists); world
// rank 0 also runs the coordinator thread.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "commands.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/config/sweep_config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/sweep/coordinator.hpp"
#include "phalanx/sweep/protocol.hpp"
#include "phalanx/sweep/results_store.hpp"
#include "phalanx/sweep/sweep_lock.hpp"
#include "phalanx/sweep/worker.hpp"
#include "phalanx/train/stop_request.hpp"
#include "phalanx/train/rank_resources.hpp"
#include "rank_setup.hpp"

namespace phalanx::cli {
namespace {

struct SweepArguments {
  std::string sweep_path;
  std::string sweep_directory;
  std::vector<std::string> overrides;
  bool resume = false;
};

// Rank 0 checks the sweep directory against --resume before anything starts.
void check_sweep_directory(const SweepArguments& arguments, const config::SweepConfig& sweep,
                           const std::string& directory) {
  const std::string database = directory + "/sweep.db";
  const bool exists = std::filesystem::exists(database);
  if (arguments.resume) {
    PHALANX_REQUIRE_INPUT(exists, "--resume: ", database, " does not exist (no sweep to resume in ",
                          directory, ")");
    const sweep::ResultsStore store(database);
    const auto stored = store.meta("definition");
    const std::string now = sweep::sweep_definition(sweep);
    PHALANX_REQUIRE_INPUT(!stored || *stored == now, arguments.sweep_path,
                          ": --resume needs the sweep it started with; ",
                          config::first_difference(now, stored.value_or(""), "in " + database),
                          " (keys: search, scheduler, trials, metric, goal, budget, space, base config)");
    return;
  }
  if (exists) {
    const sweep::ResultsStore store(database);
    PHALANX_REQUIRE_INPUT(!store.has_trials(), directory,
                          ": already holds a sweep (sweep.db has trials); pass --resume to continue it, or "
                          "choose another --sweep-dir");
  }
  std::error_code error;
  std::filesystem::create_directories(directory + "/trials", error);
  PHALANX_REQUIRE_INPUT(!error, "--sweep-dir ", directory, ": cannot create it (", error.message(), ")");
}

int sweep(const SweepArguments& arguments, int* argc, char*** argv) {
  // From here SIGTERM/SIGUSR1 (a preemption) no longer kill the rank: the coordinator hands out no
  // more jobs, running trials stop after a step with a checkpoint, rank 0 exits with 75.
  const train::StopRequest stop_request;
  // The coordinator thread on rank 0 calls MPI beside rank 0's own trial.
  comm::MpiSession session(argc, argv, comm::ThreadLevel::Multiple);
  const auto world = comm::Communicator::world();

  config::SweepConfig sweep;
  int status = agreed_status(world, [&] { sweep = config::load_sweep(arguments.sweep_path, arguments.overrides); });
  if (status) return status;
  std::string directory =
      arguments.sweep_directory.empty() ? "sweeps/" + sweep.name : arguments.sweep_directory;
  world.broadcast_string(directory, 0);
  // Rank 0 hosts the coordinator: it holds the directory's lock until the process ends.
  std::unique_ptr<sweep::SweepLock> lock;
  status = agreed_status(world, [&] {
    if (world.rank() != 0) return;
    std::error_code error;
    if (std::filesystem::is_directory(directory, error))
      lock = std::make_unique<sweep::SweepLock>(directory, 30.0);
    check_sweep_directory(arguments, sweep, directory);
    if (!lock) lock = std::make_unique<sweep::SweepLock>(directory, 30.0);
  });
  if (status) return status;

  train::RankResources resources;
  status =
      agreed_status(world, [&] { resources = train::make_rank_resources(sweep.base.device, sweep.base.threads, world); });
  if (status) return status;

  // Worker groups: GPU ranks in world order, gpu_ranks_per_trial to a group (a remainder that
  // cannot fill a group stays out: an NCCL group of fewer GPUs would be the slow one); CPU ranks in
  // world order, cut into groups of the sizes cpu_ranks_per_trial lists, repeated, the last group
  // taking what is left, when CPU ranks take trials. Groups are numbered by their first world rank.
  const bool gpu = resources.backend->device_kind() == DeviceKind::Cuda;
  const auto kinds = world.allgather(static_cast<std::uint64_t>(gpu));
  std::vector<int> group_of(static_cast<std::size_t>(world.size()), -1);
  std::vector<std::vector<int>> members;
  {
    std::vector<int> gpu_ranks;
    for (int rank = 0; rank < world.size(); ++rank)
      if (kinds[static_cast<std::size_t>(rank)]) gpu_ranks.push_back(rank);
    const auto full = gpu_ranks.size() / static_cast<std::size_t>(sweep.gpu_ranks_per_trial) *
                      static_cast<std::size_t>(sweep.gpu_ranks_per_trial);
    std::vector<std::vector<int>> candidates;
    for (std::size_t index = 0; index < full; index += static_cast<std::size_t>(sweep.gpu_ranks_per_trial))
      candidates.emplace_back(gpu_ranks.begin() + static_cast<long>(index),
                              gpu_ranks.begin() + static_cast<long>(index) + sweep.gpu_ranks_per_trial);
    if (sweep.cpu_trials) {
      std::vector<int> cpu_ranks;
      for (int rank = 0; rank < world.size(); ++rank)
        if (!kinds[static_cast<std::size_t>(rank)]) cpu_ranks.push_back(rank);
      std::size_t next = 0;
      for (std::size_t index = 0; next < cpu_ranks.size(); ++index) {
        const auto size =
            static_cast<std::size_t>(sweep.cpu_ranks_per_trial[index % sweep.cpu_ranks_per_trial.size()]);
        const std::size_t end = std::min(cpu_ranks.size(), next + size);
        candidates.emplace_back(cpu_ranks.begin() + static_cast<long>(next),
                                cpu_ranks.begin() + static_cast<long>(end));
        next = end;
      }
    }
    std::sort(candidates.begin(), candidates.end());
    for (const auto& group : candidates) {
      for (const int rank : group)
        group_of[static_cast<std::size_t>(rank)] = static_cast<int>(members.size());
      members.push_back(group);
    }
    if (world.rank() == 0 && full < gpu_ranks.size())
      std::printf("%zu GPU rank(s) left out: workers.gpu_ranks_per_trial is %d\n", gpu_ranks.size() - full,
                  sweep.gpu_ranks_per_trial);
  }
  status = agreed_status(world, [&] {
    PHALANX_REQUIRE_INPUT(
        !members.empty(), arguments.sweep_path,
        ": no worker group: workers.cpu_trials is false and there are no (or too few) GPU ranks");
  });
  if (status) return status;
  const int my_group = group_of[static_cast<std::size_t>(world.rank())];
  // The coordinator's messages travel on their own communicator, apart from any training traffic.
  const auto channel = world.split(0, world.rank());
  const auto group = world.split(my_group >= 0 ? my_group : static_cast<int>(members.size()), world.rank());
  // Merged groups for joined trials (docs/SWEEPS.md, "No idle tail") are formed from this one.
  const auto sweep_ranks = world.split(0, world.rank());
  std::unique_ptr<comm::NcclCommunicator> nccl;
  status = agreed_status(world, [&] {
    if (my_group >= 0 && gpu)
      nccl = std::make_unique<comm::NcclCommunicator>(group, *resources.backend,
                                                      sweep.base.distributed.timeout_s);
  });
  if (status) return status;

  bool stopped_by_signal = false;
  status = run_or_abort(world, [&] {
    std::thread coordinator;
    if (world.rank() == 0) {
      coordinator = std::thread([&] {
        // A failing coordinator leaves every worker waiting for a job: end the whole job.
        try {
          sweep::CoordinatorOptions options{&sweep, directory, arguments.resume,
                                            static_cast<int>(members.size())};
          stopped_by_signal = sweep::run_coordinator(options, channel);
          return;
        } catch (const Error& error) {
          std::fprintf(stderr, "phalanx: error: %s\n", error.what());
          std::fflush(stderr);
          comm::MpiSession::abort(error.exit_status());
        } catch (const std::exception& error) {
          std::fprintf(stderr, "phalanx: error: rank 0 (sweep coordinator): %s\n", error.what());
          std::fflush(stderr);
          comm::MpiSession::abort(1);
        }
      });
    }
    if (my_group >= 0) {
      sweep::WorkerOptions options{&sweep,
                                   directory,
                                   my_group,
                                   &channel,
                                   &group,
                                   &sweep_ranks,
                                   resources.backend.get(),
                                   nccl.get(),
                                   resources.threads,
                                   members[static_cast<std::size_t>(my_group)]};
      sweep::run_worker(options);
    }
    if (world.rank() == 0) {
      coordinator.join();
      // Ranks outside every group have been waiting for this word.
      for (int rank = 0; rank < world.size(); ++rank)
        if (group_of[static_cast<std::size_t>(rank)] < 0)
          channel.send_string("stop", rank, sweep::tag_to_worker);
    } else if (my_group < 0) {
      channel.receive_string(0, sweep::tag_to_worker, 0.05);
    }
  });
  // As for `phalanx train`, only rank 0 reports the stop: mpirun tears a job down when a rank exits
  // non-zero.
  if (status == 0 && stopped_by_signal && world.rank() == 0) return train::preempted_exit_status;
  return status;
}

}  // namespace

std::function<int()> add_sweep_command(CLI::App& app, int* argc, char*** argv) {
  auto arguments = std::make_shared<SweepArguments>();
  auto* command = app.add_subcommand("sweep", "Run a hyperparameter sweep (ASHA) over the MPI ranks");
  command->add_option("sweep", arguments->sweep_path, "Sweep file (YAML, see docs/SWEEPS.md)")->required();
  command->add_option(
      "--sweep-dir", arguments->sweep_directory,
      "Sweep directory: sweep.db, results.csv, best/, report.html, trials/ (default sweeps/<name>)");
  command->add_flag(
      "--resume", arguments->resume,
      "Continue the sweep in --sweep-dir after a kill: in-flight trials resume from their checkpoints");
  command
      ->add_option(
          "--set", arguments->overrides,
          "Override a sweep key (trials=4, budget.max=3) or, prefixed with config., a key of the base "
          "training config (config.data.path=x.h5); repeatable")
      ->take_all();
  return [arguments, argc, argv, command] {
    if (!*command) return -1;
    return sweep(*arguments, argc, argv);
  };
}

}  // namespace phalanx::cli
