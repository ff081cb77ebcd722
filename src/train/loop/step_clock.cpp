// The two step clocks: host stopwatches (CPU ranks, and GPU ranks whose gradients go through MPI,
// which wait for the device at each stage anyway), and device markers (DeviceStageTimer) settled
// a step late on GPU ranks that sum with NCCL, where the host runs ahead of the device.
#include "loop/step_clock.hpp"

#include <algorithm>
#include <optional>

#include "loop/device_stage_timer.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::train {

namespace {

// What both clocks measure on the host: the step's start, and the time since the last mark less
// what was set aside for another stage.
struct HostMarks {
  StageTimes step;
  double start = 0, set_aside = 0;
  Stopwatch step_clock, stage_clock;

  void begin() {
    step = StageTimes{};
    start = steady_seconds();
    step_clock.restart();
    stage_clock.restart();
    set_aside = 0;
  }
  // The time since the last mark, less what was set aside, goes to `stage` (or nowhere).
  void close(std::optional<Stage> stage) {
    if (stage) step[*stage] += stage_clock.seconds() - set_aside;
    set_aside = 0;
    stage_clock.restart();
  }
  void move_to(Stage stage, double seconds) {
    step[stage] += seconds;
    set_aside += seconds;
  }
  void record_upload(const UploadCost& upload) {
    // On a GPU the copy ran on the copy stream: CUDA events say how long it took and how much of
    // it the compute stream still waited for, which the host saw in the forward stage (it read
    // the loss). On a CPU rank the copy is the host-timed stage, all of it exposed.
    if (upload.place == UploadPlace::CopyStream) {
      step.host_to_device = upload.timing.exposed_seconds;
      step.forward = std::max(0.0, step.forward - upload.timing.exposed_seconds);
    }
    step.host_to_device_total = std::max(upload.timing.copy_seconds, step.host_to_device);
    step.host_to_device_bytes = static_cast<double>(upload.timing.bytes);
    close(std::nullopt);  // reading the copy's events belongs to no stage
  }
};

class HostStepClock final : public StepClock {
 public:
  HostStepClock(backend::Backend& backend, GradientExchange& exchange, SettledHandler settled)
      : backend_(backend), exchange_(exchange), settled_(std::move(settled)) {}

  void begin_step() override { marks_.begin(); }
  void mark(Stage stage) override {
    // Device backends queue work: a stage timed on the host ends when the device is done.
    if (stage == Stage::Backward || stage == Stage::Optimizer) backend_.synchronize();
    if (stage == Stage::AllReduceWait) {
      // The exchange timed its own wait and the whole window of its all-reduces.
      const comm::CommunicationSeconds communication = exchange_.cost(ExchangedStep::Current);
      marks_.step.allreduce_wait = communication.exposed;
      marks_.step.allreduce_total = communication.total;
      marks_.close(std::nullopt);
    } else {
      marks_.close(stage);
    }
  }
  void mark_queued(Stage) override {}
  void set_aside(Stage stage, double seconds) override { marks_.move_to(stage, seconds); }
  void record_upload(const UploadCost& upload) override { marks_.record_upload(upload); }
  double busy_seconds() const override {
    return marks_.step_clock.seconds() - marks_.step.allreduce_wait - marks_.step.sync_wait;
  }
  double end_step(std::int64_t run_step, std::int64_t global_step, const BatchFacts& batch) override {
    marks_.step.total = marks_.step_clock.seconds();
    marks_.step.close_other();
    settled_(
        SettledStep{marks_.step, run_step, global_step, marks_.start, batch, exchange_.bucket_ready_times()});
    return marks_.step.total;
  }
  void settle() override {}

 private:
  backend::Backend& backend_;
  GradientExchange& exchange_;
  SettledHandler settled_;
  HostMarks marks_;
};

class DeviceStepClock final : public StepClock {
 public:
  DeviceStepClock(backend::Backend& backend, GradientExchange& exchange, SettledHandler settled)
      : timer_(backend), exchange_(exchange), settled_(std::move(settled)) {}

