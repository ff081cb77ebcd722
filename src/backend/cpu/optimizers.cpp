// SGD and AdamW as PyTorch defines them (see optimizers.hpp). Each parameter's update depends on
// that parameter alone, so a static OpenMP split gives the same bits for any thread count.
#include "optimizers.hpp"

#include <cfloat>
#include <cmath>

#include "elementwise.hpp"

namespace phalanx::backend::cpu {

namespace {

// A moment or momentum buffer whose gradients stay zero (a dead ReLU unit's weights) decays by
// beta each step into the subnormal range, where x86 takes a microcode assist on every operation
// that reads or yields such a value: in the main job, 16% of AdamW's moments were subnormal by its
// third epoch and the step took four times as long. Those values are stored as zero (exact zeros
// keep their sign). A parameter moves by them at most step_size * FLT_MIN / epsilon (about 1e-32 at
// a learning rate of 0.01 and AdamW's default epsilon), below the last bit of any weight above
// 1e-24; a subnormal second moment is lost against epsilon in the denominator. The CUDA kernels
// flush the same way (optimizer_formulas.hpp), so GPU and CPU ranks keep the same bits.
inline float flush_subnormal(float value) {
  return (value != 0.0f && value > -FLT_MIN && value < FLT_MIN) ? 0.0f : value;
}

}  // namespace

void sgd_step(std::int64_t count, const SgdHyperparameters& hyperparameters, float* __restrict parameters,
              const float* __restrict gradients, float* __restrict momentum_buffer) {
  const float learning_rate = hyperparameters.learning_rate;
  const float weight_decay = hyperparameters.weight_decay;
  const float momentum = hyperparameters.momentum;
  if (momentum == 0.0f) {
    // torch.optim.SGD keeps no buffer without momentum; momentum_buffer may be null here.
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
    for (std::int64_t i = 0; i < count; ++i)
      parameters[i] -= learning_rate * (gradients[i] + weight_decay * parameters[i]);
    return;
  }
  // The buffer starts at zero, so the first step's momentum * 0 + g equals PyTorch's buf = g.
  if (hyperparameters.nesterov) {
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
    for (std::int64_t i = 0; i < count; ++i) {
      const float gradient = gradients[i] + weight_decay * parameters[i];
      const float buffer = flush_subnormal(momentum * momentum_buffer[i] + gradient);
      momentum_buffer[i] = buffer;
      parameters[i] -= learning_rate * (gradient + momentum * buffer);
    }
  } else {
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
    for (std::int64_t i = 0; i < count; ++i) {
      const float gradient = gradients[i] + weight_decay * parameters[i];
      const float buffer = flush_subnormal(momentum * momentum_buffer[i] + gradient);
      momentum_buffer[i] = buffer;
      parameters[i] -= learning_rate * buffer;
    }
  }
}

void adamw_step(std::int64_t count, const AdamWHyperparameters& hyperparameters, float* __restrict parameters,
                const float* __restrict gradients, float* __restrict first_moment,
                float* __restrict second_moment) {
  const float learning_rate = hyperparameters.learning_rate;
  const float beta1 = hyperparameters.beta1, beta2 = hyperparameters.beta2;
  const float epsilon = hyperparameters.epsilon;
  const float decay_factor = 1.0f - learning_rate * hyperparameters.weight_decay;
  const double step = static_cast<double>(hyperparameters.step);
  // Bias corrections once per step in double, as PyTorch computes them on the host.
  const float step_size =
      static_cast<float>(learning_rate / (1.0 - std::pow(static_cast<double>(beta1), step)));
  const float sqrt_correction2 =
      static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(beta2), step)));
#pragma omp parallel for simd schedule(static) if (count >= parallel_threshold)
  for (std::int64_t i = 0; i < count; ++i) {
    const float gradient = gradients[i];
    const float first = flush_subnormal(beta1 * first_moment[i] + (1.0f - beta1) * gradient);
    const float second = flush_subnormal(beta2 * second_moment[i] + (1.0f - beta2) * gradient * gradient);
    first_moment[i] = first;
    second_moment[i] = second;
    // PyTorch: param -= step_size * m / (sqrt(v) / sqrt(bias_correction2) + eps).
    parameters[i] =
        parameters[i] * decay_factor - step_size * first / (std::sqrt(second) / sqrt_correction2 + epsilon);
  }
}

}  // namespace phalanx::backend::cpu
