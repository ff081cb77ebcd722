// `phalanx report RUN_DIR`: (re)builds a run's report.html from the files of its run directory.
// No MPI: it reads files only, so it runs on a login node or a laptop.
#include <cstdio>

#include "commands.hpp"
#include "phalanx/report/run_report.hpp"
#include "phalanx/sweep/sweep_report.hpp"

namespace phalanx::cli {

std::function<int()> add_report_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "report",
      "Write RUN_DIR/report.html (plots of a run or of a sweep directory, one self-contained page)");
  auto run_directory = std::make_shared<std::string>();
  command
      ->add_option("run_dir", *run_directory,
                   "Run directory (holds metrics.jsonl) or sweep directory (holds sweep.db)")
      ->required();
  return [=]() -> int {
    if (!*command) return -1;
    // A sweep directory (it holds sweep.db) gets the sweep's report instead.
    if (sweep::is_sweep_directory(*run_directory)) {
      std::printf("%s\n", sweep::write_sweep_report(*run_directory).c_str());
      return 0;
    }
    std::printf("%s\n", report::write_run_report(*run_directory).c_str());
    return 0;
  };
}

}  // namespace phalanx::cli
