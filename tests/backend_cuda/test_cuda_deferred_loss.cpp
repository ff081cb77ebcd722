// The CUDA backend's training step without host waits: the deferred loss totals stay on the device
// until taken and then equal the synchronous call's (and the CPU's within rounding), and a step's
// worth of backend calls (forward, loss, backward, optimizer) is queued without the host waiting
// for the device once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda_test_support.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::testing {
namespace {

std::vector<float> random_floats(std::size_t count, std::uint64_t stream, float low, float high) {
  RandomStream random(11, stream);
  std::vector<float> values(count);
  for (float& value : values) value = random.next_uniform(low, high);
  return values;
}

std::vector<std::int32_t> random_classes(int batch, int classes, std::uint64_t stream) {
  RandomStream random(13, stream);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (auto& label : labels) label = static_cast<std::int32_t>(random.next_below(classes));
  return labels;
}

TEST(CudaLossDeferred, TotalsEqualTheSynchronousCallAndTheCpu) {
  PHALANX_SKIP_WITHOUT_CUDA();
  backend::Backend& cuda = cuda_backend();
  backend::Backend& cpu = cpu_backend();
  const int batch = 300, classes = 10, steps = 6;
  (void)cuda.take_deferred_loss_totals();
  std::vector<backend::LossTotals> synchronous, on_cpu;
  for (int step = 0; step < steps; ++step) {
    const auto logits = random_floats(std::size_t(batch) * classes, 30 + step, -5.0f, 5.0f);
    const auto labels = random_classes(batch, classes, 40 + step);
    const Tensor device_logits = upload(cuda, logits);
    const Tensor device_labels = upload(cuda, labels);
    Tensor grad = empty_floats(cuda, std::int64_t(batch) * classes);
    cuda.softmax_cross_entropy_deferred(batch, classes, device_logits.data(),
                                        device_labels.data_as<std::int32_t>(), 0.1f, 1.0f / batch,
                                        grad.data());
    synchronous.push_back(cuda.softmax_cross_entropy(batch, classes, device_logits.data(),
                                                     device_labels.data_as<std::int32_t>(), 0.1f,
                                                     1.0f / batch, nullptr));
    std::vector<float> cpu_grad(logits.size());
    on_cpu.push_back(cpu.softmax_cross_entropy(batch, classes, logits.data(), labels.data(), 0.1f,
                                               1.0f / batch, cpu_grad.data()));
  }
  const auto taken = cuda.take_deferred_loss_totals();
  ASSERT_EQ(taken.size(), std::size_t(steps));
  for (int step = 0; step < steps; ++step) {
    // The same kernels in the same order: the same bits as the synchronous call.
    EXPECT_EQ(taken[step].loss_sum, synchronous[step].loss_sum) << "step " << step;
    EXPECT_EQ(taken[step].correct, synchronous[step].correct) << "step " << step;
    // Per-sample losses in double as on the CPU, summed in another order: rounding apart only.
    EXPECT_NEAR(taken[step].loss_sum, on_cpu[step].loss_sum, 1e-9 * on_cpu[step].loss_sum) << "step " << step;
    EXPECT_EQ(taken[step].correct, on_cpu[step].correct) << "step " << step;
  }
  EXPECT_TRUE(cuda.take_deferred_loss_totals().empty());
}

TEST(CudaLossDeferred, MoreStepsThanDeviceSlotsKeepEveryStepInOrder) {
  PHALANX_SKIP_WITHOUT_CUDA();
  backend::Backend& cuda = cuda_backend();
  const int batch = 4, classes = 3, steps = 2500;  // past the 1024 device slots twice
  (void)cuda.take_deferred_loss_totals();
  std::vector<float> logits(std::size_t(batch) * classes, 0.0f);
  const std::vector<std::int32_t> labels{0, 1, 2, 0};
  std::vector<Tensor> step_logits;
  for (int step = 0; step < 3; ++step) {
    logits[0] = static_cast<float>(step);  // three distinct losses, cycled
    step_logits.push_back(upload(cuda, logits));
  }
  const Tensor device_labels = upload(cuda, labels);
  std::vector<double> expected;
  for (int step = 0; step < 3; ++step)
    expected.push_back(cuda.softmax_cross_entropy(batch, classes, step_logits[step].data(),
                                                  device_labels.data_as<std::int32_t>(), 0.0f, 1.0f, nullptr)
                           .loss_sum);
  for (int step = 0; step < steps; ++step)
    cuda.softmax_cross_entropy_deferred(batch, classes, step_logits[step % 3].data(),
                                        device_labels.data_as<std::int32_t>(), 0.0f, 1.0f, nullptr);
  const auto taken = cuda.take_deferred_loss_totals();
  ASSERT_EQ(taken.size(), std::size_t(steps));
  for (int step = 0; step < steps; ++step)
    ASSERT_EQ(taken[step].loss_sum, expected[step % 3]) << "step " << step;
}

TEST(CudaLossDeferred, ABadLabelIsReportedByTheTake) {
  PHALANX_SKIP_WITHOUT_CUDA();
  backend::Backend& cuda = cuda_backend();
  (void)cuda.take_deferred_loss_totals();
  const Tensor logits = upload(cuda, std::vector<float>{0.0f, 1.0f, 2.0f, 3.0f});
  const Tensor labels = upload(cuda, std::vector<std::int32_t>{1, 7});
  cuda.softmax_cross_entropy_deferred(2, 2, logits.data(), labels.data_as<std::int32_t>(), 0.0f, 1.0f,
                                      nullptr);
  EXPECT_THROW((void)cuda.take_deferred_loss_totals(), Error);
  EXPECT_TRUE(cuda.take_deferred_loss_totals().empty());
}

// A two-layer network's training step through the backend, as the trainer issues it: forward,
// the deferred loss, backward, an SGD step.
class TwoLayerStep {
 public:
  TwoLayerStep(backend::Backend& backend, int batch, int in_features, int hidden, int classes)
      : backend_(backend),
        first_{batch, in_features, hidden},
        second_{batch, hidden, classes},
        input_(upload(backend, random_floats(std::size_t(batch) * in_features, 1, -1.0f, 1.0f))),
        labels_(upload(backend, random_classes(batch, classes, 4))),
        weight1_(upload(backend, random_floats(std::size_t(hidden) * in_features, 2, -0.05f, 0.05f))),
        bias1_(upload(backend, std::vector<float>(hidden, 0.01f))),
        weight2_(upload(backend, random_floats(std::size_t(classes) * hidden, 3, -0.05f, 0.05f))),
        bias2_(upload(backend, std::vector<float>(classes, 0.0f))),
        hidden_output_(empty_floats(backend, std::int64_t(batch) * hidden)),
        activated_(empty_floats(backend, std::int64_t(batch) * hidden)),
        logits_(empty_floats(backend, std::int64_t(batch) * classes)),
        grad_logits_(empty_floats(backend, std::int64_t(batch) * classes)),
        grad_activated_(empty_floats(backend, std::int64_t(batch) * hidden)),
        grad_hidden_(empty_floats(backend, std::int64_t(batch) * hidden)),
        grad_weight1_(empty_floats(backend, std::int64_t(hidden) * in_features)),
        grad_bias1_(empty_floats(backend, hidden)),
        grad_weight2_(empty_floats(backend, std::int64_t(classes) * hidden)),
        grad_bias2_(empty_floats(backend, classes)),
        momentum1_(upload(backend, std::vector<float>(std::size_t(hidden) * in_features, 0.0f))) {}

