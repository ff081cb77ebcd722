// Per-op times of a device backend at ResNet-50's shapes, in three arithmetic/storage modes side by
// side: fp32 throughout; bf16 compute on fp32 activations (casts around every convolution and
// GEMM); bf16 compute on bf16 activations (train.activation_dtype: bf16). Each op is timed with
// the backend's timing markers (CUDA events on a GPU) over a run of calls after two warm-up calls
// (the first call of a convolution shape runs cuDNN's algorithm search), the modes alternating
// round by round so that a clock or load change hits all three alike; the medians over the rounds
// are printed, and on a GPU a last column "bf16 act/fp32 act": the bf16-activation time over that
// of bf16 compute on fp32 activations. This is where a ResNet-50 step's time goes, op by op, which
// the whole-step comparison with PyTorch cannot say.
//   ./phalanx_bench_device_ops [--device cuda|cpu] [--batch N] [--calls N] [--rounds N]
// On the CPU backend (a dry run of the program) only the fp32 mode exists.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/median.hpp"
#include "phalanx/core/tensor.hpp"

namespace {

using phalanx::Shape;
using phalanx::Tensor;
using phalanx::backend::Backend;
using phalanx::backend::BatchNormGeometry;
using phalanx::backend::ComputePrecision;
using phalanx::backend::ConvolutionGeometry;
using phalanx::backend::FusedActivation;
using phalanx::backend::LinearGeometry;
using phalanx::backend::PoolingGeometry;

struct Mode {
  const char* name;
  ComputePrecision compute;
  ComputePrecision activations;
};

constexpr Mode all_modes[] = {{"fp32", ComputePrecision::Float32, ComputePrecision::Float32},
                              {"bf16 compute", ComputePrecision::BFloat16, ComputePrecision::Float32},
                              {"bf16 activations", ComputePrecision::BFloat16, ComputePrecision::BFloat16}};

void set_mode(Backend& backend, const Mode& mode) {
  backend.set_activation_precision(ComputePrecision::Float32);
  backend.set_compute_precision(mode.compute);
  backend.set_activation_precision(mode.activations);
}

// Buffers of one op: activations filled with values in [-2, 2] in the mode's storage (written by
// the input op, which stores whatever type the backend holds activations in), weights in fp32.
class Buffers {
 public:
  explicit Buffers(Backend& backend) : backend_(backend) {}

  float* activations(std::int64_t count) {
    Tensor& tensor = add(count);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(count));
    for (auto& byte : bytes) byte = static_cast<std::uint8_t>(random_() >> 24);
    Tensor images(backend_, Shape{count}, phalanx::DType::UInt8);
    backend_.copy_from_host(images.data_as<void>(), bytes.data(), bytes.size());
    backend_.normalize_images(images.data_as<std::uint8_t>(), count, 1, constant(0.5f), constant(0.25f),
                              tensor.data());
    return tensor.data();
  }
  float* weights(std::int64_t count, float scale) {
    Tensor& tensor = add(count);
    std::vector<float> values(static_cast<std::size_t>(count));
    std::normal_distribution<float> normal(0.0f, scale);
    for (auto& value : values) value = normal(random_);
    backend_.copy_from_host(tensor.data_as<void>(), values.data(), values.size() * sizeof(float));
    return tensor.data();
  }
  float* zeros(std::int64_t count) {
    Tensor& tensor = add(count);
    backend_.fill(tensor.data(), count, 0.0f);
    return tensor.data();
  }
  void* bytes(std::size_t count) {
    tensors_.emplace_back(backend_, Shape{static_cast<std::int64_t>(count)}, phalanx::DType::UInt8);
    return tensors_.back().data_as<void>();
  }

 private:
  Tensor& add(std::int64_t count) {
    tensors_.emplace_back(backend_, Shape{count});
    return tensors_.back();
  }
  const float* constant(float value) {
    Tensor& tensor = add(1);
    backend_.copy_from_host(tensor.data_as<void>(), &value, sizeof(value));
    return tensor.data();
  }

