// A whole model's training step on the CUDA backend queues its work and returns: after the first
// steps (cuDNN's algorithm searches, buffers sized on first use), a step of resnet20 (convolution,
// batch norm, ReLU, residual sums, pooling, linear, the deferred loss, SGD) makes the host wait for
// the device not once and frees no device buffer (cudaFree waits for the whole device, so a buffer
// sized per step would stall every step). With fp32 activations and with bf16 ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend_cuda/cuda_test_support.hpp"
#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::testing {
namespace {

using backend::ComputePrecision;

// resnet20 on 32 synthetic 16x16 RGB images, trained step by step with the deferred loss, as the
// trainer trains.
class ModelSteps {
 public:
  explicit ModelSteps(backend::Backend& backend)
      : backend_(backend),
        model_(model_config(), Shape{size, size, channels}, classes, backend, 7),
        images_(upload(backend, random_bytes(std::size_t{batch} * size * size * channels, 3))),
        labels_(upload(backend, random_labels(batch, classes, 4))),
        mean_(upload(backend, std::vector<float>{0.49f, 0.48f, 0.45f})),
        deviation_(upload(backend, std::vector<float>{0.25f, 0.24f, 0.26f})),
        input_(backend, Shape{batch, size, size, channels}),
        grad_logits_(backend, Shape{batch, classes}),
        momentum_(upload(backend, std::vector<float>(
                                      static_cast<std::size_t>(model_.registry().parameter_count()), 0.0f))) {
  }

  void run() {
    backend_.normalize_images(images_.data_as<std::uint8_t>(), std::int64_t{batch} * size * size, channels,
                              mean_.data(), deviation_.data(), input_.data());
    const Tensor& logits = model_.forward(input_, nn::ForwardContext{nn::Mode::Training, 7, step_++, 0});
    backend_.softmax_cross_entropy_deferred(batch, classes, logits.data(), labels_.data_as<std::int32_t>(),
                                            0.0f, 1.0f / batch, grad_logits_.data());
    model_.backward(input_, grad_logits_, {});
    backend::SgdHyperparameters hyperparameters;
    hyperparameters.learning_rate = 0.02f;
    hyperparameters.momentum = 0.9f;
    backend_.sgd_step(model_.registry().parameter_count(), hyperparameters,
                      model_.registry().parameters().data(), model_.registry().gradients().data(),
                      momentum_.data());
  }

  static constexpr int batch = 32, classes = 10, size = 16, channels = 3;

 private:
  static config::ModelConfig model_config() {
    config::ModelConfig config;
    config.preset = "resnet20";
    return config;
  }

  backend::Backend& backend_;
  nn::Model model_;
  Tensor images_, labels_, mean_, deviation_, input_, grad_logits_, momentum_;
  std::int64_t step_ = 0;
};

void expect_steps_without_a_host_wait(backend::Backend& cuda) {
  ModelSteps steps(cuda);
  for (int warm_up = 0; warm_up < 2; ++warm_up) steps.run();
  (void)cuda.take_deferred_loss_totals();
  cuda.synchronize();
  const std::int64_t waits_before = backend::cuda_host_waits(cuda);
  for (int step = 0; step < 3; ++step) steps.run();
  EXPECT_EQ(backend::cuda_host_waits(cuda), waits_before)
      << "a model step made the host wait for the device or freed a device buffer";
  const auto taken = cuda.take_deferred_loss_totals();
  EXPECT_EQ(taken.size(), 3u);
  for (const auto& totals : taken) EXPECT_TRUE(std::isfinite(totals.loss_sum));
}

TEST(CudaModelStep, Fp32StepQueuesWithoutAHostWaitOrAFree) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  expect_steps_without_a_host_wait(*cuda);
}

TEST(CudaModelStep, Bfloat16ActivationStepQueuesWithoutAHostWaitOrAFree) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const auto cuda = backend::make_cuda_backend(0);
  cuda->set_compute_precision(ComputePrecision::BFloat16);
  cuda->set_activation_precision(ComputePrecision::BFloat16);
  expect_steps_without_a_host_wait(*cuda);
}

}  // namespace
}  // namespace phalanx::testing
