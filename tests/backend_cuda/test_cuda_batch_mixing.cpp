// Mixup and CutMix on the CUDA backend against the CPU backend on the same batch and draw: the
// mixed images (bit for bit: both round each product and the sum on their own), the partner
// labels, and the mixed-target loss with its gradient, synchronous and deferred.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda_test_support.hpp"

namespace phalanx::testing {
namespace {

std::vector<float> random_floats(std::size_t count, std::uint64_t stream) {
  RandomStream random(23, stream);
  std::vector<float> values(count);
  for (float& value : values) value = random.next_uniform(-3.0f, 3.0f);
  return values;
}

// The batch after mix_batch on `b`, and the partner labels it wrote.
std::pair<std::vector<float>, std::vector<std::int32_t>> mixed_on(backend::Backend& b,
                                                                  const backend::MixGeometry& geometry) {
  const std::size_t count =
      static_cast<std::size_t>(geometry.batch) * geometry.height * geometry.width * geometry.channels;
  Tensor images = upload(b, random_floats(count, 1));
  Tensor labels = upload(b, random_labels(geometry.batch, 10, 2));
  Tensor partners = upload(b, std::vector<std::int32_t>(static_cast<std::size_t>(geometry.batch), -1));
  b.mix_batch(geometry, images.data(), labels.data_as<std::int32_t>(), partners.data_as<std::int32_t>());
  return {download(b, images), download<std::int32_t>(b, partners)};
}

TEST(CudaBatchMixing, MixupAndCutMixEqualTheCpuBitForBit) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const std::vector<backend::MixGeometry> geometries = {
      {.batch = 33,
       .height = 9,
       .width = 7,
       .channels = 3,
       .kind = backend::MixKind::Mixup,
       .own_weight = 0.3137f,
       .partner_weight = static_cast<float>(1.0 - double{0.3137f})},
      {.batch = 64,
       .height = 28,
       .width = 28,
       .channels = 1,
       .kind = backend::MixKind::Mixup,
       .own_weight = 0.91f,
       .partner_weight = 0.09f},
      {.batch = 33,
       .height = 9,
       .width = 7,
       .channels = 3,
       .kind = backend::MixKind::CutMix,
       .box_top = 0,
       .box_bottom = 4,
       .box_left = 2,
       .box_right = 7},
      {.batch = 64,
       .height = 28,
       .width = 28,
       .channels = 1,
       .kind = backend::MixKind::CutMix,
       .box_top = 5,
       .box_bottom = 19,
       .box_left = 0,
       .box_right = 14},
      {.batch = 8,
       .height = 5,
       .width = 5,
       .channels = 2,
       .kind = backend::MixKind::CutMix,
       .box_top = 2,
       .box_bottom = 2,
       .box_left = 0,
       .box_right = 3},  // an empty box
  };
  for (const backend::MixGeometry& geometry : geometries) {
    SCOPED_TRACE("batch " + std::to_string(geometry.batch) +
                 (geometry.kind == backend::MixKind::Mixup ? " mixup" : " cutmix"));
    const auto [cpu_images, cpu_partners] = mixed_on(cpu_backend(), geometry);
    const auto [cuda_images, cuda_partners] = mixed_on(cuda_backend(), geometry);
    EXPECT_EQ(cuda_partners, cpu_partners);
    ASSERT_EQ(cuda_images.size(), cpu_images.size());
    int differing = 0;
    for (std::size_t index = 0; index < cpu_images.size(); ++index)
      differing += cuda_images[index] != cpu_images[index];
    EXPECT_EQ(differing, 0);
  }
}

TEST(CudaBatchMixing, MixedTargetLossEqualsTheCpu) {
  PHALANX_SKIP_WITHOUT_CUDA();
  backend::Backend& cuda = cuda_backend();
  backend::Backend& cpu = cpu_backend();
  const int batch = 130, classes = 10;
  const auto logits = random_floats(std::size_t(batch) * classes, 3);
  const auto labels = random_labels(batch, classes, 4);
  const std::vector<std::int32_t> partners(labels.rbegin(), labels.rend());
  const Tensor device_logits = upload(cuda, logits);
  const Tensor device_labels = upload(cuda, labels);
  const Tensor device_partners = upload(cuda, partners);
  (void)cuda.take_deferred_loss_totals();
  for (const float own_weight : {0.27f, 0.5f, 0.83f}) {
    SCOPED_TRACE("own weight " + std::to_string(own_weight));
    Tensor grad = empty_floats(cuda, std::int64_t(batch) * classes);
    const backend::LossTotals on_cuda = cuda.softmax_cross_entropy(
        batch, classes, device_logits.data(), device_labels.data_as<std::int32_t>(), 0.1f, 1.0f / batch,
        grad.data(), {device_partners.data_as<std::int32_t>(), own_weight});
    cuda.softmax_cross_entropy_deferred(batch, classes, device_logits.data(),
                                        device_labels.data_as<std::int32_t>(), 0.1f, 1.0f / batch, nullptr,
                                        {device_partners.data_as<std::int32_t>(), own_weight});
    std::vector<float> cpu_grad(logits.size());
    const backend::LossTotals on_cpu =
        cpu.softmax_cross_entropy(batch, classes, logits.data(), labels.data(), 0.1f, 1.0f / batch,
                                  cpu_grad.data(), {partners.data(), own_weight});
    EXPECT_NEAR(on_cuda.loss_sum, on_cpu.loss_sum, 1e-9 * on_cpu.loss_sum);
    EXPECT_EQ(on_cuda.correct, on_cpu.correct);
    const auto cuda_grad = download(cuda, grad);
    for (std::size_t index = 0; index < cpu_grad.size(); ++index)
      ASSERT_NEAR(cuda_grad[index], cpu_grad[index], 1e-7) << index;
    const auto taken = cuda.take_deferred_loss_totals();
    ASSERT_EQ(taken.size(), 1u);
    EXPECT_EQ(taken[0].loss_sum, on_cuda.loss_sum);
    EXPECT_EQ(taken[0].correct, on_cuda.correct);
  }
}

}  // namespace
}  // namespace phalanx::testing
