// Mixup and CutMix against timm on the same tensors and lam: golden/batch_mixing.json, written by
// make_batch_mixing_golden.py (which says how), holds timm's mixed batches (Mixup._mix_batch, with
// the CutMix box centre given), the box and corrected lam, and timm's SoftTargetCrossEntropy of
// mixup_target with its gradient, so these tests need no PyTorch.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loop/batch_mixing.hpp"
#include "phalanx/core/tensor.hpp"

namespace phalanx::train {
namespace {

using Json = nlohmann::json;

Json read_golden() {
  const std::string path = std::string(PHALANX_SOURCE_DIR) + "/tests/train/golden/batch_mixing.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return Json::parse(in);
}

TEST(BatchMixingGolden, MixedBatchesAreTimmsBitForBit) {
  const Json golden = read_golden();
  const auto backend = backend::make_cpu_backend(1);
  ASSERT_GE(golden["mixing"].size(), 5u);
  for (const Json& test : golden["mixing"]) {
    const int batch = test["batch"], height = test["height"], width = test["width"],
              channels = test["channels"];
    const double lam = test["lam"];
    SCOPED_TRACE(std::string(test["kind"]) + " batch " + std::to_string(batch) + " lam " +
                 std::to_string(lam));
    MixDraw draw{.mixed = true, .kind = backend::MixKind::Mixup, .own_weight = lam};
    if (test["kind"] == "cutmix") {
      draw = cutmix_box(lam, test["centre_y"], test["centre_x"], height, width);
      const std::vector<int> box = test["box"];
      EXPECT_EQ((std::vector<int>{draw.box_top, draw.box_bottom, draw.box_left, draw.box_right}), box);
      EXPECT_DOUBLE_EQ(draw.own_weight, test["own_weight"].get<double>());
    }
    const Shape shape{batch, height, width, channels};
    Tensor images(*backend, shape);
    Tensor labels(*backend, Shape{batch}, DType::Int32), partners(*backend, Shape{batch}, DType::Int32);
    const std::vector<float> input = test["input"], expected = test["expected"];
    ASSERT_EQ(input.size(), static_cast<std::size_t>(shape.elements()));
    std::copy(input.begin(), input.end(), images.data());
    for (int index = 0; index < batch; ++index) labels.data_as<std::int32_t>()[index] = 10 + index;
    const backend::MixGeometry geometry = mix_geometry(draw, shape);
    backend->mix_batch(geometry, images.data(), labels.data_as<std::int32_t>(),
                       partners.data_as<std::int32_t>());
    int differing = 0;
    for (std::size_t index = 0; index < expected.size(); ++index)
      differing += images.data()[index] != expected[index];
    EXPECT_EQ(differing, 0) << "elements that differ from timm's";
    for (int index = 0; index < batch; ++index)
      EXPECT_EQ(partners.data_as<std::int32_t>()[index], 10 + batch - 1 - index);
  }
}

TEST(BatchMixingGolden, SoftTargetLossIsTimmsOnMixupTarget) {
  const Json golden = read_golden();
  const auto backend = backend::make_cpu_backend(1);
  ASSERT_GE(golden["loss"].size(), 4u);
  for (const Json& test : golden["loss"]) {
    const int batch = test["batch"], classes = test["classes"];
    const double lam = test["lam"], smoothing = test["smoothing"];
    SCOPED_TRACE("lam " + std::to_string(lam) + " smoothing " + std::to_string(smoothing));
    const std::vector<float> logits = test["logits"];
    const std::vector<std::int32_t> labels = test["labels"];
    const std::vector<std::int32_t> partners(labels.rbegin(), labels.rend());
    const std::vector<double> expected_grad = test["grad_logits"];
    Tensor grad(*backend, Shape{batch, classes});
    const backend::LossTotals totals = backend->softmax_cross_entropy(
        batch, classes, logits.data(), labels.data(), static_cast<float>(smoothing), 1.0f, grad.data(),
        {partners.data(), static_cast<float>(lam)});
    EXPECT_NEAR(totals.loss_sum, test["loss_sum"].get<double>(), 1e-6);
    for (std::size_t index = 0; index < expected_grad.size(); ++index)
      EXPECT_NEAR(grad.data()[index], expected_grad[index], 1e-6) << index;
  }
}

}  // namespace
}  // namespace phalanx::train
