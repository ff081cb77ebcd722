// StageTimes: where one training step's time went, stage by stage (docs/DESIGN.md §1 and §7), and the
// sums of many steps that summary.json, the epoch events and the breakdown table report. The
// step clock (step_clock.hpp) fills one per step; the bookkeeping adds them up.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace phalanx::train {

// The stages of a step in the order the loop runs them; the step clock's marks name them.
enum class Stage { DataWait, HostToDevice, Forward, Backward, AllReduceWait, Optimizer, SyncWait };

// Seconds per stage of a step; `other` is what the named stages do not cover. The stages add up
// to `total`; `allreduce_total` is not a stage: it is the whole all-reduce window, of which only
// `allreduce_wait` (exposed) was not hidden behind backward. `sync_wait` is the step's time in the
// run-control collectives (the agreement on finite gradients and a stop between the all-reduce and
// the optimizer, the straggler report after it): mostly waiting for a peer that left the gradient
// all-reduce later.
struct StageTimes {
  double data_wait = 0, forward = 0, backward = 0, allreduce_wait = 0, optimizer = 0, other = 0, total = 0;
  double sync_wait = 0;
  double host_to_device = 0, allreduce_total = 0;
  // The input copy's own time (host_to_device is its exposed part) and its bytes.
  double host_to_device_total = 0, host_to_device_bytes = 0;

  // The seconds of `stage` (a reference into this step's fields).
  double& operator[](Stage stage);
  // `total` less the named stages, never negative.
  void close_other();
  void add(const StageTimes& step);
  nlohmann::json to_json(std::int64_t steps) const;  // mean milliseconds per step and shares
};

}  // namespace phalanx::train