  void run() {
    const std::int64_t hidden_count = std::int64_t(first_.batch) * first_.out_features;
    backend_.linear_forward(first_, input_.data(), weight1_.data(), bias1_.data(), hidden_output_.data());
    backend_.relu_forward(hidden_count, hidden_output_.data(), activated_.data());
    backend_.linear_forward(second_, activated_.data(), weight2_.data(), bias2_.data(), logits_.data());
    backend_.softmax_cross_entropy_deferred(first_.batch, second_.out_features, logits_.data(),
                                            labels_.data_as<std::int32_t>(), 0.1f, 1.0f / first_.batch,
                                            grad_logits_.data());
    backend_.linear_backward(second_, activated_.data(), weight2_.data(), grad_logits_.data(),
                             grad_activated_.data(), grad_weight2_.data(), grad_bias2_.data());
    backend_.relu_backward(hidden_count, activated_.data(), grad_activated_.data(), grad_hidden_.data());
    backend_.linear_backward(first_, input_.data(), weight1_.data(), grad_hidden_.data(), nullptr,
                             grad_weight1_.data(), grad_bias1_.data());
    backend_.sgd_step(std::int64_t(first_.out_features) * first_.in_features,
                      backend::SgdHyperparameters{0.1f, 0.9f, 0.0f, false}, weight1_.data(),
                      grad_weight1_.data(), momentum1_.data());
  }

