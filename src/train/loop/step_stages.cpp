// The watchdog's names of a step's stages (test_failures reads them in a stalled job's message).
#include "loop/step_stages.hpp"

#include "phalanx/core/timer.hpp"

namespace phalanx::train {

void StepStages::begin(std::int64_t step) {
  step_ = step;
  clock_.begin_step();
  run_control_.enter("forward and backward", step_, comm::StageKind::Local);
}

void StepStages::end(Stage stage) {
  clock_.mark(stage);
  if (stage == Stage::Backward) run_control_.enter("gradient all-reduce", step_, comm::StageKind::Collective);
  if (stage == Stage::AllReduceWait) run_control_.enter("optimizer", step_, comm::StageKind::Local);
}

StepAgreement StepStages::agree_before_update(bool gradients_finite, bool last_step) {
  const Stopwatch waiting;
  const StepAgreement agreement = run_control_.agree_before_update(step_, gradients_finite, last_step);
  clock_.set_aside(Stage::SyncWait, waiting.seconds());
  run_control_.enter("optimizer", step_, comm::StageKind::Local);
  return agreement;
}

}  // namespace phalanx::train
