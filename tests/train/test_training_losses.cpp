// TrainingLosses and the step callbacks: the running loss sums are the same bits however often
// they are taken (a GPU rank takes them only where a line or a checkpoint needs them), a resumed
// run continues a checkpoint's sums, and the callbacks act in the order they were added.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "phalanx/core/tensor.hpp"
#include "loop/step_callback.hpp"
#include "loop/training_losses.hpp"

namespace phalanx::train {
namespace {

constexpr int batch = 8, classes = 5;

// Queues the loss of `steps` steps of random logits (the same ones for the same seed).
void queue_losses(backend::Backend& backend, std::uint32_t seed, int first_step, int steps,
                  TrainingLosses& losses, int take_every) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  Tensor logits(backend, Shape{batch, classes}), grad_logits(backend, Shape{batch, classes});
  Tensor labels(backend, Shape{batch}, DType::Int32);
  for (int step = 0; step < first_step + steps; ++step) {
    for (int index = 0; index < batch * classes; ++index) logits.data()[index] = normal(random);
    for (int index = 0; index < batch; ++index)
      labels.data_as<std::int32_t>()[index] = static_cast<std::int32_t>(random() % classes);
    if (step < first_step) continue;
    backend.softmax_cross_entropy_deferred(batch, classes, logits.data(), labels.data_as<std::int32_t>(),
                                           0.1f, 1.0f / batch, grad_logits.data());
    losses.count_step();
    if ((step + 1) % take_every == 0) losses.take();
  }
  losses.take();
}

TEST(TrainingLosses, TheSumsAreTheSameBitsHoweverOftenTheyAreTaken) {
  const auto backend = backend::make_cpu_backend(1);
  TrainingLosses every_step(*backend, batch, std::nullopt);
  queue_losses(*backend, 11, 0, 12, every_step, 1);
  TrainingLosses every_five(*backend, batch, std::nullopt);
  queue_losses(*backend, 11, 0, 12, every_five, 5);
  EXPECT_EQ(every_step.totals(), every_five.totals());
  EXPECT_EQ(every_step.last_step_loss(), every_five.last_step_loss());
  EXPECT_EQ(every_step.totals().epoch_samples, 12 * batch);
  EXPECT_GT(every_step.totals().epoch_loss_sum, 0.0);
}

TEST(TrainingLosses, AResumedRunContinuesTheCheckpointsSums) {
  const auto backend = backend::make_cpu_backend(1);
  TrainingLosses straight(*backend, batch, std::nullopt);
  queue_losses(*backend, 5, 0, 4, straight, 1);
  const RunningTotals at_checkpoint = straight.totals();
  queue_losses(*backend, 5, 4, 3, straight, 1);

  TrainingLosses resumed(*backend, batch, at_checkpoint);
  queue_losses(*backend, 5, 4, 3, resumed, 3);
  EXPECT_EQ(resumed.totals(), straight.totals());
  resumed.reset_interval();
  EXPECT_EQ(resumed.totals().interval_samples, 0);
  EXPECT_EQ(resumed.totals().epoch_samples, 7 * batch) << "the epoch's sums outlive the interval's";
  resumed.reset_epoch();
  EXPECT_EQ(resumed.totals(), RunningTotals{});
}

TEST(TrainingLosses, TotalsLeftInTheBackendByAnEarlierRunAreNotThisRuns) {
  const auto backend = backend::make_cpu_backend(1);
  TrainingLosses earlier(*backend, batch, std::nullopt);
  queue_losses(*backend, 3, 0, 2, earlier, 100);  // takes at the end
  Tensor logits(*backend, Shape{batch, classes}), grad_logits(*backend, Shape{batch, classes});
  Tensor labels(*backend, Shape{batch}, DType::Int32);
  for (int index = 0; index < batch * classes; ++index) logits.data()[index] = 0.5f;
  for (int index = 0; index < batch; ++index) labels.data_as<std::int32_t>()[index] = 1;
  backend->softmax_cross_entropy_deferred(batch, classes, logits.data(), labels.data_as<std::int32_t>(), 0.0f,
                                          1.0f,
                                          grad_logits.data());  // never taken: that run ended
  TrainingLosses next(*backend, batch, std::nullopt);
  next.take();
  EXPECT_EQ(next.totals(), RunningTotals{});
}

// Writes its name into a shared log at each call.
class LoggingCallback final : public StepCallback {
 public:
  LoggingCallback(std::string name, std::vector<std::string>& log, bool reads_device)
      : name_(std::move(name)), log_(log), reads_device_(reads_device) {}
  bool reads_device_results(const StepEnd&) const override { return reads_device_; }
  void step_settled(const SettledStep&) override { log_.push_back(name_ + " settled"); }
  void after_step(const StepEnd&) override { log_.push_back(name_ + " after"); }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  bool reads_device_;
};

TEST(StepCallbacks, ActInTheOrderAddedAndOneReaderMakesTheLoopWaitForTheDevice) {
  std::vector<std::string> log;
  StepCallbacks callbacks;
  callbacks.add<LoggingCallback>("metrics", log, false);
  EXPECT_FALSE(callbacks.read_device_results(StepEnd{}));
  callbacks.add<LoggingCallback>("checkpoint", log, true);
  EXPECT_TRUE(callbacks.read_device_results(StepEnd{}));
  callbacks.step_settled(SettledStep{});
  callbacks.after_step(StepEnd{});
  EXPECT_EQ(log, (std::vector<std::string>{"metrics settled", "checkpoint settled", "metrics after",
                                           "checkpoint after"}));
}

}  // namespace
}  // namespace phalanx::train
