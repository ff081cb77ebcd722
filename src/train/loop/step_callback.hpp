// StepCallback: bookkeeping around the training loop rather than inside it (LBANN's callbacks):
// log intervals, epoch ends, checkpoints, stop signals, trace sampling. The loop tells each one
// that a step ended; a callback that reads what the device computed says so first, and the loop
// then waits for the device once for all of them.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "loop/step_clock.hpp"

namespace phalanx::train {

// What the loop knows when a step has ended.
struct StepEnd {
  std::int64_t global_step = 0;    // steps trained, this one included
  std::int64_t schedule_step = 0;  // this step's place in the schedule (== global_step - 1 unless a
                                   // resume changed the global batch)
  BatchFacts batch;                // the batch's epoch and step within it
  bool epoch_done = false;         // the step ended its epoch
  bool last_step = false;          // no step follows in this run
  bool stop_requested = false;     // a stop signal reached some rank: all stop after this step
  double seconds = 0;              // the step's host time
};

class StepCallback {
 public:
  virtual ~StepCallback() = default;
  // Whether after_step(step) reads results still on the device (loss totals, settled stage times).
  virtual bool reads_device_results(const StepEnd&) const { return false; }
  // A step's stage times are final (on GPU ranks with device timing, a step or more late).
  virtual void step_settled(const SettledStep&) {}
  virtual void after_step(const StepEnd&) {}
};

// The callbacks of a run, called in the order they were added.
class StepCallbacks {
 public:
  template <typename Callback, typename... Arguments>
  Callback& add(Arguments&&... arguments) {
    auto callback = std::make_unique<Callback>(std::forward<Arguments>(arguments)...);
    Callback& added = *callback;
    callbacks_.push_back(std::move(callback));
    return added;
  }
  bool read_device_results(const StepEnd& step) const;
  void step_settled(const SettledStep& step);
  void after_step(const StepEnd& step);

 private:
  std::vector<std::unique_ptr<StepCallback>> callbacks_;
};

}  // namespace phalanx::train
