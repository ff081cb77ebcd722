// Softmax cross-entropy as torch.nn.CrossEntropyLoss(label_smoothing=e) computes it per sample:
// loss = (1 - e) * (-log p_y) + e * mean_c(-log p_c), with log p_c = z_c - logsumexp(z) taken
// after subtracting the row maximum, so large logits neither overflow nor lose the loss. Mixed
// targets (LabelMix, weight w) give w x that loss for the own label + (1 - w) x for the partner's,
// which is -sum_c t_c log p_c for timm's mixup_target t, and the gradient p - t. Under bf16
// activations the logits are widened to fp32 first (exactly) and the loss computed in fp32 as
// always; the logits' gradient is rounded to bf16 once at the end.
#include "loss.hpp"

#include <cmath>

#include "activation_element.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

namespace {

// Index of the first maximum (torch.argmax on CPU returns the first one too).
int first_arg_max(const float* row, int classes) {
  int best = 0;
  for (int c = 1; c < classes; ++c)
    if (row[c] > row[best]) best = c;
  return best;
}

// log(sum_c exp(z_c)) evaluated around the row maximum, in double.
double log_sum_exp(const float* row, int classes, float row_max) {
  double sum = 0;
  for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]) - row_max);
  return row_max + std::log(sum);
}

// Rows per thread below which the loop stays on one thread (typical batches are tiny here).
constexpr std::int64_t parallel_elements = 65536;

}  // namespace

void CrossEntropy::set_storage(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU loss reads logits in fp32 or bf16");
  storage_ = precision;
}

const float* CrossEntropy::widened_logits(std::int64_t count, const float* logits) {
  if (storage_ != ComputePrecision::BFloat16) return logits;
  widened_logits_.resize(static_cast<std::size_t>(count));
  const Bf16* stored = as_bf16(logits);
  for (std::int64_t i = 0; i < count; ++i) widened_logits_[static_cast<std::size_t>(i)] = widen(stored[i]);
  return widened_logits_.data();
}

LossTotals CrossEntropy::softmax_cross_entropy(int batch, int classes, const float* logits,
                                               const std::int32_t* labels, float label_smoothing,
                                               float gradient_scale, float* grad_logits,
                                               const LabelMix& mix) {
  const std::int64_t count = static_cast<std::int64_t>(batch) * classes;
  const float* fp32_logits = widened_logits(count, logits);
  if (storage_ != ComputePrecision::BFloat16 || !grad_logits)
    return softmax_cross_entropy_fp32(batch, classes, fp32_logits, labels, label_smoothing, gradient_scale,
                                      grad_logits, mix);
  widened_grad_logits_.resize(static_cast<std::size_t>(count));
  const LossTotals totals = softmax_cross_entropy_fp32(batch, classes, fp32_logits, labels, label_smoothing,
                                                       gradient_scale, widened_grad_logits_.data(), mix);
  Bf16* stored_grad = as_bf16(grad_logits);
  for (std::int64_t i = 0; i < count; ++i)
    narrow_into(stored_grad[i], widened_grad_logits_[static_cast<std::size_t>(i)]);
  return totals;
}

LossTotals CrossEntropy::softmax_cross_entropy_fp32(int batch, int classes, const float* logits,
                                                    const std::int32_t* labels, float label_smoothing,
                                                    float gradient_scale, float* grad_logits,
                                                    const LabelMix& mix) {
  const std::int32_t* partner_labels = mix.partner_labels;
  for (int row = 0; row < batch; ++row) {
    PHALANX_CHECK(labels[row] >= 0 && labels[row] < classes, "label ", labels[row], " of sample ", row,
                  " is outside [0, ", classes, ")");
    if (partner_labels)
      PHALANX_CHECK(partner_labels[row] >= 0 && partner_labels[row] < classes, "label ", partner_labels[row],
                    " of sample ", row, "'s mixing partner is outside [0, ", classes, ")");
  }
  // Without a partner, the own label takes the whole weight (and the partner term vanishes).
  const double own_weight = partner_labels ? mix.own_weight : 1.0;
  sample_loss_.resize(batch);
  sample_correct_.resize(batch);
  const double smoothing = label_smoothing;
  const double uniform_target = smoothing / classes;
#pragma omp parallel for schedule(static) if (static_cast <std::int64_t>(batch) * classes >= \
                                              parallel_elements)
  for (int row = 0; row < batch; ++row) {
    const float* row_logits = logits + static_cast<std::int64_t>(row) * classes;
    const int label = labels[row];
    const int partner = partner_labels ? partner_labels[row] : label;
    const int predicted = first_arg_max(row_logits, classes);
    const double log_normalizer = log_sum_exp(row_logits, classes, row_logits[predicted]);
    double logit_sum = 0;
    for (int c = 0; c < classes; ++c) logit_sum += row_logits[c];
    const double label_term = own_weight * (log_normalizer - row_logits[label]) +
                              (1.0 - own_weight) * (log_normalizer - row_logits[partner]);
    const double mean_term = log_normalizer - logit_sum / classes;
    sample_loss_[row] = (1.0 - smoothing) * label_term + smoothing * mean_term;
    sample_correct_[row] = predicted == (own_weight >= 0.5 ? label : partner);
    if (grad_logits) {
      float* row_grad = grad_logits + static_cast<std::int64_t>(row) * classes;
      for (int c = 0; c < classes; ++c) {
        const double probability = std::exp(static_cast<double>(row_logits[c]) - log_normalizer);
        const double target = uniform_target + (c == label ? (1.0 - smoothing) * own_weight : 0.0) +
                              (c == partner ? (1.0 - smoothing) * (1.0 - own_weight) : 0.0);
        row_grad[c] = static_cast<float>((probability - target) * gradient_scale);
      }
    }
  }
  LossTotals totals;
  for (int row = 0; row < batch; ++row) {
    totals.loss_sum += sample_loss_[row];
    totals.correct += sample_correct_[row];
  }
  return totals;
}

void CrossEntropy::predict(int batch, int classes, const float* stored_logits, std::int32_t* predicted_class,
                           float* probabilities) {
  const float* logits = widened_logits(static_cast<std::int64_t>(batch) * classes, stored_logits);
#pragma omp parallel for schedule(static) if (static_cast <std::int64_t>(batch) * classes >= \
                                              parallel_elements)
  for (int row = 0; row < batch; ++row) {
    const float* row_logits = logits + static_cast<std::int64_t>(row) * classes;
    const int predicted = first_arg_max(row_logits, classes);
    predicted_class[row] = predicted;
    if (probabilities) {
      const double log_normalizer = log_sum_exp(row_logits, classes, row_logits[predicted]);
      float* row_probabilities = probabilities + static_cast<std::int64_t>(row) * classes;
      for (int c = 0; c < classes; ++c)
        row_probabilities[c] =
            static_cast<float>(std::exp(static_cast<double>(row_logits[c]) - log_normalizer));
    }
  }
}

}  // namespace phalanx::backend::cpu
