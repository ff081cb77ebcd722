// DeviceStageTimer: the stages of a GPU rank's training step (forward, backward, optimizer) timed
// on the device by markers at their boundaries, so that a step never waits for the device just to
// measure itself. The host reads a step's markers one step later, when the device has passed them
// (or where it waits for the device anyway: a log line, an epoch's end): two sets of markers take
// turns, so the markers of the step before stay readable while the current one is queued.
#pragma once

#include <array>
#include <memory>

#include "phalanx/backend/backend.hpp"

namespace phalanx::train {

enum class StageBoundary { Begin = 0, ForwardEnd = 1, BackwardEnd = 2, OptimizerEnd = 3 };

// Device seconds between the boundaries of one step. `optimizer` still contains the device's wait
// for the gradient all-reduce's tail (the trainer subtracts the exposed part it measures).
struct DeviceStageSeconds {
  double forward = 0;    // Begin -> ForwardEnd: input normalisation, forward and loss
  double backward = 0;   // ForwardEnd -> BackwardEnd
  double optimizer = 0;  // BackwardEnd -> OptimizerEnd
};

class DeviceStageTimer {
 public:
  explicit DeviceStageTimer(backend::Backend& backend);

  // Marks a boundary of the current step after the work queued so far; Begin starts a new step
  // (and reuses the markers of the step before the previous one).
  void mark(StageBoundary boundary);
  // The stages of the step before the current one; false when there is none. Waits only for that
  // step's optimizer to have run.
  bool read_previous(DeviceStageSeconds& seconds);
  // The stages of the current step, once all four boundaries are marked; waits for its optimizer.
  DeviceStageSeconds read_current();

 private:
  using Markers = std::array<std::unique_ptr<backend::TimingMarker>, 4>;
  DeviceStageSeconds read(Markers& markers);

  std::array<Markers, 2> markers_;
  int current_ = 1;      // the set of the current step (Begin flips it)
  int steps_begun_ = 0;  // 0, 1 or 2 (saturates): whether a previous step exists
};

}  // namespace phalanx::train
