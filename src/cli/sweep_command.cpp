// `phalanx sweep SWEEP.yaml [--sweep-dir DIR] [--resume] [--set key=value ...]`: a hyperparameter
// sweep over all ranks of the mpirun (docs/SWEEPS.md), set up and run by sweep::SweepJob; with
// `--join DIR` instead, this mpirun's ranks join the sweep running in DIR as more worker groups.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/sweep_config.hpp"
#include "phalanx/sweep/sweep_job.hpp"
#include "phalanx/train/stop_request.hpp"
#include "rank_setup.hpp"

namespace phalanx::cli {
namespace {

struct SweepArguments {
  std::string sweep_path;
  std::string sweep_directory;
  std::vector<std::string> overrides;
  bool resume = false;
  std::string join_directory;
};

int sweep(const SweepArguments& arguments, int* argc, char*** argv) {
  // From here SIGTERM/SIGUSR1 (a preemption) no longer kill the rank: the coordinator hands out no
  // more jobs, running trials stop after a step with a checkpoint, rank 0 exits with 75.
  const train::StopRequest stop_request;
  // The coordinator thread on rank 0 calls MPI beside rank 0's own trial.
  comm::MpiSession session(argc, argv, comm::ThreadLevel::Multiple);
  const auto world = comm::Communicator::world();

  sweep::SweepRequest request;
  request.directory = arguments.join_directory.empty() ? arguments.sweep_directory : arguments.join_directory;
  request.resume = arguments.resume;
  request.join = !arguments.join_directory.empty();
  int status =
      agreed_status(world, [&] { request.sweep = config::load_sweep(arguments.sweep_path, arguments.overrides); });
  if (status) return status;
  std::unique_ptr<sweep::SweepJob> job;
  status = set_up_and_run(
      world, [&] { job = std::make_unique<sweep::SweepJob>(std::move(request), world); },
      [&] { return job->run(); });
  if (status == 0 && job && job->every_trial_failed()) {
    std::fprintf(
        stderr,
        "phalanx: error: rank 0: every trial of the sweep failed and none gave a result: a problem they "
        "share (the base config, its data) rather than a search result. The first: %s\n",
        job->every_trial_failed()->c_str());
    return 2;
  }
  return status;
}

}  // namespace

std::function<int()> add_sweep_command(CLI::App& app, int* argc, char*** argv) {
  auto arguments = std::make_shared<SweepArguments>();
  auto* command = app.add_subcommand("sweep", "Run a hyperparameter sweep (ASHA) over the MPI ranks");
  command->add_option("sweep", arguments->sweep_path, "Sweep file (YAML, see docs/SWEEPS.md)")->required();
  auto* directory = command->add_option(
      "--sweep-dir", arguments->sweep_directory,
      "Sweep directory: sweep.db, results.csv, best/, report.html, trials/ (default sweeps/<name>)");
  auto* resume = command->add_flag(
      "--resume", arguments->resume,
      "Continue the sweep in --sweep-dir after a kill: in-flight trials resume from their checkpoints");
  command
      ->add_option("--join", arguments->join_directory,
                   "Add this job's ranks as worker groups to the sweep running in this directory (another "
                   "mpirun or Slurm job; the same sweep file and overrides); they leave when it ends")
      ->excludes(directory)
      ->excludes(resume);
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