 private:
  backend::Backend& backend_;
  backend::LinearGeometry first_, second_;
  Tensor input_, labels_, weight1_, bias1_, weight2_, bias2_, hidden_output_, activated_, logits_,
      grad_logits_, grad_activated_, grad_hidden_, grad_weight1_, grad_bias1_, grad_weight2_, grad_bias2_,
      momentum1_;
};

// No call of the step makes the host wait (cuda_host_waits counts every synchronisation of the
// backend), and the one take afterwards returns the step's loss, equal to the CPU's.
TEST(CudaTrainingStep, ForwardLossBackwardAndOptimizerQueueWithoutAHostWait) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda_owner = backend::make_cuda_backend(0);
  backend::Backend& cuda = *cuda_owner;
  backend::Backend& cpu = cpu_backend();
  TwoLayerStep on_cuda(cuda, 512, 256, 512, 10);
  on_cuda.run();  // the first step chooses cuBLAS plans and may allocate
  (void)cuda.take_deferred_loss_totals();
  cuda.synchronize();
  const std::int64_t waits_before = backend::cuda_host_waits(cuda);
  on_cuda.run();
  EXPECT_EQ(backend::cuda_host_waits(cuda), waits_before)
      << "a training step's backend calls made the host wait for the device";
  const auto taken = cuda.take_deferred_loss_totals();
  EXPECT_EQ(backend::cuda_host_waits(cuda), waits_before + 1) << "the take is the one wait";
  ASSERT_EQ(taken.size(), 1u);

  TwoLayerStep on_cpu(cpu, 512, 256, 512, 10);
  (void)cpu.take_deferred_loss_totals();
  on_cpu.run();
  on_cpu.run();
  const auto cpu_taken = cpu.take_deferred_loss_totals();
  ASSERT_EQ(cpu_taken.size(), 2u);
  EXPECT_TRUE(std::isfinite(taken[0].loss_sum));
  EXPECT_NEAR(taken[0].loss_sum, cpu_taken[1].loss_sum, 1e-4 * cpu_taken[1].loss_sum);
  EXPECT_NEAR(static_cast<double>(taken[0].correct), static_cast<double>(cpu_taken[1].correct), 2.0);
}

// What the counter cannot see (an implicit synchronisation inside a library call) shows here: ten
// steps of large GEMMs (fp32, about 35 GFLOP each) are queued and the host gets back while the
// device is still working on them.
TEST(CudaTrainingStep, TheHostReturnsWhileTheDeviceStillWorks) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda_owner = backend::make_cuda_backend(0);
  backend::Backend& cuda = *cuda_owner;
  TwoLayerStep step(cuda, 2048, 2048, 2048, 10);
  step.run();
  (void)cuda.take_deferred_loss_totals();
  const std::int64_t waits_before = backend::cuda_host_waits(cuda);
  const int steps = 10;
  for (int index = 0; index < steps; ++index) step.run();
  EXPECT_TRUE(backend::cuda_work_pending(cuda))
      << "the device finished ten steps before the host queued them";
  EXPECT_EQ(backend::cuda_host_waits(cuda), waits_before);
  const auto taken = cuda.take_deferred_loss_totals();
  ASSERT_EQ(taken.size(), std::size_t(steps));
  EXPECT_FALSE(backend::cuda_work_pending(cuda));
  for (const auto& totals : taken) EXPECT_TRUE(std::isfinite(totals.loss_sum));
}

}  // namespace
}  // namespace phalanx::testing
