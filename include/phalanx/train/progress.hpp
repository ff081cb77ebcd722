// Progress reporting on rank 0: a live line redrawn in place on a terminal, plain periodic
// lines otherwise (Slurm logs, pipes), so logs stay readable either way.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace phalanx::train {

struct ProgressState {
  std::int64_t epoch = 0, epochs = 0;
  std::int64_t step_in_epoch = 0, steps_per_epoch = 0;
  double images_per_second = 0;
  double loss = 0;
  double eta_seconds = 0;
};

class Progress {
 public:
  Progress(bool enabled, int log_every_steps);
  // Called every step; prints when due.
  void update(const ProgressState& state);
  // Prints a full line (ends any live line first).
  void line(const std::string& text);

 private:
  static std::string format(const ProgressState& state);
  bool enabled_;
  bool terminal_;
  int log_every_steps_;
  bool live_line_open_ = false;
  double last_draw_ = 0;
};

std::string format_duration(double seconds);

// Whether stdout is a terminal that takes redrawn lines (PHALANX_PROGRESS=bar|lines decides under
// mpirun, whose ranks all get a pseudo-terminal).
bool live_terminal_output();

}  // namespace phalanx::train
