// Tests of the CPU backend's softmax cross-entropy (torch.nn.CrossEntropyLoss semantics with
// label smoothing) and prediction, against double references and finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

struct ReferenceLoss {
  std::vector<double> loss;         // per sample
  std::vector<double> grad_logits;  // of the sum of losses
};

// loss_i = (1 - e) * (-log p_y) + e * mean_c(-log p_c), computed in double with log-sum-exp.
ReferenceLoss reference(int batch, int classes, const std::vector<float>& logits,
                        const std::vector<std::int32_t>& labels, double smoothing) {
  ReferenceLoss result;
  for (int n = 0; n < batch; ++n) {
    const float* row = logits.data() + std::size_t(n) * classes;
    double max = row[0];
    for (int c = 1; c < classes; ++c) max = std::max(max, static_cast<double>(row[c]));
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(row[c] - max);
    const double log_normalizer = max + std::log(sum);
    double mean_negative_log = 0;
    for (int c = 0; c < classes; ++c) mean_negative_log += (log_normalizer - row[c]) / classes;
    result.loss.push_back((1 - smoothing) * (log_normalizer - row[labels[n]]) +
                          smoothing * mean_negative_log);
    for (int c = 0; c < classes; ++c) {
      const double target = (c == labels[n] ? 1 - smoothing : 0.0) + smoothing / classes;
      result.grad_logits.push_back(std::exp(row[c] - log_normalizer) - target);
    }
  }
  return result;
}

std::vector<std::int32_t> random_labels(int batch, int classes, std::uint64_t stream) {
  RandomStream random(7, stream);
  std::vector<std::int32_t> labels(batch);
  for (auto& label : labels) label = static_cast<std::int32_t>(random.next_below(classes));
  return labels;
}

// Loss sums are accumulated in double per sample: 1e-6 relative. Gradients are float casts of
// double values: 1e-6.
TEST(CpuLoss, MatchesReferenceWithAndWithoutLabelSmoothing) {
  auto backend = make_test_backend();
  const int batch = 37, classes = 10;
  const auto logits = random_values(std::size_t(batch) * classes, 1, -4.0f, 4.0f);
  const auto labels = random_labels(batch, classes, 2);
  for (const float smoothing : {0.0f, 0.1f, 0.3f}) {
    const float gradient_scale = 1.0f / 128;
    std::vector<float> grad_logits(logits.size(), NAN);
    const backend::LossTotals totals = backend->softmax_cross_entropy(
        batch, classes, logits.data(), labels.data(), smoothing, gradient_scale, grad_logits.data());
    const ReferenceLoss expected = reference(batch, classes, logits, labels, smoothing);
    double expected_sum = 0;
    for (const double loss : expected.loss) expected_sum += loss;
    EXPECT_NEAR(totals.loss_sum, expected_sum, 1e-6 * expected_sum) << "smoothing " << smoothing;
    std::vector<double> expected_grad = expected.grad_logits;
    for (double& value : expected_grad) value *= gradient_scale;
    EXPECT_LT(max_error(grad_logits, expected_grad), 1e-6) << "smoothing " << smoothing;

    std::int64_t expected_correct = 0;
    for (int n = 0; n < batch; ++n) {
      const float* row = logits.data() + std::size_t(n) * classes;
      expected_correct += std::max_element(row, row + classes) - row == labels[n];
    }
    EXPECT_EQ(totals.correct, expected_correct);
  }
}

TEST(CpuLoss, NullGradientForEvaluation) {
  auto backend = make_test_backend();
  const std::vector<float> logits{1.0f, 2.0f, 0.5f, -1.0f, 0.0f, 3.0f};
  const std::vector<std::int32_t> labels{1, 0};
  const backend::LossTotals totals =
      backend->softmax_cross_entropy(2, 3, logits.data(), labels.data(), 0.0f, 1.0f, nullptr);
  const ReferenceLoss expected = reference(2, 3, logits, labels, 0.0);
  EXPECT_NEAR(totals.loss_sum, expected.loss[0] + expected.loss[1], 1e-9);
  EXPECT_EQ(totals.correct, 1);
}

// Logits of 1e4 overflow exp() in float and double; log-sum-exp around the row maximum keeps the
// loss finite and exact.
TEST(CpuLoss, StableForLargeLogits) {
  auto backend = make_test_backend();
  const std::vector<float> logits{10000.0f, 9990.0f, -10000.0f, 5000.0f, 5000.0f, 4999.0f};
  const std::vector<std::int32_t> labels{1, 2};
  std::vector<float> grad_logits(6, NAN);
  const backend::LossTotals totals =
      backend->softmax_cross_entropy(2, 3, logits.data(), labels.data(), 0.1f, 1.0f, grad_logits.data());
  const ReferenceLoss expected = reference(2, 3, logits, labels, 0.1);
  EXPECT_TRUE(std::isfinite(totals.loss_sum));
  EXPECT_NEAR(totals.loss_sum, expected.loss[0] + expected.loss[1],
              1e-6 * (expected.loss[0] + expected.loss[1]));
  EXPECT_LT(max_error(grad_logits, expected.grad_logits), 1e-6);
}

