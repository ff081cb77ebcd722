// Command-line entry: dispatches to the sub-commands and turns errors into exit statuses.
#include "phalanx/cli/cli.hpp"

#include <cstdio>

#include "commands.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::cli {

int run(int argc, char** argv) {
  CLI::App app{"phalanx: data-parallel CNN training over MPI ranks (CPU: oneDNN, GPU: cuDNN/NCCL)",
               "phalanx"};
  app.require_subcommand(1);
  std::vector<std::function<int()>> actions = {add_train_command(app, &argc, &argv),
                                               add_eval_command(app, &argc, &argv),
                                               add_predict_command(app, &argc, &argv), add_data_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help is a "successful" parse error (exit 0); everything else is bad usage: 2.
    const int status = app.exit(error);
    return status == 0 ? 0 : 2;
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
