// DeviceStageTimer (see the header): markers are recorded in queue order on the backend's compute
// stream, so reading the step before the current one waits, if at all, only for the tail of that
// step while a whole step of work is already queued behind it.
#include "loop/device_stage_timer.hpp"

#include <algorithm>

#include "phalanx/core/error.hpp"

namespace phalanx::train {

DeviceStageTimer::DeviceStageTimer(backend::Backend& backend) {
  for (Markers& markers : markers_)
    for (auto& marker : markers) marker = backend.make_timing_marker();
}

void DeviceStageTimer::mark(StageBoundary boundary) {
  if (boundary == StageBoundary::Begin) {
    current_ = 1 - current_;
    steps_begun_ = std::min(steps_begun_ + 1, 2);
  }
  PHALANX_CHECK(steps_begun_ > 0, "a step's first boundary is Begin");
  markers_[current_][static_cast<std::size_t>(boundary)]->record();
}

DeviceStageSeconds DeviceStageTimer::read(Markers& markers) {
  DeviceStageSeconds seconds;
  seconds.forward = std::max(0.0, markers[1]->seconds_since(*markers[0]));
  seconds.backward = std::max(0.0, markers[2]->seconds_since(*markers[1]));
  seconds.optimizer = std::max(0.0, markers[3]->seconds_since(*markers[2]));
  return seconds;
}

bool DeviceStageTimer::read_previous(DeviceStageSeconds& seconds) {
  if (steps_begun_ < 2) return false;
  seconds = read(markers_[1 - current_]);
  return true;
}

DeviceStageSeconds DeviceStageTimer::read_current() {
  PHALANX_CHECK(steps_begun_ > 0, "no step to read");
  return read(markers_[current_]);
}

}  // namespace phalanx::train
