// StepClock: turns the marks the training loop puts between its stages into one StageTimes per
// step. CPU ranks (and GPU ranks that sum gradients over MPI) time each stage on the host; GPU
// ranks that sum with NCCL time compute on the device with markers and settle a step a step
// later, so no step waits for the device only to measure itself.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "loop/gradient_exchange.hpp"
#include "loop/stage_times.hpp"
#include "phalanx/backend/backend.hpp"

namespace phalanx::train {

// Where a step's batch came from: its place in the data and the loader thread's work on it.
struct BatchFacts {
  std::int64_t epoch = 0, step = 0;  // the batch's epoch and step within it (0-based)
  double produce_begin = 0, produce_end = 0;
};

// A step whose times are final.
struct SettledStep {
  StageTimes times;
  std::int64_t run_step = 0;     // 0-based in this process
  std::int64_t global_step = 0;  // 1-based, the step's number once done
  double start = 0;              // steady seconds when the step began
  BatchFacts batch;
  // GradientExchange::bucket_ready_times of this step (null where the host does not know them);
  // valid while the step's callbacks run.
  const std::vector<double>* bucket_ready = nullptr;
};

// Where the input copy of a step ran: as the host-timed HostToDevice stage itself, or on a copy
// stream behind the previous step, whose exposed tail the host saw inside the forward stage.
enum class UploadPlace { HostStage, CopyStream };

struct UploadCost {
  backend::UploadTiming timing;
  UploadPlace place = UploadPlace::HostStage;
};

class StepClock {
 public:
  using SettledHandler = std::function<void(const SettledStep&)>;
  virtual ~StepClock() = default;

  virtual void begin_step() = 0;
  // The time since the last mark went to `stage`. A host clock ends Backward and Optimizer once
  // the device has finished them; a device clock puts its marker behind the stage's queued work.
  virtual void mark(Stage stage) = 0;
  // The stage's device work is all queued, and the host turns to other work while it runs: a
  // device clock puts its marker here, before that work (host clocks wait for mark()).
  virtual void mark_queued(Stage stage) = 0;
  // Host seconds spent inside the running stage that belong to `stage` instead (the next batch's
  // fetch during backward is data wait).
  virtual void set_aside(Stage stage, double seconds) = 0;
  virtual void record_upload(const UploadCost& upload) = 0;
  // The step's time so far less its waits for the other ranks, the exposed all-reduce (a device
  // clock knows it a step late and counts the previous step's) and the sync wait set aside so far
  // (the agreement before the update): the straggler report's busy time.
  virtual double busy_seconds() const = 0;
  // The step is over: its times go to the handler now (host) or once the device has run it
  // (device). Returns the step's host seconds.
  virtual double end_step(std::int64_t run_step, std::int64_t global_step, const BatchFacts& batch) = 0;
  // Waits for the device to finish the held step and hands it over (host clocks hold none).
  virtual void settle() = 0;
};

// A device clock when the gradients are summed with NCCL on the device (`exchange` says what
// the communication cost), a host clock otherwise. `settled` receives every step's times.
std::unique_ptr<StepClock> make_step_clock(backend::Backend& backend, GradientExchange& exchange,
                                           bool device_timed, StepClock::SettledHandler settled);

}  // namespace phalanx::train