  Backend& backend_;
  std::deque<Tensor> tensors_;  // references stay valid as it grows
  std::mt19937 random_{7};
};

// An op at one shape: `prepare` allocates and fills its buffers in the current mode and returns
// the call to time.
struct Case {
  std::string name;
  std::function<std::function<void()>(Backend&, Buffers&)> prepare;
};

std::vector<Case> cases(int batch) {
  std::vector<Case> list;
  // ResNet-50's stem, a stage-1 3x3 and 1x1 pair, and the last stage's 3x3.
  // No bias (batch norm follows each, as in ResNet).
  const std::pair<std::string, ConvolutionGeometry> convolutions[] = {
      {"conv 7x7/2 3->64 @224", phalanx::backend::square_convolution(batch, 3, 224, 64, 7, 2, 3, false)},
      {"conv 3x3 64->64 @56", phalanx::backend::square_convolution(batch, 64, 56, 64, 3, 1, 1, false)},
      {"conv 1x1 64->256 @56", phalanx::backend::square_convolution(batch, 64, 56, 256, 1, 1, 0, false)},
      {"conv 3x3 512->512 @7", phalanx::backend::square_convolution(batch, 512, 7, 512, 3, 1, 1, false)}};
  for (const auto& convolution : convolutions) {
    // References, not structured bindings: the lambdas below capture them (clang before 16 cannot).
    const std::string& name = convolution.first;
    const ConvolutionGeometry& geometry = convolution.second;
    const float scale = 1.0f / static_cast<float>(geometry.in_channels * geometry.kernel_height);
    list.push_back({name + " forward", [geometry, scale](Backend& backend, Buffers& buffers) {
                      const float* input = buffers.activations(geometry.input_elements());
                      const float* weight = buffers.weights(geometry.weight_elements(), scale);
                      float* output = buffers.zeros(geometry.output_elements());
                      return std::function<void()>([&backend, geometry, input, weight, output] {
                        backend.convolution_forward(geometry, input, weight, nullptr, output);
                      });
                    }});
    // The stem needs no input gradient (the first layer), the others both directions.
    const bool first_layer = geometry.in_channels == 3;
    list.push_back({name + " backward", [geometry, scale, first_layer](Backend& backend, Buffers& buffers) {
                      const float* input = buffers.activations(geometry.input_elements());
                      const float* weight = buffers.weights(geometry.weight_elements(), scale);
                      const float* grad_output = buffers.activations(geometry.output_elements());
                      float* grad_input = first_layer ? nullptr : buffers.zeros(geometry.input_elements());
                      float* grad_weight = buffers.zeros(geometry.weight_elements());
                      return std::function<void()>(
                          [&backend, geometry, input, weight, grad_output, grad_input, grad_weight] {
                            backend.convolution_backward(geometry, input, grad_output, weight, grad_input,
                                                         grad_weight, nullptr);
                          });
                    }});
  }
  // Batch norm with its fused ReLU, and the element-wise ops, at stage 1's widest tensor.
  BatchNormGeometry norm{batch, 256, 56 * 56, 1e-5f, FusedActivation::Relu};
  const std::int64_t wide = std::int64_t{batch} * 56 * 56 * 256;
  list.push_back(
      {"batch norm + ReLU 256 @56 training forward", [norm, wide](Backend& backend, Buffers& buffers) {
         const float* input = buffers.activations(wide);
         float* output = buffers.zeros(wide);
         const float* gamma = buffers.weights(norm.channels, 1.0f);
         const float* beta = buffers.weights(norm.channels, 1.0f);
         float* running_mean = buffers.zeros(norm.channels);
         float* running_variance = buffers.zeros(norm.channels);
         float* saved_mean = buffers.zeros(norm.channels);
         float* saved_inverse_std = buffers.zeros(norm.channels);
         return std::function<void()>([=, &backend] {
           backend.batch_norm_forward_training(norm, input, gamma, beta, output, running_mean,
                                               running_variance, 0.1f, saved_mean, saved_inverse_std);
         });
       }});
  list.push_back({"batch norm 256 @56 backward", [norm, wide](Backend& backend, Buffers& buffers) {
                    BatchNormGeometry plain = norm;
                    plain.activation = FusedActivation::None;
                    const float* input = buffers.activations(wide);
                    const float* grad_output = buffers.activations(wide);
                    float* grad_input = buffers.zeros(wide);
                    const float* gamma = buffers.weights(norm.channels, 1.0f);
                    const float* beta = buffers.weights(norm.channels, 1.0f);
                    float* statistics = buffers.zeros(4 * norm.channels);
                    float* output = buffers.zeros(wide);
                    // Saved statistics as training leaves them.
                    backend.batch_norm_forward_training(
                        plain, input, gamma, beta, output, statistics, statistics + norm.channels, 0.1f,
                        statistics + 2 * norm.channels, statistics + 3 * norm.channels);
                    float* grad_gamma = buffers.zeros(norm.channels);
                    float* grad_beta = buffers.zeros(norm.channels);
                    return std::function<void()>([=, &backend] {
                      backend.batch_norm_backward(
                          plain, input, grad_output, gamma, statistics + 2 * plain.channels,
                          statistics + 3 * plain.channels, grad_input, grad_gamma, grad_beta);
                    });
                  }});
  list.push_back({"ReLU backward 256 @56", [wide](Backend& backend, Buffers& buffers) {
                    const float* output = buffers.activations(wide);
                    const float* grad_output = buffers.activations(wide);
                    float* grad_input = buffers.zeros(wide);
                    return std::function<void()>(
                        [=, &backend] { backend.relu_backward(wide, output, grad_output, grad_input); });
                  }});
  list.push_back({"add + ReLU 256 @56", [wide](Backend& backend, Buffers& buffers) {
                    const float* a = buffers.activations(wide);
                    const float* b = buffers.activations(wide);
                    float* output = buffers.zeros(wide);
                    return std::function<void()>([=, &backend] { backend.add_relu(wide, a, b, output); });
                  }});
  list.push_back({"accumulate 256 @56", [wide](Backend& backend, Buffers& buffers) {
                    const float* source = buffers.activations(wide);
                    float* destination = buffers.activations(wide);
                    return std::function<void()>(
                        [=, &backend] { backend.accumulate(wide, source, destination); });
                  }});
  PoolingGeometry pool{batch, 64, 112, 112, 3, 3, 2, 1};
  list.push_back({"max pool 3x3/2 64 @112 forward", [pool](Backend& backend, Buffers& buffers) {
                    const float* input = buffers.activations(std::int64_t{pool.batch} * 112 * 112 * 64);
                    float* output =
                        buffers.zeros(std::int64_t{pool.batch} * pool.out_height() * pool.out_width() * 64);
                    void* workspace = buffers.bytes(backend.pooling_workspace_bytes(pool));
                    return std::function<void()>(
                        [=, &backend] { backend.pooling_forward(pool, input, output, workspace); });
                  }});
  const LinearGeometry linear{batch, 2048, 1000, FusedActivation::None};
  list.push_back(
      {"linear 2048->1000 forward + backward", [linear](Backend& backend, Buffers& buffers) {
         const float* input = buffers.activations(std::int64_t{linear.batch} * linear.in_features);
         const float* weight = buffers.weights(std::int64_t{linear.in_features} * linear.out_features, 0.02f);
         const float* bias = buffers.weights(linear.out_features, 0.02f);
         float* output = buffers.zeros(std::int64_t{linear.batch} * linear.out_features);
         const float* grad_output = buffers.activations(std::int64_t{linear.batch} * linear.out_features);
         float* grad_input = buffers.zeros(std::int64_t{linear.batch} * linear.in_features);
         float* grad_weight = buffers.zeros(std::int64_t{linear.in_features} * linear.out_features);
         float* grad_bias = buffers.zeros(linear.out_features);
         return std::function<void()>([=, &backend] {
           backend.linear_forward(linear, input, weight, bias, output);
           backend.linear_backward(linear, input, weight, grad_output, grad_input, grad_weight, grad_bias);
         });
       }});
  return list;
}

