// Progress line formatting and terminal detection.
#include "phalanx/train/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "phalanx/core/timer.hpp"

namespace phalanx::train {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<long long>(seconds + 0.5);
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", total / 3600, (total / 60) % 60, total % 60);
  else
    std::snprintf(text, sizeof(text), "%lld:%02lld", total / 60, total % 60);
  return text;
}

namespace {
// Open MPI hands every rank a pseudo-terminal even when mpirun's own output goes to a file, so
// isatty() cannot tell; under it the launcher says what it knows through PHALANX_PROGRESS
// (bar | lines), and plain lines are the safe default for batch logs.
bool terminal_output() {
  if (const char* choice = std::getenv("PHALANX_PROGRESS")) return std::string(choice) == "bar";
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}
}  // namespace

bool live_terminal_output() {
  return terminal_output();
}

Progress::Progress(bool enabled, int log_every_steps)
    : enabled_(enabled), terminal_(terminal_output()), log_every_steps_(std::max(1, log_every_steps)) {}

std::string Progress::format(const ProgressState& state) {
  char text[256];
  std::snprintf(text, sizeof(text), "epoch %lld/%lld  step %lld/%lld  %.0f img/s  loss %.4f  ETA %s",
                static_cast<long long>(state.epoch + 1), static_cast<long long>(state.epochs),
                static_cast<long long>(state.step_in_epoch + 1),
                static_cast<long long>(state.steps_per_epoch), state.images_per_second, state.loss,
                format_duration(state.eta_seconds).c_str());
  return text;
}

void Progress::update(const ProgressState& state) {
  if (!enabled_) return;
  if (terminal_) {
    // Redraw at most 10 times a second: a terminal is slow, and nobody reads faster.
    const double now = wall_seconds_since_epoch();
    if (now - last_draw_ < 0.1 && state.step_in_epoch + 1 != state.steps_per_epoch) return;
    last_draw_ = now;
    std::printf("\r\033[K%s", format(state).c_str());
    std::fflush(stdout);
    live_line_open_ = true;
    return;
  }
  if ((state.step_in_epoch + 1) % log_every_steps_ == 0 || state.step_in_epoch + 1 == state.steps_per_epoch) {
    std::printf("%s\n", format(state).c_str());
    std::fflush(stdout);
  }
}

void Progress::line(const std::string& text) {
  if (!enabled_) return;
  if (live_line_open_) {
    std::printf("\r\033[K");
    live_line_open_ = false;
  }
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

}  // namespace phalanx::train