  void begin_step() override { marks_.begin(); }
  void mark(Stage stage) override {
    // The device's work of a step starts once the data is in hand and each stage ends at its marker.
    if (stage == Stage::DataWait) timer_.mark(StageBoundary::Begin);
    if (stage == Stage::Forward) timer_.mark(StageBoundary::ForwardEnd);
    if (stage == Stage::Optimizer) {
      timer_.mark(StageBoundary::OptimizerEnd);
      // The previous step's all-reduce, read now that this whole step is queued behind it: the
      // host waits (if at all) while the device has work, never in front of an empty queue.
      if (held_) read_communication(*held_, ExchangedStep::Previous);
    }
    // The all-reduce's costs come from the exchange's events when the step settles.
    marks_.close(stage == Stage::AllReduceWait ? std::nullopt : std::optional<Stage>(stage));
  }
  void mark_queued(Stage stage) override {
    if (stage == Stage::Backward) timer_.mark(StageBoundary::BackwardEnd);
  }
  void set_aside(Stage stage, double seconds) override { marks_.move_to(stage, seconds); }
  void record_upload(const UploadCost& upload) override { marks_.record_upload(upload); }
  double busy_seconds() const override {
    return marks_.step_clock.seconds() - previous_allreduce_wait_ - marks_.step.sync_wait;
  }
  double end_step(std::int64_t run_step, std::int64_t global_step, const BatchFacts& batch) override {
    marks_.step.total = marks_.step_clock.seconds();
    // The step before has run to its end on the device meanwhile: settle it, hold this one.
    DeviceStageSeconds previous;
    if (held_ && timer_.read_previous(previous)) settle_held(previous);
    held_ = HeldStep{SettledStep{marks_.step, run_step, global_step, marks_.start, batch}};
    return marks_.step.total;
  }
  void settle() override {
    if (!held_) return;
    // Before the unbounded wait for the markers: the all-reduce is waited for with NCCL's error
    // state polled, so a stuck peer ends in an error, not a hang.
    if (!held_->communication_read) read_communication(*held_, ExchangedStep::Current);
    settle_held(timer_.read_current());
  }

 private:
  struct HeldStep {
    SettledStep step;  // host-measured parts (data, total, input copy); the rest comes from the device
    bool communication_read = false;
  };

  void read_communication(HeldStep& held, ExchangedStep which) {
    const comm::CommunicationSeconds communication = exchange_.cost(which);
    held.step.times.allreduce_wait = communication.exposed;
    held.step.times.allreduce_total = communication.total;
    previous_allreduce_wait_ = communication.exposed;
    held.communication_read = true;
  }
  void settle_held(const DeviceStageSeconds& device) {
    if (!held_->communication_read) read_communication(*held_, ExchangedStep::Current);
    StageTimes& step = held_->step.times;
    step.forward = std::max(0.0, device.forward - step.host_to_device);
    step.backward = device.backward;
    // The optimizer's device time began with the wait for the all-reduce's exposed tail.
    step.optimizer = std::max(0.0, device.optimizer - step.allreduce_wait);
    step.close_other();
    settled_(held_->step);
    held_.reset();
  }

  DeviceStageTimer timer_;
  GradientExchange& exchange_;
  SettledHandler settled_;
  HostMarks marks_;
  std::optional<HeldStep> held_;
  // The exposed all-reduce last read: the step before's, whether read once this step's optimizer
  // was queued or already at that step's own end (a log line, an epoch's end settled it there).
  double previous_allreduce_wait_ = 0;
};

}  // namespace

std::unique_ptr<StepClock> make_step_clock(backend::Backend& backend, GradientExchange& exchange,
                                           bool device_timed, StepClock::SettledHandler settled) {
  if (device_timed) return std::make_unique<DeviceStepClock>(backend, exchange, std::move(settled));
  return std::make_unique<HostStepClock>(backend, exchange, std::move(settled));
}

}  // namespace phalanx::train
