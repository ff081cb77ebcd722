// The coordinator's output (docs/SWEEPS.md, "Output while it runs"): the header, one line per
// finished, interrupted or handed-over job followed by the rungs, busy groups and best trial, the
// groups that go to join a trial, failures, the stop, and the top trials, which stay below the
// lines on a terminal (redrawn after each result) and are printed every 10 results in a log.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "phalanx/config/sweep_config.hpp"
#include "sweep_commands.hpp"
#include "sweep_state.hpp"

namespace phalanx::sweep {

class SweepPrinter {
 public:
  // `live`: stdout takes redrawn lines (train::live_terminal_output).
  SweepPrinter(const config::SweepConfig& sweep, bool live) : sweep_(sweep), live_(live) {}

  void header(const SweepState& state) const;
  void resuming(const std::string& sweep_directory, const SweepState& state) const;
  void show(const ShowJobFailed& line, const SweepState& state);
  void show(const ShowStopBegun& line);
  // A line of its own (a refused join), above the live leaderboard.
  void note(const std::string& line);
  void show(const ShowProgress& progress, const SweepState& state);
  // Takes the live leaderboard off the terminal, before the end's lines.
  void erase_live_block();
  // Returns the number of lines printed.
  int leaderboard(const SweepState& state, bool final) const;
  // `seconds_after_signal`: from the signal to now, when its time is known.
  void stopped(const SweepState& state, std::optional<double> seconds_after_signal, std::size_t waiting_jobs,
               int exit_status) const;
  void done(const SweepState& state, double wall_seconds, const std::string& sweep_directory,
            const std::string& report) const;

 private:
  std::string status_line(const SweepState& state) const;

  const config::SweepConfig& sweep_;
  bool live_;
  int live_block_lines_ = 0;  // the leaderboard's lines below the last event line
};

}  // namespace phalanx::sweep
