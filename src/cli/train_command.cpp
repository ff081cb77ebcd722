// `phalanx train CONFIG [--set k=v ...] [--run-dir DIR] [--resume auto|PATH]`: one
// data-parallel training job over all ranks of the mpirun.
#include <memory>

#include "commands.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/train/job.hpp"
#include "phalanx/train/stop_request.hpp"
#include "rank_setup.hpp"

namespace phalanx::cli {
namespace {

struct TrainArguments {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string run_directory;
  std::string resume;
};

int train(const TrainArguments& arguments, int* argc, char*** argv) {
  // From here SIGTERM/SIGUSR1 no longer kill the rank: training stops after a step with a checkpoint
  // (a signal during start-up stops it after the first step).
  const train::StopRequest stop_request;
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();

  train::JobRequest request;
  request.config_source = arguments.config_path;
  request.run_directory = arguments.run_directory;
  request.resume = arguments.resume.empty()    ? train::ResumeFrom::Nothing
                   : arguments.resume == "auto" ? train::ResumeFrom::Latest
                                                : train::ResumeFrom::Path;
  request.resume_path = arguments.resume;
  int status = agreed_status(world, [&] { request.config = config::load(arguments.config_path, arguments.overrides); });
  if (status) return status;
  std::unique_ptr<train::Job> job;
  return set_up_and_run(
      world, [&] { job = std::make_unique<train::Job>(std::move(request), world); },
      [&] {
        job->run();
        return job->stopped_by_signal();
      });
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