// torch.argmax returns the first of equal maxima; a tie with the label first counts as correct.
TEST(CpuLoss, FirstMaximumWinsTies) {
  auto backend = make_test_backend();
  const std::vector<float> logits{1.0f, 3.0f, 3.0f, 2.0f, 2.0f, 0.0f};
  const std::vector<std::int32_t> labels{1, 1};
  const backend::LossTotals totals =
      backend->softmax_cross_entropy(2, 3, logits.data(), labels.data(), 0.0f, 1.0f, nullptr);
  EXPECT_EQ(totals.correct, 1);
  std::vector<std::int32_t> predicted(2, -1);
  backend->predict(2, 3, logits.data(), predicted.data(), nullptr);
  EXPECT_EQ(predicted, (std::vector<std::int32_t>{1, 0}));
}

TEST(CpuLoss, PredictArgMaxAndSoftmax) {
  auto backend = make_test_backend();
  const int batch = 9, classes = 7;
  const auto logits = random_values(std::size_t(batch) * classes, 3, -5.0f, 5.0f);
  std::vector<std::int32_t> predicted(batch, -1);
  std::vector<float> probabilities(logits.size(), NAN);
  backend->predict(batch, classes, logits.data(), predicted.data(), probabilities.data());
  for (int n = 0; n < batch; ++n) {
    const float* row = logits.data() + std::size_t(n) * classes;
    EXPECT_EQ(predicted[n], std::max_element(row, row + classes) - row);
    double max = *std::max_element(row, row + classes), sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(row[c] - max);
    double probability_sum = 0;
    for (int c = 0; c < classes; ++c) {
      EXPECT_NEAR(probabilities[std::size_t(n) * classes + c], std::exp(row[c] - max) / sum, 1e-7);
      probability_sum += probabilities[std::size_t(n) * classes + c];
    }
    EXPECT_NEAR(probability_sum, 1.0, 1e-6);
  }
}

// Finite differences of the returned loss sum with respect to the logits (gradient_scale 1).
// Smooth in the logits; eps 1e-2 gives ~1e-5 truncation error, the double loss sum of float
// logits has no rounding to speak of; tolerance 1e-2 relative.
TEST(CpuLossGradient, MatchesFiniteDifferences) {
  auto backend = make_test_backend();
  const int batch = 4, classes = 5;
  auto logits = random_values(std::size_t(batch) * classes, 4, -2.0f, 2.0f);
  const auto labels = random_labels(batch, classes, 5);
  for (const float smoothing : {0.0f, 0.2f}) {
    std::vector<float> grad_logits(logits.size());
    backend->softmax_cross_entropy(batch, classes, logits.data(), labels.data(), smoothing, 1.0f,
                                   grad_logits.data());
    const auto objective = [&] {
      return backend
          ->softmax_cross_entropy(batch, classes, logits.data(), labels.data(), smoothing, 1.0f, nullptr)
          .loss_sum;
    };
    EXPECT_LT(gradient_check_error(logits, grad_logits, objective, 1e-2f), 1e-2) << "smoothing " << smoothing;
  }
}

// The deferred loss of training steps: each step's entry is exactly what the synchronous call
// returns for the same input, in call order, its gradient is the same bits, and a take empties the
// record (so the trainer's sums over a log interval or an epoch equal the per-step sums).
TEST(CpuLossDeferred, TotalsEqualThePerStepSums) {
  auto backend = make_test_backend();
  const int batch = 29, classes = 7;
  std::vector<std::vector<float>> step_logits;
  std::vector<std::vector<std::int32_t>> step_labels;
  for (std::uint64_t step = 0; step < 5; ++step) {
    step_logits.push_back(random_values(std::size_t(batch) * classes, 10 + step, -3.0f, 3.0f));
    step_labels.push_back(random_labels(batch, classes, 20 + step));
  }
  EXPECT_TRUE(backend->take_deferred_loss_totals().empty());
  std::vector<backend::LossTotals> expected;
  double expected_loss_sum = 0;
  std::int64_t expected_correct = 0;
  for (std::size_t step = 0; step < step_logits.size(); ++step) {
    std::vector<float> grad_deferred(step_logits[step].size(), NAN), grad_now(step_logits[step].size(), NAN);
    backend->softmax_cross_entropy_deferred(batch, classes, step_logits[step].data(),
                                            step_labels[step].data(), 0.1f, 1.0f / 64, grad_deferred.data());
    expected.push_back(backend->softmax_cross_entropy(batch, classes, step_logits[step].data(),
                                                      step_labels[step].data(), 0.1f, 1.0f / 64,
                                                      grad_now.data()));
    EXPECT_EQ(grad_deferred, grad_now) << "step " << step;
    expected_loss_sum += expected.back().loss_sum;
    expected_correct += expected.back().correct;
  }
  const std::vector<backend::LossTotals> taken = backend->take_deferred_loss_totals();
  ASSERT_EQ(taken.size(), expected.size());
  double loss_sum = 0;
  std::int64_t correct = 0;
  for (std::size_t step = 0; step < taken.size(); ++step) {
    EXPECT_EQ(taken[step].loss_sum, expected[step].loss_sum) << "step " << step;
    EXPECT_EQ(taken[step].correct, expected[step].correct) << "step " << step;
    EXPECT_GT(taken[step].loss_sum, 0.0);
    loss_sum += taken[step].loss_sum;
    correct += taken[step].correct;
  }
  EXPECT_EQ(loss_sum, expected_loss_sum);
  EXPECT_EQ(correct, expected_correct);
  EXPECT_TRUE(backend->take_deferred_loss_totals().empty()) << "a take forgets what it handed over";
}

}  // namespace
}  // namespace phalanx::testing
