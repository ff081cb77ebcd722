// The CPU backend's ops under bf16 compute with activations held in fp32 against activations held
// in bf16 (train.activation_dtype), at fmnist_cnn's and resnet20's shapes, batch 128. Each op is
// timed in process CPU time, not wall time: on a loaded machine other processes stretch wall time
// many-fold, while the CPU time an op takes moves far less (shared caches and memory bandwidth
// still move it). Best of 7 calls, twice over alternating the two backends; then whole training
// steps (forward, loss, backward, SGD) of fmnist_cnn and resnet20, rounds alternating the two,
// median CPU ms per step. Run:
//   OMP_NUM_THREADS=1 build/bench/phalanx_bench_activation_storage [rounds] [steps per round]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/median.hpp"
#include "training_rounds.hpp"

namespace {

using namespace phalanx::backend;

double process_cpu_seconds() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Best of 7 calls after one warm-up call (which builds the primitives), in ms of CPU time.
double best_milliseconds(const std::function<void()>& call) {
  call();
  double best = 1e30;
  for (int repeat = 0; repeat < 7; ++repeat) {
    const double start = process_cpu_seconds();
    call();
    best = std::min(best, process_cpu_seconds() - start);
  }
  return best * 1e3;
}

struct Case {
  std::string name;
  std::function<void(Backend&)> run;
};

// One model trained step by step under bf16 compute, with activations in `activations`, on a
// batch put through the backend's own normalisation, so that it is held as the activations are.
phalanx::bench::TrainingSteps training(const std::string& preset, ComputePrecision activations) {
  auto cpu_backend = make_cpu_backend(0);
  cpu_backend->set_compute_precision(ComputePrecision::BFloat16);
  cpu_backend->set_activation_precision(activations);
  return phalanx::bench::TrainingSteps(
      std::move(cpu_backend), preset, 128, phalanx::nn::ActivationFusion::Fused,
      [](Backend& backend, phalanx::Tensor& input) {
        const std::int64_t channels = input.shape()[3];
        std::vector<std::uint8_t> images(static_cast<std::size_t>(input.elements()));
        for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<std::uint8_t>(i * 7919 % 251);
        const std::vector<float> mean(static_cast<std::size_t>(channels), 0.5f),
            deviation(static_cast<std::size_t>(channels), 0.25f);
        backend.normalize_images(images.data(), input.elements() / channels, static_cast<int>(channels),
                                 mean.data(), deviation.data(), input.data());
      });
}

void compare_steps(const std::string& preset, int rounds, int steps) {
  auto fp32 = training(preset, ComputePrecision::Float32),
       bf16 = training(preset, ComputePrecision::BFloat16);
  const auto times = phalanx::bench::alternate_rounds(fp32, bf16, 2, rounds, steps, process_cpu_seconds);
  std::printf("%-34s %12.2f %12.2f %8.2f   (training step, median of %d rounds x %d steps)\n",
              (preset + " step").c_str(), phalanx::median(times.first_ms), phalanx::median(times.second_ms),
              phalanx::median(times.ratios), rounds, steps);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 5;
  auto fp32_activations = make_cpu_backend(0), bf16_activations = make_cpu_backend(0);
  fp32_activations->set_compute_precision(ComputePrecision::BFloat16);
  bf16_activations->set_compute_precision(ComputePrecision::BFloat16);
  bf16_activations->set_activation_precision(ComputePrecision::BFloat16);

  // Buffers large enough for every case; activations in [-0.5, 0.5).
  const std::size_t activation_count = std::size_t(128) * 32 * 32 * 64;
  std::vector<float> input(activation_count), grad_output(activation_count), output(activation_count);
  for (std::size_t i = 0; i < activation_count; ++i) {
    input[i] = static_cast<float>(i % 17) / 17.0f - 0.3f;
    grad_output[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
  }
  std::vector<float> weight(std::size_t(3136) * 128, 0.01f), grad_weight(weight.size()), bias(256, 0.1f),
      grad_bias(256);
  std::vector<std::uint8_t> workspace(std::size_t(1) << 26);
  std::vector<float> gamma(64, 1.0f), beta(64, 0.0f), running_mean(64, 0.0f), running_variance(64, 1.0f),
      saved_mean(64), saved_inverse_std(64), grad_gamma(64), grad_beta(64);

  std::vector<Case> cases;
  const auto add_convolution = [&](const std::string& name, const ConvolutionGeometry& geometry) {
    cases.push_back({name + " forward", [&, geometry](Backend& backend) {
                       backend.convolution_forward(geometry, input.data(), weight.data(),
                                                   geometry.has_bias ? bias.data() : nullptr, output.data());
                     }});
    // A first layer (one input channel) computes no input gradient, as in training.
    cases.push_back({name + " backward", [&, geometry](Backend& backend) {
                       backend.convolution_backward(geometry, input.data(), grad_output.data(), weight.data(),
                                                    geometry.in_channels > 1 ? output.data() : nullptr,
                                                    grad_weight.data(),
                                                    geometry.has_bias ? grad_bias.data() : nullptr);
                     }});
  };
  add_convolution("fmnist conv1 1->32 28x28", square_convolution(128, 1, 28, 32, 3, 1, 1, true));
  add_convolution("fmnist conv2 32->64 14x14", square_convolution(128, 32, 14, 64, 3, 1, 1, true));
  add_convolution("resnet20 16->16 32x32", square_convolution(128, 16, 32, 16, 3, 1, 1, false));
  add_convolution("resnet20 64->64 8x8", square_convolution(128, 64, 8, 64, 3, 1, 1, false));

  const PoolingGeometry pooling{128, 32, 28, 28, 2, 2, 2, 0, PoolingKind::Max};
  cases.push_back({"fmnist pool1 forward", [&](Backend& backend) {
                     backend.pooling_forward(pooling, input.data(), output.data(), workspace.data());
                   }});
  cases.push_back({"fmnist pool1 backward", [&](Backend& backend) {
                     backend.pooling_backward(pooling, grad_output.data(), workspace.data(), output.data());
                   }});
  const BatchNormGeometry batch_norm{128, 16, 32 * 32, 1e-5f, FusedActivation::Relu};
  cases.push_back({"resnet20 BN 16ch + ReLU forward", [&](Backend& backend) {
                     backend.batch_norm_forward_training(batch_norm, input.data(), gamma.data(), beta.data(),
                                                         output.data(), running_mean.data(),
                                                         running_variance.data(), 0.1f, saved_mean.data(),
                                                         saved_inverse_std.data());
                   }});
  cases.push_back({"resnet20 BN 16ch backward", [&](Backend& backend) {
                     BatchNormGeometry plain = batch_norm;
                     plain.activation = FusedActivation::None;
                     backend.batch_norm_backward(plain, input.data(), grad_output.data(), gamma.data(),
                                                 saved_mean.data(), saved_inverse_std.data(), output.data(),
                                                 grad_gamma.data(), grad_beta.data());
                   }});
  const std::int64_t count = std::int64_t(128) * 28 * 28 * 32;
  cases.push_back({"ReLU backward 3.2M", [&](Backend& backend) {
                     backend.relu_backward(count, input.data(), grad_output.data(), output.data());
                   }});
  cases.push_back({"add + ReLU 3.2M", [&](Backend& backend) {
                     backend.add_relu(count, input.data(), grad_output.data(), output.data());
                   }});
  cases.push_back(
      {"accumulate 3.2M", [&](Backend& backend) { backend.accumulate(count, input.data(), output.data()); }});
  const LinearGeometry linear{128, 3136, 128};
  cases.push_back({"fmnist fc1 forward", [&](Backend& backend) {
                     backend.linear_forward(linear, input.data(), weight.data(), bias.data(), output.data());
                   }});
  cases.push_back({"fmnist fc1 backward", [&](Backend& backend) {
                     backend.linear_backward(linear, input.data(), weight.data(), grad_output.data(),
                                             output.data(), grad_weight.data(), grad_bias.data());
                   }});

  std::printf("# ms of process CPU time per call, best of 7 (twice, alternating), batch 128, bf16 compute\n");
  std::printf("%-34s %12s %12s %8s\n", "op", "fp32 act", "bf16 act", "ratio");
  for (const Case& test_case : cases) {
    double fp32 = 1e30, bf16 = 1e30;
    for (int round = 0; round < 2; ++round) {
      fp32 = std::min(fp32, best_milliseconds([&] { test_case.run(*fp32_activations); }));
      bf16 = std::min(bf16, best_milliseconds([&] { test_case.run(*bf16_activations); }));
    }
    std::printf("%-34s %12.3f %12.3f %8.2f\n", test_case.name.c_str(), fp32, bf16, bf16 / fp32);
  }
  compare_steps("fmnist_cnn", rounds, steps);
  compare_steps("resnet20", rounds, steps);
  return 0;
}
