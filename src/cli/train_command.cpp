// `phalanx train CONFIG [--set k=v ...] [--run-dir DIR] [--resume auto|PATH]`: one
// data-parallel training job over all ranks of the mpirun.
#include <cstdio>
#include <sstream>

#include "commands.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
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

// "key: here vs rank 0" for the first differing line of two resolved configs.
std::string first_difference(const std::string& mine, const std::string& reference) {
  std::istringstream mine_lines(mine), reference_lines(reference);
  std::string mine_line, reference_line;
  int line = 0;
  while (true) {
    const bool more_mine = static_cast<bool>(std::getline(mine_lines, mine_line));
    const bool more_reference = static_cast<bool>(std::getline(reference_lines, reference_line));
    ++line;
    if (!more_mine && !more_reference) return "they differ";
    if (mine_line != reference_line) {
      const auto trim = [](const std::string& text) {
        return text.substr(std::min(text.find_first_not_of(' '), text.size()));
      };
      return "line " + std::to_string(line) + " of the resolved config is '" + trim(mine_line) +
             "' here but '" + trim(reference_line) + "' on rank 0";
    }
  }
}

int train(const TrainArguments& arguments, int* argc, char*** argv) {
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
    std::string reference = config_text;
    world.broadcast_string(reference, 0);
    if (config_text != reference)
      throw_input_error(arguments.config_path + ": the resolved config of rank " +
                        std::to_string(world.rank()) +
                        " differs from rank 0's: " + first_difference(config_text, reference) +
                        " (every rank must get the same config file and --set options)");
  });
  if (status) return status;

  std::string run_directory =
      arguments.run_directory.empty() ? train::default_run_directory(config.name) : arguments.run_directory;
  world.broadcast_string(run_directory, 0);

  RankResources resources;
  std::unique_ptr<train::Trainer> trainer;
  status = agree(world, [&] {
    resources = make_rank_resources(config.device, config.threads, world);
    train::TrainerOptions options{config, config_text, run_directory, arguments.resume, resources.threads};
    trainer = std::make_unique<train::Trainer>(std::move(options), world, *resources.backend);
  });
  if (status) return status;

  try {
    trainer->run();
  } catch (const Error& error) {
    // Mid-run, other ranks may sit in a collective: only ending the whole job avoids a hang.
    std::fprintf(stderr, "phalanx: error: %s\n", error.what());
    if (world.size() > 1) comm::MpiSession::abort(error.exit_status());
    return error.exit_status();
  }
  return 0;
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
