// Command-line entry: dispatches to the sub-commands and turns errors into exit statuses.
#include "phalanx/cli/cli.hpp"

#include <cstdio>

#include "commands.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/hdf5_exit.hpp"
#include "phalanx/train/build_information.hpp"

namespace phalanx::cli {
namespace {

// CLI11 reports a misspelt command as "a subcommand is required"; say which word was wrong and
// what was probably meant instead, at each level of sub-commands.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  const CLI::App* level = &app;
  std::string path = "phalanx";
  for (int index = 1; index < argc; ++index) {
    const std::string word = argv[index];
    if (word.empty() || word[0] == '-') return "";
    const auto subcommands = level->get_subcommands([](const CLI::App*) { return true; });
    if (subcommands.empty()) return "";
    std::vector<std::string> names;
    const CLI::App* next = nullptr;
    for (const auto* subcommand : subcommands) {
      names.push_back(subcommand->get_name());
      if (subcommand->get_name() == word) next = subcommand;
    }
    if (!next) {
      const std::string suggestion = config::closest_match(word, names);
      std::string known;
      for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
      return "unknown command '" + path + " " + word + "'" +
             (suggestion.empty() ? " (known: " + known + ")" : " (did you mean '" + suggestion + "'?)");
    }
    path += " " + word;
    level = next;
  }
  return "";
}

}  // namespace

int run(int argc, char** argv) {
  data::skip_hdf5_exit_handler();  // before any HDF5 call: a file whose writes failed crashed it
  CLI::App app{"phalanx: data-parallel CNN training over MPI ranks (CPU: oneDNN, GPU: cuDNN/NCCL)",
               "phalanx"};
  app.require_subcommand(1);
  // What a bug report from a cluster needs: the commit and every library this process loaded.
  app.set_version_flag(
      "--version", [] { return train::describe_build(train::build_information()); },
      "Print the version, git commit, build type and library versions, then exit");
  std::vector<std::function<int()>> actions = {add_train_command(app, &argc, &argv),
                                               add_eval_command(app, &argc, &argv),
                                               add_predict_command(app, &argc, &argv), add_data_command(app)};
  actions.push_back(add_report_command(app));
  actions.push_back(add_checkpoint_command(app));
  actions.push_back(add_bench_command(app, &argc, &argv));
  actions.push_back(add_sweep_command(app, &argc, &argv));
  actions.push_back(add_scaling_command(app));
  if (const std::string problem = unknown_command(app, argc, argv); !problem.empty()) {
    std::fprintf(stderr, "phalanx: error: %s (run 'phalanx --help' for the commands)\n", problem.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help is a "successful" parse error (exit 0); everything else is bad usage: 2.
    if (error.get_exit_code() == 0) return app.exit(error);
    std::fprintf(stderr, "phalanx: error: %s (see --help)\n", error.what());
    return 2;
  }
  try {
    for (auto& action : actions) {
      const int status = action();
      if (status >= 0) return status;
    }
  } catch (const Error& error) {
    std::fprintf(stderr, "phalanx: error: %s\n", error.what());
    return error.exit_status();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "phalanx: error: rank %d: %s\n", error_rank(), error.what());
    return 1;
  }
  return 2;
}

}  // namespace phalanx::cli
