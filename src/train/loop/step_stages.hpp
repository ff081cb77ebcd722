// StepStages: the one place a training step says where it stands. Ending a stage marks the step
// clock (what the stage cost) and tells the watchdog what the rank does next: what a stalled rank
// was doing, and whether it waits for its peers there (a collective) or not.
#pragma once

#include <cstdint>

#include "control/run_control.hpp"
#include "loop/step_clock.hpp"

namespace phalanx::train {

class StepStages {
 public:
  StepStages(StepClock& clock, RunControl& run_control) : clock_(clock), run_control_(run_control) {}

  // Step `step` (1-based) begins with its data, forward and backward.
  void begin(std::int64_t step);
  // `stage` is over: its time goes to the clock, and after backward the watchdog knows the rank
  // waits in the gradient all-reduce, after that in the optimizer.
  void end(Stage stage);
  // The ranks' agreement before the update (RunControl::agree_before_update): the time this rank
  // waited there for its peers is sync wait, not optimizer time.
  StepAgreement agree_before_update(bool gradients_finite, bool last_step);

 private:
  StepClock& clock_;
  RunControl& run_control_;
  std::int64_t step_ = 0;
};

}  // namespace phalanx::train
