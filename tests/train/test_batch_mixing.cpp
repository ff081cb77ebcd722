// Mixup and CutMix: the draws (probabilities, Beta(alpha, alpha), CutMix's box and its lam
// correction, the same for the same seed and step), the label weights summing to one in the loss,
// the mixed-target loss's gradient against finite differences, and BatchMixing on the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "loop/batch_mixing.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/core/tensor.hpp"

namespace phalanx::train {
namespace {

config::MixupConfig mixup_config(double mixup_alpha, double cutmix_alpha, double probability = 1.0,
                                 double switch_probability = 0.5) {
  return config::MixupConfig{mixup_alpha, cutmix_alpha, probability, switch_probability};
}

TEST(BatchMixing, BetaDrawsHaveTheBetaMeanAndVariance) {
  for (const double alpha : {0.2, 1.0, 4.0}) {
    RandomStream random(7, static_cast<std::uint64_t>(alpha * 10));
    const int draws = 40000;
    double sum = 0, sum_of_squares = 0;
    for (int index = 0; index < draws; ++index) {
      const double value = beta_symmetric(alpha, random);
      ASSERT_GE(value, 0.0);
      ASSERT_LE(value, 1.0);
      sum += value;
      sum_of_squares += value * value;
    }
    const double mean = sum / draws, variance = sum_of_squares / draws - mean * mean;
    // Beta(a, a): mean 1/2, variance 1 / (4 (2a + 1)); the bounds are ~5 standard errors.
    EXPECT_NEAR(mean, 0.5, 0.01) << "alpha " << alpha;
    EXPECT_NEAR(variance, 1.0 / (4.0 * (2.0 * alpha + 1.0)), 0.006) << "alpha " << alpha;
  }
}

TEST(BatchMixing, DrawsFollowTheProbabilityAndTheSwitch) {
  const config::MixupConfig mixup = mixup_config(0.8, 1.0, 0.6, 0.25);
  int mixed = 0, cutmix = 0;
  const int steps = 20000;
  for (int step = 0; step < steps; ++step) {
    const MixDraw draw = draw_mix(mixup, 42, step, 28, 28);
    if (!draw.mixed) {
      EXPECT_EQ(draw.own_weight, 1.0);
      continue;
    }
    ++mixed;
    cutmix += draw.kind == backend::MixKind::CutMix;
    ASSERT_GE(draw.own_weight, 0.0);
    ASSERT_LE(draw.own_weight, 1.0);
  }
  EXPECT_NEAR(static_cast<double>(mixed) / steps, 0.6, 0.02);
  EXPECT_NEAR(static_cast<double>(cutmix) / mixed, 0.25, 0.02);
  // One alpha alone decides the method.
  for (int step = 0; step < 50; ++step) {
    EXPECT_EQ(draw_mix(mixup_config(0.5, 0), 1, step, 8, 8).kind, backend::MixKind::Mixup);
    EXPECT_EQ(draw_mix(mixup_config(0, 0.5), 1, step, 8, 8).kind, backend::MixKind::CutMix);
  }
  EXPECT_FALSE(draw_mix(mixup_config(0, 0), 1, 3, 8, 8).mixed);
  EXPECT_FALSE(draw_mix(mixup_config(1, 1, 0.0), 1, 3, 8, 8).mixed);
}

TEST(BatchMixing, ADrawIsAFunctionOfSeedAndStepAlone) {
  const config::MixupConfig mixup = mixup_config(1.0, 1.0);
  int differing_steps = 0, differing_seeds = 0;
  for (int step = 0; step < 100; ++step) {
    const MixDraw first = draw_mix(mixup, 5, step, 28, 28), again = draw_mix(mixup, 5, step, 28, 28);
    EXPECT_EQ(first.own_weight, again.own_weight);
    EXPECT_EQ(first.box_top, again.box_top);
    EXPECT_EQ(first.box_left, again.box_left);
    differing_steps += first.own_weight != draw_mix(mixup, 5, step + 1, 28, 28).own_weight;
    differing_seeds += first.own_weight != draw_mix(mixup, 6, step, 28, 28).own_weight;
  }
  EXPECT_GT(differing_steps, 95);
  EXPECT_GT(differing_seeds, 95);
}

TEST(BatchMixing, CutMixBoxIsClippedAndLamIsItsTrueShare) {
  const int height = 28, width = 20;
  int unclipped = 0;
  for (int step = 0; step < 2000; ++step) {
    const MixDraw draw = draw_mix(mixup_config(0, 1.0), 9, step, height, width);
    ASSERT_TRUE(draw.mixed);
    ASSERT_EQ(draw.kind, backend::MixKind::CutMix);
    ASSERT_LE(0, draw.box_top);
    ASSERT_LE(draw.box_top, draw.box_bottom);
    ASSERT_LE(draw.box_bottom, height);
    ASSERT_LE(0, draw.box_left);
    ASSERT_LE(draw.box_left, draw.box_right);
    ASSERT_LE(draw.box_right, width);
    const double area =
        static_cast<double>(draw.box_bottom - draw.box_top) * (draw.box_right - draw.box_left);
    EXPECT_DOUBLE_EQ(draw.own_weight, 1.0 - area / (height * width));
  }
  // A box away from the edges keeps its full size, 2 * (int(side * sqrt(1 - lam)) / 2) per side.
  for (const double lam : {0.1, 0.37, 0.5, 0.81, 0.99}) {
    const MixDraw draw = cutmix_box(lam, height / 2, width / 2, height, width);
    const int cut_height = static_cast<int>(height * std::sqrt(1 - lam));
    const int cut_width = static_cast<int>(width * std::sqrt(1 - lam));
    EXPECT_EQ(draw.box_bottom - draw.box_top, 2 * (cut_height / 2)) << lam;
    EXPECT_EQ(draw.box_right - draw.box_left, 2 * (cut_width / 2)) << lam;
    unclipped += draw.box_bottom > draw.box_top;
  }
  EXPECT_GT(unclipped, 3);
  // At a corner the box loses what lies outside, and lam grows by as much.
  const MixDraw corner = cutmix_box(0.5, 0, 0, height, width);
  EXPECT_EQ(corner.box_top, 0);
  EXPECT_EQ(corner.box_left, 0);
  EXPECT_EQ(corner.box_bottom, static_cast<int>(height * std::sqrt(0.5)) / 2);
  EXPECT_EQ(corner.box_right, static_cast<int>(width * std::sqrt(0.5)) / 2);
  EXPECT_GT(corner.own_weight, 0.5);
}

// grad = (p - t) x scale: with unit scale the row sums of the gradient are 1 - sum_c t_c, zero
// exactly when the target's weights (own and partner label, smoothing) sum to one.
TEST(BatchMixing, LabelWeightsSumToOne) {
  const auto backend = backend::make_cpu_backend(1);
  const int batch = 9, classes = 6;
  Tensor logits(*backend, Shape{batch, classes}), grad(*backend, Shape{batch, classes});
  Tensor labels(*backend, Shape{batch}, DType::Int32), partners(*backend, Shape{batch}, DType::Int32);
  RandomStream random(3, 0);
  for (int index = 0; index < batch * classes; ++index) logits.data()[index] = random.next_uniform(-4, 4);
  for (int index = 0; index < batch; ++index)
    labels.data_as<std::int32_t>()[index] = static_cast<std::int32_t>(random.next_below(classes));
  for (int index = 0; index < batch; ++index)
    partners.data_as<std::int32_t>()[index] = labels.data_as<std::int32_t>()[batch - 1 - index];
  for (const config::MixupConfig& mixup : {mixup_config(0.4, 0), mixup_config(0, 1.0), mixup_config(1, 1)}) {
    for (int step = 0; step < 20; ++step) {
      const MixDraw draw = draw_mix(mixup, 11, step, 28, 28);
      ASSERT_TRUE(draw.mixed);
      for (const float smoothing : {0.0f, 0.1f}) {
        backend->softmax_cross_entropy(
            batch, classes, logits.data(), labels.data_as<std::int32_t>(), smoothing, 1.0f, grad.data(),
            {partners.data_as<std::int32_t>(), static_cast<float>(draw.own_weight)});
        for (int row = 0; row < batch; ++row) {
          const float* row_grad = grad.data() + row * classes;
          EXPECT_NEAR(std::accumulate(row_grad, row_grad + classes, 0.0), 0.0, 1e-6) << "row " << row;
        }
      }
    }
  }
}

// The loss of LabelMix against central differences of its own value (the sum over the batch).
TEST(BatchMixing, SoftTargetLossGradientMatchesFiniteDifferences) {
  const auto backend = backend::make_cpu_backend(1);
  const int batch = 5, classes = 7;
  const float own_weight = 0.35f, smoothing = 0.1f;
  Tensor logits(*backend, Shape{batch, classes}), grad(*backend, Shape{batch, classes});
  std::vector<std::int32_t> labels = {0, 3, 3, 6, 2}, partners(labels.rbegin(), labels.rend());
  RandomStream random(17, 1);
  for (int index = 0; index < batch * classes; ++index) logits.data()[index] = random.next_uniform(-3, 3);
  const backend::LabelMix mix{partners.data(), own_weight};
  backend->softmax_cross_entropy(batch, classes, logits.data(), labels.data(), smoothing, 1.0f, grad.data(),
                                 mix);
  const std::vector<float> analytic(grad.data(), grad.data() + batch * classes);
  const float step = 1e-2f;
  for (int index = 0; index < batch * classes; ++index) {
    const float kept = logits.data()[index];
    logits.data()[index] = kept + step;
    const double above = backend
                             ->softmax_cross_entropy(batch, classes, logits.data(), labels.data(), smoothing,
                                                     1.0f, nullptr, mix)
                             .loss_sum;
    logits.data()[index] = kept - step;
    const double below = backend
                             ->softmax_cross_entropy(batch, classes, logits.data(), labels.data(), smoothing,
                                                     1.0f, nullptr, mix)
                             .loss_sum;
    logits.data()[index] = kept;
    // Central differences of a smooth function: error ~ step^2 x the third derivative (< 1).
    EXPECT_NEAR(analytic[static_cast<std::size_t>(index)], (above - below) / (2.0 * step), 2e-4) << index;
  }
}

TEST(BatchMixing, CorrectCountsTheLabelOfTheLargerWeight) {
  const auto backend = backend::make_cpu_backend(1);
  const int classes = 3;
  // Row 0 predicts class 2, row 1 predicts class 0.
  std::vector<float> logits = {0, 1, 5, 4, 1, 0};
  std::vector<std::int32_t> labels = {0, 2}, partners = {2, 0};
  EXPECT_EQ(backend
                ->softmax_cross_entropy(2, classes, logits.data(), labels.data(), 0, 1, nullptr,
                                        {partners.data(), 0.3f})
                .correct,
            2);
  EXPECT_EQ(backend
                ->softmax_cross_entropy(2, classes, logits.data(), labels.data(), 0, 1, nullptr,
                                        {partners.data(), 0.7f})
                .correct,
            0);
}

TEST(BatchMixing, AppliesTheStepsDrawOnTheCpuBackend) {
  const auto backend = backend::make_cpu_backend(1);
  const int batch = 4, height = 6, width = 5, channels = 2;
  const Shape shape{batch, height, width, channels};
  Tensor input(*backend, shape), original(*backend, shape);
  Tensor labels(*backend, Shape{batch}, DType::Int32);
  for (std::int64_t index = 0; index < shape.elements(); ++index)
    original.data()[index] = static_cast<float>(index % 97) * 0.125f - 3.0f;
  for (int index = 0; index < batch; ++index) labels.data_as<std::int32_t>()[index] = index + 1;
  const config::MixupConfig mixup = mixup_config(1.0, 1.0, 0.5);
  BatchMixing mixing(*backend, mixup, 21, batch);
  int mixed_steps = 0;
  for (int step = 0; step < 30; ++step) {
    std::copy(original.data(), original.data() + shape.elements(), input.data());
    const backend::LabelMix mix = mixing.apply(input, labels.data_as<std::int32_t>(), step);
    const MixDraw draw = draw_mix(mixup, 21, step, height, width);
    if (!draw.mixed) {
      EXPECT_EQ(mix.partner_labels, nullptr);
      EXPECT_TRUE(std::equal(input.data(), input.data() + shape.elements(), original.data()));
      continue;
    }
    ++mixed_steps;
    ASSERT_NE(mix.partner_labels, nullptr);
    EXPECT_EQ(mix.own_weight, static_cast<float>(draw.own_weight));
    for (int index = 0; index < batch; ++index) EXPECT_EQ(mix.partner_labels[index], batch - index);
    // Sample 0's first element: blended, or taken from sample 3 inside a CutMix box.
    const float own = original.data()[0], partner = original.data()[3 * shape.elements() / batch];
    const bool in_box = draw.box_top == 0 && draw.box_left == 0 && draw.box_bottom > 0 && draw.box_right > 0;
    const float expected =
        draw.kind == backend::MixKind::Mixup
            ? own * static_cast<float>(draw.own_weight) + partner * static_cast<float>(1.0 - draw.own_weight)
            : (in_box ? partner : own);
    EXPECT_FLOAT_EQ(input.data()[0], expected) << "step " << step;
  }
  EXPECT_GT(mixed_steps, 5);
}

}  // namespace
}  // namespace phalanx::train
