// The step clocks on the CPU backend (whose device markers read the host clock): a host clock
// hands each step over at its end with the time between marks in the named stages and the
// exchange's own all-reduce costs; a device clock holds a step until the next one has run (or
// settle() is called) and gives each step the communication cost of that step, not its neighbour's.
// The straggler report's busy time leaves out both waits for other ranks (all-reduce, sync).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "loop/step_clock.hpp"

namespace phalanx::train {
namespace {

void pause_milliseconds(int milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
}

// Reports a different cost for the current and the previous step, and counts the questions.
class RecordedExchange final : public GradientExchange {
 public:
  void begin_step() override {}
  void bucket_ready(std::int64_t) override {}
  void wait() override {}
  void wait_before_host_reads() override {}
  comm::CommunicationSeconds cost(ExchangedStep step) override {
    asked.push_back(step);
    return step == ExchangedStep::Current ? current : previous;
  }
  comm::CommunicationSeconds current{0.004, 0.016}, previous{0.002, 0.008};
  std::vector<ExchangedStep> asked;
};

// One step with the stages of the training loop; Backward lasts `backward` milliseconds, of which
// `fetch` are set aside as data wait (the next batch's fetch on a GPU rank).
double run_step(StepClock& clock, std::int64_t run_step, int backward, int fetch) {
  clock.begin_step();
  pause_milliseconds(6);
  clock.mark(Stage::DataWait);
  pause_milliseconds(2);
  clock.mark(Stage::HostToDevice);
  pause_milliseconds(8);
  clock.mark(Stage::Forward);
  pause_milliseconds(backward - fetch);
  clock.mark_queued(Stage::Backward);
  pause_milliseconds(fetch);
  clock.set_aside(Stage::DataWait, fetch / 1000.0);
  clock.mark(Stage::Backward);
  clock.mark(Stage::AllReduceWait);
  pause_milliseconds(5);
  clock.mark(Stage::Optimizer);
  clock.record_upload({backend::UploadTiming{0.001, 0, 4096}, UploadPlace::HostStage});
  clock.mark(Stage::SyncWait);
  return clock.end_step(run_step, run_step + 1, BatchFacts{0, run_step, 0, 0});
}

TEST(StepClock, AHostClockHandsEachStepOverAtItsEndWithTheExchangesCosts) {
  const auto backend = backend::make_cpu_backend(1);
  RecordedExchange exchange;
  std::vector<SettledStep> settled;
  const auto clock =
      make_step_clock(*backend, exchange, false, [&](const SettledStep& step) { settled.push_back(step); });
  const double seconds = run_step(*clock, 0, 30, 10);
  ASSERT_EQ(settled.size(), 1u);
  const StageTimes& times = settled[0].times;
  EXPECT_EQ(times.total, seconds);
  EXPECT_GE(times.data_wait, 0.015) << "the fetch set aside during backward is data wait";
  EXPECT_GE(times.backward, 0.019);
  EXPECT_GE(times.forward, 0.0079);
  EXPECT_GE(times.optimizer, 0.0049);
  EXPECT_EQ(times.allreduce_wait, exchange.current.exposed);
  EXPECT_EQ(times.allreduce_total, exchange.current.total);
  EXPECT_EQ(times.host_to_device_bytes, 4096);
  EXPECT_GE(times.host_to_device_total, times.host_to_device);
  EXPECT_GE(times.other, 0.0);
  const double stages = times.data_wait + times.host_to_device + times.forward + times.backward +
                        times.allreduce_wait + times.optimizer + times.sync_wait + times.other;
  EXPECT_NEAR(stages, times.total, 1e-9 + times.allreduce_wait) << "the stages add up to the step";
  EXPECT_EQ(settled[0].run_step, 0);
  EXPECT_EQ(settled[0].global_step, 1);
  clock->settle();
  EXPECT_EQ(settled.size(), 1u) << "a host clock holds nothing back";
}

TEST(StepClock, ADeviceClockSettlesAStepOnceTheNextHasRunWithThatStepsCommunication) {
  const auto backend = backend::make_cpu_backend(1);
  RecordedExchange exchange;
  std::vector<SettledStep> settled;
  const auto clock =
      make_step_clock(*backend, exchange, true, [&](const SettledStep& step) { settled.push_back(step); });
  run_step(*clock, 0, 30, 0);
  EXPECT_TRUE(settled.empty()) << "the first step waits for the device a step later";
  EXPECT_TRUE(exchange.asked.empty()) << "nothing read while the step may still run";

  run_step(*clock, 1, 12, 0);
  ASSERT_EQ(settled.size(), 1u);
  EXPECT_EQ(settled[0].run_step, 0);
  ASSERT_EQ(exchange.asked.size(), 1u);
  EXPECT_EQ(exchange.asked[0], ExchangedStep::Previous) << "read once the next step's optimizer is queued";
  EXPECT_EQ(settled[0].times.allreduce_wait, exchange.previous.exposed);
  EXPECT_EQ(settled[0].times.allreduce_total, exchange.previous.total);
  EXPECT_GE(settled[0].times.backward, 0.029) << "backward is the device's (marker to marker)";
  EXPECT_GE(settled[0].times.other, 0.0);

  clock->settle();
  ASSERT_EQ(settled.size(), 2u);
  EXPECT_EQ(settled[1].run_step, 1);
  EXPECT_EQ(exchange.asked.back(), ExchangedStep::Current);
  EXPECT_EQ(settled[1].times.allreduce_wait, exchange.current.exposed);
  EXPECT_GE(settled[1].times.backward, 0.011);
  clock->settle();
  EXPECT_EQ(settled.size(), 2u) << "nothing is held after a settle";
}

TEST(StepClock, BusyTimeLeavesOutTheWaitsForTheOtherRanks) {
  for (const bool device_timed : {false, true}) {
    const auto backend = backend::make_cpu_backend(1);
    RecordedExchange exchange;
    const auto clock = make_step_clock(*backend, exchange, device_timed, [](const SettledStep&) {});
    clock->begin_step();
    pause_milliseconds(10);
    clock->mark(Stage::DataWait);
    clock->mark(Stage::HostToDevice);
    clock->mark(Stage::Forward);
    clock->mark_queued(Stage::Backward);
    clock->mark(Stage::Backward);
    clock->mark(Stage::AllReduceWait);
    pause_milliseconds(20);
    clock->set_aside(Stage::SyncWait, 0.020);  // the agreement before the update, inside its stage
    clock->mark(Stage::Optimizer);
    const double busy = clock->busy_seconds();
    const double total = clock->end_step(0, 1, BatchFacts{});
    // A device clock knows no all-reduce wait before its first step settles.
    const double all_reduce_wait = device_timed ? 0.0 : exchange.current.exposed;
    const std::string which = device_timed ? "device clock" : "host clock";
    EXPECT_GE(busy, 0.0099 - all_reduce_wait) << which;
    EXPECT_LE(busy, total - 0.020 - all_reduce_wait) << which << ": the sync wait is not busy time";
  }
}

}  // namespace
}  // namespace phalanx::train