int option(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

std::string text_option(int argc, char** argv, const char* name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

// Milliseconds per call of `call`, timed on the device between two markers.
double milliseconds_per_call(Backend& backend, const std::function<void()>& call, int calls) {
  const auto start = backend.make_timing_marker();
  const auto end = backend.make_timing_marker();
  start->record();
  for (int i = 0; i < calls; ++i) call();
  end->record();
  return 1000.0 * end->seconds_since(*start) / calls;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string device = text_option(argc, argv, "--device", "cuda");
  const bool on_gpu = device == "cuda";
  const int batch = option(argc, argv, "--batch", on_gpu ? 256 : 2);
  const int calls = option(argc, argv, "--calls", on_gpu ? 10 : 1);
  const int rounds = option(argc, argv, "--rounds", on_gpu ? 5 : 1);
  if ((device != "cuda" && device != "cpu") || batch < 1 || calls < 1 || rounds < 1) {
    std::fprintf(stderr,
                 "usage: %s [--device cuda|cpu] [--batch N >= 1] [--calls N >= 1] [--rounds N >= 1]\n",
                 argv[0]);
    return 2;
  }
  try {
    if (on_gpu && phalanx::backend::cuda_device_count() == 0) {
      std::fprintf(stderr, "no CUDA device is visible; --device cpu runs the program on the CPU backend\n");
      return 3;
    }
    const std::unique_ptr<Backend> backend =
        on_gpu ? phalanx::backend::make_cuda_backend(0) : phalanx::backend::make_cpu_backend(0);
    const std::vector<Mode> modes = on_gpu ? std::vector<Mode>(std::begin(all_modes), std::end(all_modes))
                                           : std::vector<Mode>{all_modes[0]};
    std::printf("# bench device_ops: %s, batch %d, %d calls per timing, median of %d rounds, ms per call\n",
                backend->name().c_str(), batch, calls, rounds);
    std::printf("%-46s", "op");
    for (const Mode& mode : modes) std::printf(" %17s", mode.name);
    if (on_gpu) std::printf(" %17s", "bf16 act/fp32 act");
    std::printf("\n");
    for (const Case& op : cases(batch)) {
      std::vector<std::vector<double>> times(modes.size());
      // One set of buffers per mode, made once: the storage differs between modes.
      std::vector<std::unique_ptr<Buffers>> buffers;
      std::vector<std::function<void()>> calls_of_mode;
      for (const Mode& mode : modes) {
        set_mode(*backend, mode);
        buffers.push_back(std::make_unique<Buffers>(*backend));
        calls_of_mode.push_back(op.prepare(*backend, *buffers.back()));
        for (int warm_up = 0; warm_up < 2; ++warm_up) calls_of_mode.back()();
      }
      for (int round = 0; round < rounds; ++round)
        for (std::size_t mode_index = 0; mode_index < modes.size(); ++mode_index) {
          set_mode(*backend, modes[mode_index]);
          times[mode_index].push_back(milliseconds_per_call(*backend, calls_of_mode[mode_index], calls));
        }
      std::printf("%-46s", op.name.c_str());
      std::vector<double> medians;
      for (auto& mode_times : times) {
        medians.push_back(phalanx::median(mode_times));
        std::printf(" %17.3f", medians.back());
      }
      if (on_gpu) std::printf(" %17.2f", medians[2] / medians[1]);
      std::printf("\n");
      std::fflush(stdout);
      set_mode(*backend, modes[0]);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench device_ops: %s\n", error.what());
    return 1;
  }
  return 0;
}
