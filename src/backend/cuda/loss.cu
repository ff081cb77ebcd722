// Softmax cross-entropy and prediction kernels (see loss.hpp). Per sample, as the CPU backend:
// loss = (1 - e) * (lse - z_y) + e * (lse - mean_c z_c), lse = max + log(sum_c exp(z_c - max))
// in double; grad_c = (softmax_c - target_c) * gradient_scale, target = e / C + (1 - e) [c == y].
// Mixed targets (LabelMix, own weight w, partner label y'): the (lse - z_y) term and the one-hot
// part of the target are w x the own label's plus (1 - w) x the partner's, as in the CPU backend.
#include <cfloat>
#include <climits>

#include "cuda_check.hpp"
#include "loss.hpp"
#include "phalanx/core/error.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {

namespace {

constexpr unsigned int full_warp = 0xFFFFFFFFu;
constexpr int warp_size = 32;
constexpr int rows_per_block = 4;  // one warp per row, 128 threads per block
constexpr int totals_threads = 256;

struct Totals {
  double loss_sum;
  long long correct;
  int first_invalid_row;  // INT_MAX when every label is valid
  int invalid_label;
};

struct ArgMax {
  float value;
  int index;
};

// The row's first maximum, known to every lane of the warp: lanes scan their classes in order
// (strict > keeps the first), then ties across lanes go to the smaller index.
template <typename Stored>
__device__ ArgMax row_arg_max(const Stored* row, int classes, int lane) {
  ArgMax best{-INFINITY, INT_MAX};
  for (int c = lane; c < classes; c += warp_size) {
    const float value = widen(row[c]);
    if (best.index == INT_MAX || value > best.value) best = {value, c};
  }
  for (int offset = warp_size / 2; offset > 0; offset /= 2) {
    const float other_value = __shfl_down_sync(full_warp, best.value, offset);
    const int other_index = __shfl_down_sync(full_warp, best.index, offset);
    if (other_index != INT_MAX && (best.index == INT_MAX || other_value > best.value ||
                                   (other_value == best.value && other_index < best.index)))
      best = {other_value, other_index};
  }
  return {__shfl_sync(full_warp, best.value, 0), __shfl_sync(full_warp, best.index, 0)};
}

__device__ double warp_sum(double value) {
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    value += __shfl_down_sync(full_warp, value, offset);
  return __shfl_sync(full_warp, value, 0);
}

// log(sum_c exp(z_c)) around the row maximum, in double.
template <typename Stored>
__device__ double row_log_sum_exp(const Stored* row, int classes, int lane, float row_max) {
  double sum = 0;
  for (int c = lane; c < classes; c += warp_size) sum += exp(static_cast<double>(widen(row[c])) - row_max);
  return row_max + log(warp_sum(sum));
}

template <typename Stored>
__global__ void cross_entropy_rows_kernel(int batch, int classes, const Stored* logits,
                                          const std::int32_t* labels, const std::int32_t* partner_labels,
                                          double own_weight, double smoothing, double gradient_scale,
                                          Stored* grad_logits, double* sample_loss,
                                          std::uint8_t* sample_outcome) {
  const int lane = threadIdx.x % warp_size;
  const int row = blockIdx.x * rows_per_block + threadIdx.x / warp_size;
  if (row >= batch) return;  // whole warps leave together, so the shuffles below stay full
  const Stored* row_logits = logits + static_cast<std::int64_t>(row) * classes;
  const int label = labels[row];
  const int partner = partner_labels ? partner_labels[row] : label;
  if (label < 0 || label >= classes || partner < 0 || partner >= classes) {
    if (lane == 0) {
      sample_loss[row] = 0;
      sample_outcome[row] = 2;
    }
    return;
  }
  const ArgMax best = row_arg_max(row_logits, classes, lane);
  const double log_normalizer = row_log_sum_exp(row_logits, classes, lane, best.value);
  double logit_sum = 0;
  for (int c = lane; c < classes; c += warp_size) logit_sum += widen(row_logits[c]);
  logit_sum = warp_sum(logit_sum);
  if (lane == 0) {
    const double label_term = own_weight * (log_normalizer - widen(row_logits[label])) +
                              (1.0 - own_weight) * (log_normalizer - widen(row_logits[partner]));
    const double mean_term = log_normalizer - logit_sum / classes;
    sample_loss[row] = (1.0 - smoothing) * label_term + smoothing * mean_term;
    sample_outcome[row] = best.index == (own_weight >= 0.5 ? label : partner) ? 1 : 0;
  }
  if (grad_logits) {
    const double uniform_target = smoothing / classes;
    Stored* row_grad = grad_logits + static_cast<std::int64_t>(row) * classes;
    for (int c = lane; c < classes; c += warp_size) {
      const double probability = exp(static_cast<double>(widen(row_logits[c])) - log_normalizer);
      const double target = uniform_target + (c == label ? (1.0 - smoothing) * own_weight : 0.0) +
                            (c == partner ? (1.0 - smoothing) * (1.0 - own_weight) : 0.0);
      row_grad[c] = narrow<Stored>(static_cast<float>((probability - target) * gradient_scale));
    }
  }
}

// One block: each thread sums a fixed stride of samples, then a fixed tree joins the threads.
__global__ void cross_entropy_totals_kernel(int batch, const double* sample_loss,
                                            const std::uint8_t* sample_outcome, const std::int32_t* labels,
                                            Totals* totals) {
  __shared__ double loss[totals_threads];
  __shared__ long long correct[totals_threads];
  __shared__ int first_invalid[totals_threads];
  double thread_loss = 0;
  long long thread_correct = 0;
  int thread_invalid = INT_MAX;
  for (int row = threadIdx.x; row < batch; row += totals_threads) {
    thread_loss += sample_loss[row];
    thread_correct += sample_outcome[row] == 1;
    if (sample_outcome[row] == 2 && row < thread_invalid) thread_invalid = row;
  }
  loss[threadIdx.x] = thread_loss;
  correct[threadIdx.x] = thread_correct;
  first_invalid[threadIdx.x] = thread_invalid;
  __syncthreads();
  for (int stride = totals_threads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      loss[threadIdx.x] += loss[threadIdx.x + stride];
      correct[threadIdx.x] += correct[threadIdx.x + stride];
      first_invalid[threadIdx.x] = min(first_invalid[threadIdx.x], first_invalid[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    totals->loss_sum = loss[0];
    totals->correct = correct[0];
    totals->first_invalid_row = first_invalid[0];
    totals->invalid_label = first_invalid[0] == INT_MAX ? 0 : labels[first_invalid[0]];
  }
}

// The logits are activations (`Stored`); the probabilities go to the host as fp32.
template <typename Stored>
__global__ void predict_kernel(int batch, int classes, const Stored* logits, std::int32_t* predicted_class,
                               float* probabilities) {
  const int lane = threadIdx.x % warp_size;
  const int row = blockIdx.x * rows_per_block + threadIdx.x / warp_size;
  if (row >= batch) return;
  const Stored* row_logits = logits + static_cast<std::int64_t>(row) * classes;
  const ArgMax best = row_arg_max(row_logits, classes, lane);
  if (lane == 0) predicted_class[row] = best.index;
  if (probabilities) {
    const double log_normalizer = row_log_sum_exp(row_logits, classes, lane, best.value);
    float* row_probabilities = probabilities + static_cast<std::int64_t>(row) * classes;
    for (int c = lane; c < classes; c += warp_size)
      row_probabilities[c] =
          static_cast<float>(exp(static_cast<double>(widen(row_logits[c])) - log_normalizer));
  }
}

unsigned int row_blocks(int batch) {
  return static_cast<unsigned int>((batch + rows_per_block - 1) / rows_per_block);
}

}  // namespace

// Enough steps for any log interval in practice; a longer one drains the slots once per this many
// steps (one small wait), never more often.
constexpr int deferred_slot_count = 1024;

CrossEntropy::CrossEntropy()
    : device_totals_(sizeof(Totals)),
      host_totals_(sizeof(Totals)),
      deferred_slots_(sizeof(Totals) * deferred_slot_count),
      deferred_host_slots_(sizeof(Totals) * deferred_slot_count) {}

void CrossEntropy::enqueue(cudaStream_t stream, int batch, int classes, const float* logits,
                           const std::int32_t* labels, float label_smoothing, float gradient_scale,
                           float* grad_logits, const LabelMix& mix, void* destination) {
  // Without a partner, the own label takes the whole weight (and the partner term vanishes).
  const double own_weight = mix.partner_labels ? mix.own_weight : 1.0;
  sample_loss_.ensure(sizeof(double) * static_cast<std::size_t>(batch));
  sample_outcome_.ensure(static_cast<std::size_t>(batch));
  with_stored_type(storage_, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    cross_entropy_rows_kernel<<<row_blocks(batch), rows_per_block * warp_size, 0, stream>>>(
        batch, classes, stored<Stored>(logits), labels, mix.partner_labels, own_weight, label_smoothing,
        gradient_scale,
        grad_logits ? stored<Stored>(grad_logits) : nullptr, sample_loss_.as<double>(),
        sample_outcome_.as<std::uint8_t>());
  });
  PHALANX_CUDA_LAUNCHED("cross_entropy_rows_kernel");
  cross_entropy_totals_kernel<<<1, totals_threads, 0, stream>>>(batch, sample_loss_.as<double>(),
                                                                sample_outcome_.as<std::uint8_t>(), labels,
                                                                static_cast<Totals*>(destination));
  PHALANX_CUDA_LAUNCHED("cross_entropy_totals_kernel");
}

LossTotals CrossEntropy::softmax_cross_entropy(cudaStream_t stream, int batch, int classes,
                                               const float* logits, const std::int32_t* labels,
                                               float label_smoothing, float gradient_scale,
                                               float* grad_logits, const LabelMix& mix) {
  PHALANX_CHECK(classes > 0, "softmax cross-entropy needs at least one class");
  if (batch <= 0) return {};
  enqueue(stream, batch, classes, logits, labels, label_smoothing, gradient_scale, grad_logits, mix,
          device_totals_.data());
  PHALANX_CUDA(cudaMemcpyAsync(host_totals_.data(), device_totals_.data(), sizeof(Totals),
                               cudaMemcpyDeviceToHost, stream));
  PHALANX_CUDA(cudaStreamSynchronize(stream));
  ++host_waits_;
  const Totals& totals = *host_totals_.as<Totals>();
  PHALANX_CHECK(totals.first_invalid_row == INT_MAX, "label ", totals.invalid_label, " of sample ",
                totals.first_invalid_row, " is outside [0, ", classes, ")");
  return {totals.loss_sum, static_cast<std::int64_t>(totals.correct)};
}

void CrossEntropy::softmax_cross_entropy_deferred(cudaStream_t stream, int batch, int classes,
                                                  const float* logits, const std::int32_t* labels,
                                                  float label_smoothing, float gradient_scale,
                                                  float* grad_logits, const LabelMix& mix) {
  PHALANX_CHECK(classes > 0, "softmax cross-entropy needs at least one class");
  // A bad label is reported with the classes of its own call: drain before the count changes.
  if (deferred_filled_ == deferred_slot_count || (deferred_filled_ > 0 && classes != deferred_classes_))
    drain_slots(stream);
  deferred_classes_ = classes;
  Totals* slot = deferred_slots_.as<Totals>() + deferred_filled_;
  ++deferred_filled_;
  if (batch <= 0) {
    // An empty batch still has its entry, as the synchronous call returns one: the totals kernel
    // alone writes zero totals (it reads no sample).
    cross_entropy_totals_kernel<<<1, totals_threads, 0, stream>>>(0, nullptr, nullptr, labels, slot);
    PHALANX_CUDA_LAUNCHED("cross_entropy_totals_kernel");
    return;
  }
  enqueue(stream, batch, classes, logits, labels, label_smoothing, gradient_scale, grad_logits, mix, slot);
}

void CrossEntropy::drain_slots(cudaStream_t stream) {
  if (deferred_filled_ == 0) return;
  const std::size_t bytes = sizeof(Totals) * static_cast<std::size_t>(deferred_filled_);
  PHALANX_CUDA(cudaMemcpyAsync(deferred_host_slots_.data(), deferred_slots_.data(), bytes,
                               cudaMemcpyDeviceToHost, stream));
  PHALANX_CUDA(cudaStreamSynchronize(stream));
  ++host_waits_;
  const Totals* slots = deferred_host_slots_.as<Totals>();
  const int filled = deferred_filled_;
  deferred_filled_ = 0;
  for (int index = 0; index < filled; ++index)
    if (slots[index].first_invalid_row != INT_MAX) {
      deferred_drained_.clear();  // nothing of a failed batch of steps is handed over later
      PHALANX_CHECK(slots[index].first_invalid_row == INT_MAX, "label ", slots[index].invalid_label,
                    " of sample ", slots[index].first_invalid_row, " is outside [0, ", deferred_classes_,
                    ")");
    }
  for (int index = 0; index < filled; ++index)
    deferred_drained_.push_back({slots[index].loss_sum, static_cast<std::int64_t>(slots[index].correct)});
}

std::vector<LossTotals> CrossEntropy::take_deferred(cudaStream_t stream) {
  drain_slots(stream);
  std::vector<LossTotals> totals;
  totals.swap(deferred_drained_);
  return totals;
}

void CrossEntropy::predict(cudaStream_t stream, int batch, int classes, const float* logits,
                           std::int32_t* predicted_class, float* probabilities) {
  PHALANX_CHECK(classes > 0, "prediction needs at least one class");
  if (batch <= 0) return;
  with_stored_type(storage_, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    predict_kernel<<<row_blocks(batch), rows_per_block * warp_size, 0, stream>>>(
        batch, classes, stored<Stored>(logits), predicted_class, probabilities);
  });
  PHALANX_CUDA_LAUNCHED("predict_kernel");
}

}  // namespace phalanx::backend::cuda
