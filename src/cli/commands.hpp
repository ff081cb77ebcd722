// The sub-commands, each in its own file (private to src/cli).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace phalanx::cli {

// Each add_* registers a sub-command and returns the action to run when it was chosen.
std::function<int()> add_train_command(CLI::App& app, int* argc, char*** argv);
std::function<int()> add_eval_command(CLI::App& app, int* argc, char*** argv);
std::function<int()> add_predict_command(CLI::App& app, int* argc, char*** argv);
std::function<int()> add_data_command(CLI::App& app);
std::function<int()> add_report_command(CLI::App& app);
std::function<int()> add_checkpoint_command(CLI::App& app);
std::function<int()> add_bench_command(CLI::App& app, int* argc, char*** argv);
std::function<int()> add_sweep_command(CLI::App& app, int* argc, char*** argv);
std::function<int()> add_scaling_command(CLI::App& app);

}  // namespace phalanx::cli
