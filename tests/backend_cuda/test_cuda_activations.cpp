// The CUDA backend's activations (ActivationKind) and their fusion: the kernels' formulas
// (activation_functions.hpp, compiled for the host too) against torch's in double on any machine
// that builds the CUDA backend, GPU or not; then, on a GPU, CPU-versus-CUDA parity of
// forward and backward for every kind (vector and element-by-element paths); the kernels against
// torch's formulas in double at the kinks (torch's own choice of derivative there) and at large
// magnitudes; bf16/fp16 storage as the fp32 kernel's result rounded once; and conv, linear and
// batch norm with a fused Relu6, Sigmoid or Hardsigmoid against the plain op followed by
// activation_forward (bitwise in fp32, within the storage's rounding in bf16/fp16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "activation_functions.hpp"
#include "backend/activation_reference.hpp"
#include "backend/backend_test_support.hpp"
#include "backend_cuda/cuda_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::ActivationKind;
using backend::Backend;
using backend::ComputePrecision;
using backend::FusedActivation;

// The CUDA backend's compute and activation precision for one scope, back to fp32 at its end
// (activations first), so the other tests of the program find it in fp32.
class ReducedScope {
 public:
  ReducedScope(Backend& backend, ComputePrecision precision) : backend_(backend) {
    backend_.set_compute_precision(precision);
    backend_.set_activation_precision(precision);
  }
  ~ReducedScope() {
    backend_.set_activation_precision(ComputePrecision::Float32);
    backend_.set_compute_precision(ComputePrecision::Float32);
  }
  ReducedScope(const ReducedScope&) = delete;
  ReducedScope& operator=(const ReducedScope&) = delete;

 private:
  Backend& backend_;
};

// 2-byte elements in the first half of an fp32-sized buffer, as the layers allocate them.
Tensor upload_bits(Backend& backend, const std::vector<std::uint16_t>& bits) {
  Tensor tensor = empty_floats(backend, static_cast<std::int64_t>(bits.size()));
  backend.copy_from_host(tensor.data_as<void>(), bits.data(), bits.size() * sizeof(std::uint16_t));
  return tensor;
}

std::vector<std::uint16_t> download_bits(Backend& backend, const Tensor& tensor, std::int64_t count) {
  std::vector<std::uint16_t> bits(static_cast<std::size_t>(count));
  backend.copy_to_host(bits.data(), tensor.data_as<void>(), bits.size() * sizeof(std::uint16_t));
  return bits;
}

// kind(values) and its input gradient for `gradients`, at `offset` elements into the buffers (an
// odd offset takes the kernels' element-by-element path), with backward handed only what the kind
// reads, as the nn layer hands it.
Outputs run_activation(Backend& backend, ActivationKind kind, const std::vector<float>& values,
                       const std::vector<float>& gradients, std::int64_t offset) {
  const auto count = static_cast<std::int64_t>(values.size());
  std::vector<float> padded(values.size() + offset, 0.0f), padded_gradients(values.size() + offset, 0.0f);
  std::copy(values.begin(), values.end(), padded.begin() + offset);
  std::copy(gradients.begin(), gradients.end(), padded_gradients.begin() + offset);
  Tensor input = upload(backend, padded), grad_output = upload(backend, padded_gradients);
  Tensor output = upload(backend, std::vector<float>(padded.size(), NAN));
  Tensor grad_input = upload(backend, std::vector<float>(padded.size(), NAN));
  backend.activation_forward(kind, count, input.data() + offset, output.data() + offset);
  const bool reads_output = backend::backward_reads_output(kind);
  backend.activation_backward(kind, count, reads_output ? nullptr : input.data() + offset,
                              reads_output ? output.data() + offset : nullptr, grad_output.data() + offset,
                              grad_input.data() + offset);
  const auto tail = [offset](std::vector<float> all) {
    return as_doubles(std::vector<float>(all.begin() + offset, all.end()));
  };
  return Outputs{{"output", tail(download(backend, output))},
                 {"grad_input", tail(download(backend, grad_input))}};
}

// ---- the formulas, on the host -------------------------------------------------------------------

// The kernels' forward and backward function of `kind`, evaluated on the host.
float host_forward(ActivationKind kind, float x) {
  namespace cuda = backend::cuda;
  switch (kind) {
    case ActivationKind::Relu6: return cuda::Relu6Activation{}(x);
    case ActivationKind::Sigmoid: return cuda::SigmoidActivation{}(x);
    case ActivationKind::Hardsigmoid: return cuda::HardsigmoidActivation{}(x);
    case ActivationKind::Silu: return cuda::SiluActivation{}(x);
    case ActivationKind::Hardswish: return cuda::HardswishActivation{}(x);
    case ActivationKind::Gelu: return cuda::GeluActivation{}(x);
    case ActivationKind::GeluTanh: return cuda::GeluTanhActivation{}(x);
  }
  return NAN;
}

// From the output for the kinds that read it, from the input for the others, as the kernels do.
float host_backward(ActivationKind kind, float x, float grad_output) {
  namespace cuda = backend::cuda;
  const float y = host_forward(kind, x);
  switch (kind) {
    case ActivationKind::Relu6: return cuda::Relu6Gradient{}(y, grad_output);
    case ActivationKind::Sigmoid: return cuda::SigmoidGradient{}(y, grad_output);
    case ActivationKind::Hardsigmoid: return cuda::HardsigmoidGradient{}(y, grad_output);
    case ActivationKind::Silu: return cuda::SiluGradient{}(x, grad_output);
    case ActivationKind::Hardswish: return cuda::HardswishGradient{}(x, grad_output);
    case ActivationKind::Gelu: return cuda::GeluGradient{}(x, grad_output);
    case ActivationKind::GeluTanh: return cuda::GeluTanhGradient{}(x, grad_output);
  }
  return NAN;
}

// The host's expf, erff and tanhf are within an ulp or two, as CUDA's are; the formulas add a
// few roundings. At the kinks, torch's own choice of derivative (the kernels are written as torch's).
constexpr double formula_tolerance = 2e-6;

TEST(CudaHostFormulas, ActivationsAreTorchsAtKinksAndLargeMagnitudes) {
  const std::vector<float> values = activation_test_values();
  const std::vector<float> gradients = random_values(values.size(), 26, 0.5f, 2.0f);
  for (const ActivationKind kind : all_activation_kinds()) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double x = values[i], expected = reference_forward(kind, x);
      const float forward = host_forward(kind, values[i]);
      EXPECT_LE(std::fabs(forward - expected), forward_tolerance(kind, x, expected, formula_tolerance))
          << activation_name(kind) << "(" << x << ") = " << forward << ", expected " << expected;
      if (!derivative_representable(kind, x)) continue;
      const double expected_gradient = gradients[i] * reference_derivative(kind, x);
      const float backward = host_backward(kind, values[i], gradients[i]);
      EXPECT_LE(std::fabs(backward - expected_gradient), formula_tolerance * std::fabs(gradients[i]))
          << activation_name(kind) << "'(" << x << ") * " << gradients[i] << " = " << backward
          << ", expected " << expected_gradient;
    }
  }
}

// Relu6, Sigmoid and Hardsigmoid as the fused kernels apply them (with_fused_activation) are the
// functions activation_forward applies, and the identity and ReLU keep relu_forward's NaN.
TEST(CudaHostFormulas, FusedActivationsAreTheActivationKernelsFunctions) {
  const std::vector<float> values = activation_test_values();
  for (const FusedActivation activation :
       {FusedActivation::None, FusedActivation::Relu, FusedActivation::Relu6, FusedActivation::Sigmoid,
        FusedActivation::Hardsigmoid}) {
    for (const float x : values) {
      float fused = NAN;
      backend::cuda::with_fused_activation(activation, [&](auto function) { fused = function(x); });
      float expected = x;
      if (activation == FusedActivation::Relu) expected = x < 0.0f ? 0.0f : x;
      if (activation != FusedActivation::None && activation != FusedActivation::Relu)
        expected = host_forward(backend::activation_kind(activation), x);
      EXPECT_EQ(std::memcmp(&fused, &expected, sizeof(float)), 0)
          << static_cast<int>(activation) << " at " << x;
    }
    float nan_result = 0.0f;
    backend::cuda::with_fused_activation(activation, [&](auto function) { nan_result = function(NAN); });
    EXPECT_TRUE(std::isnan(nan_result)) << static_cast<int>(activation);
  }
}

// ---- on the device -------------------------------------------------------------------------------

// oneDNN's polynomial exp, erf and tanh and CUDA's libdevice ones differ by a few ulp; oneDNN's
// hardsigmoid is x / 6 + 1/2 where the kernels compute (x + 3) / 6 (an ulp of 1/2 apart near -3).
constexpr double kernel_libraries = 1e-5;

TEST(CudaActivations, ParityWithCpuForEveryKind) {
  PHALANX_SKIP_WITHOUT_CUDA();
  constexpr std::int64_t count = 100003;  // not a multiple of 4: the vector loop and its tail
  const std::vector<float> values = random_values(count, 21, -10.0f, 10.0f);
  const std::vector<float> gradients = random_values(count, 22);
  for (const ActivationKind kind : all_activation_kinds())
    for (const std::int64_t offset : {0, 1})
      expect_parity(OpCase{
          activation_name(kind) + (offset ? "_at_odd_offset" : ""), kernel_libraries,
          [&, kind, offset](Backend& b) { return run_activation(b, kind, values, gradients, offset); }});
}

TEST(CudaActivations, MatchTorchFormulasAtKinksAndLargeMagnitudes) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const std::vector<float> values = activation_test_values();
  const std::vector<float> gradients = random_values(values.size(), 23, 0.5f, 2.0f);
  // CUDA's expf, erff and tanhf are within 2 ulp; the formulas add a few roundings.
  constexpr double relative = 2e-6;
  for (const ActivationKind kind : all_activation_kinds()) {
    const Outputs results = run_activation(cuda_backend(), kind, values, gradients, 0);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double x = values[i], expected = reference_forward(kind, x);
      EXPECT_LE(std::fabs(results[0].values[i] - expected), forward_tolerance(kind, x, expected, relative))
          << activation_name(kind) << "(" << x << ") = " << results[0].values[i] << ", expected " << expected;
      if (!derivative_representable(kind, x)) continue;
      // torch's derivative, its choice at the kinks included: the kernels are written as its own.
      const double expected_gradient = gradients[i] * reference_derivative(kind, x);
      EXPECT_LE(std::fabs(results[1].values[i] - expected_gradient), relative * std::fabs(gradients[i]))
          << activation_name(kind) << "'(" << x << ") * " << gradients[i] << " = " << results[1].values[i]
          << ", expected " << expected_gradient;
    }
  }
}

// 2-byte storage: widened, computed as in fp32, rounded once, so the stored bits are those of the
// fp32 kernel's result on the same (rounded) inputs, rounded on the host.
TEST(CudaActivations, ReducedStorageIsTheFp32ResultRoundedOnce) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& cuda = cuda_backend();
  constexpr std::int64_t count = 4099;
  for (const ComputePrecision precision : {ComputePrecision::BFloat16, ComputePrecision::Float16}) {
    const std::vector<float> values = rounded_to_storage(random_values(count, 24, -9.0f, 9.0f), precision);
    const std::vector<float> gradients = rounded_to_storage(random_values(count, 25), precision);
    const auto pack = [precision](const std::vector<float>& floats) {
      std::vector<std::uint16_t> bits(floats.size());
      for (std::size_t i = 0; i < floats.size(); ++i) bits[i] = storage_bits(floats[i], precision);
      return bits;
    };
    const auto widen = [precision](const std::vector<std::uint16_t>& bits) {
      std::vector<float> floats(bits.size());
      for (std::size_t i = 0; i < bits.size(); ++i) floats[i] = float_from_storage_bits(bits[i], precision);
      return floats;
    };
    for (const ActivationKind kind : all_activation_kinds()) {
      SCOPED_TRACE(activation_name(kind) + " " + precision_name(precision));
      const bool reads_output = backend::backward_reads_output(kind);
      // fp32 on the rounded inputs; backward from the rounded output where the kind reads it.
      Tensor input = upload(cuda, values), grad_output = upload(cuda, gradients);
      Tensor output = empty_floats(cuda, count), grad_input = empty_floats(cuda, count);
      cuda.activation_forward(kind, count, input.data(), output.data());
      const std::vector<float> expected_output = rounded_to_storage(download(cuda, output), precision);
      Tensor rounded_output = upload(cuda, expected_output);
      cuda.activation_backward(kind, count, reads_output ? nullptr : input.data(),
                               reads_output ? rounded_output.data() : nullptr, grad_output.data(),
                               grad_input.data());
      const std::vector<float> expected_grad = rounded_to_storage(download(cuda, grad_input), precision);

      const ReducedScope reduced(cuda, precision);
      Tensor packed_input = upload_bits(cuda, pack(values)),
             packed_grad_output = upload_bits(cuda, pack(gradients));
      // NaN in both types: an element the kernels fail to write cannot match.
      Tensor packed_output = upload_bits(cuda, std::vector<std::uint16_t>(count, 0x7fff));
      Tensor packed_grad_input = upload_bits(cuda, std::vector<std::uint16_t>(count, 0x7fff));
      cuda.activation_forward(kind, count, packed_input.data(), packed_output.data());
      cuda.activation_backward(kind, count, reads_output ? nullptr : packed_input.data(),
                               reads_output ? packed_output.data() : nullptr, packed_grad_output.data(),
                               packed_grad_input.data());
      EXPECT_TRUE(same_bits(widen(download_bits(cuda, packed_output, count)), expected_output));
      EXPECT_TRUE(same_bits(widen(download_bits(cuda, packed_grad_input, count)), expected_grad));
    }
  }
}

// ---- fusion --------------------------------------------------------------------------------------

constexpr FusedActivation fused_kinds[] = {FusedActivation::Relu6, FusedActivation::Sigmoid,
                                           FusedActivation::Hardsigmoid};

// Runs one op on the CUDA backend with `activation` fused into it, writing `count` activations.
using FusedOp = std::function<void(Backend&, FusedActivation, const Tensor& input, Tensor& output)>;

// fp32: the fused op's bits are the plain op's followed by activation_forward. 2-byte storage: the
// separate op rounds the plain result x (by at most half a unit, u/2 |x|) before the activation f
// and again after it, the fused one rounds f(x) once: within u/2 |x f'(x)| + u |f(x)|, with
// |x f'(x)| below 1/4 for Sigmoid and 1/2 for Hardsigmoid (Relu6 is x itself where not flat).
void expect_fusion_matches(const FusedOp& op, const std::vector<float>& input_values, std::int64_t count,
                           const std::string& name) {
  Backend& cuda = cuda_backend();
  for (const ComputePrecision precision :
       {ComputePrecision::Float32, ComputePrecision::BFloat16, ComputePrecision::Float16}) {
    const bool packed = precision != ComputePrecision::Float32;
    std::unique_ptr<ReducedScope> reduced =
        packed ? std::make_unique<ReducedScope>(cuda, precision) : nullptr;
    std::vector<std::uint16_t> bits(input_values.size());
    for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = storage_bits(input_values[i], precision);
    const Tensor input = packed ? upload_bits(cuda, bits) : upload(cuda, input_values);
    const auto read = [&](const Tensor& tensor) {
      if (!packed) return download(cuda, tensor);
      const std::vector<std::uint16_t> stored = download_bits(cuda, tensor, count);
      std::vector<float> values(stored.size());
      for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = float_from_storage_bits(stored[i], precision);
      return values;
    };
    const double unit = precision == ComputePrecision::BFloat16 ? 1.0 / 128 : 1.0 / 1024;
    for (const FusedActivation activation : fused_kinds) {
      const std::string label = name + " " + activation_name(backend::activation_kind(activation)) + " " +
                                precision_name(precision);
      Tensor fused = empty_floats(cuda, count), separate = empty_floats(cuda, count);
      op(cuda, activation, input, fused);
      op(cuda, FusedActivation::None, input, separate);
      cuda.activation_forward(backend::activation_kind(activation), count, separate.data(), separate.data());
      const std::vector<float> fused_values = read(fused), separate_values = read(separate);
      const double slope_bound = activation == FusedActivation::Sigmoid       ? 0.25
                                 : activation == FusedActivation::Hardsigmoid ? 0.5
                                                                              : 0.0;
      int mismatches = 0;
      for (std::size_t i = 0; i < fused_values.size(); ++i) {
        const float a = fused_values[i], b = separate_values[i];
        const double largest = std::max(std::fabs(a), std::fabs(b));
        const bool matches = packed ? std::fabs(a - b) <= unit * (slope_bound / 2 + largest)
                                    : std::memcmp(&a, &b, sizeof(float)) == 0;
        if (!matches && mismatches++ < 5)
          ADD_FAILURE() << label << ": element " << i << " fused " << a << " separate " << b;
      }
    }
  }
}

TEST(CudaFusedActivations, ConvolutionLinearAndBatchNormEqualTheOpThenTheActivation) {
  PHALANX_SKIP_WITHOUT_CUDA();
  // Convolutions: a dense 3x3 with bias, a depthwise 3x3 without (MobileNet's), a 1x1.
  auto dense = backend::square_convolution(2, 8, 9, 16, 3, 1, 1, true);
  auto depthwise = backend::square_convolution(2, 16, 9, 16, 3, 2, 1, false);
  depthwise.groups = 16;
  const auto pointwise = backend::square_convolution(2, 16, 5, 8, 1, 1, 0, true);
  for (const auto& geometry : {dense, depthwise, pointwise}) {
    const auto input = random_values(static_cast<std::size_t>(geometry.input_elements()), 31, -3.0f, 3.0f);
    const Tensor weight =
        upload(cuda_backend(), random_values(static_cast<std::size_t>(geometry.weight_elements()), 32));
    const Tensor bias = upload(cuda_backend(), random_values(geometry.out_channels, 33));
    const FusedOp op = [&](Backend& b, FusedActivation activation, const Tensor& in, Tensor& out) {
      auto fused = geometry;
      fused.activation = activation;
      b.convolution_forward(fused, in.data(), weight.data(), geometry.has_bias ? bias.data() : nullptr,
                            out.data());
    };
    expect_fusion_matches(op, input, geometry.output_elements(),
                          "conv " + std::to_string(geometry.in_channels) + "->" +
                              std::to_string(geometry.out_channels) + " groups " +
                              std::to_string(geometry.groups));
  }
  const backend::LinearGeometry linear{9, 64, 24};
  const auto linear_input = random_values(9 * 64, 34, -3.0f, 3.0f);
  const Tensor linear_weight = upload(cuda_backend(), random_values(24 * 64, 35, -0.5f, 0.5f));
  const Tensor linear_bias = upload(cuda_backend(), random_values(24, 36));
  expect_fusion_matches(
      [&](Backend& b, FusedActivation activation, const Tensor& in, Tensor& out) {
        auto fused = linear;
        fused.activation = activation;
        b.linear_forward(fused, in.data(), linear_weight.data(), linear_bias.data(), out.data());
      },
      linear_input, 9 * 24, "linear");
  const backend::BatchNormGeometry norm{6, 12, 25};
  const auto norm_input = random_values(6 * 12 * 25, 37, -2.0f, 3.0f);
  const Tensor gamma = upload(cuda_backend(), random_values(12, 38, 2.0f, 4.0f));
  const Tensor beta = upload(cuda_backend(), random_values(12, 39));
  for (const bool training : {true, false}) {
    expect_fusion_matches(
        [&](Backend& b, FusedActivation activation, const Tensor& in, Tensor& out) {
          auto fused = norm;
          fused.activation = activation;
          Tensor mean = upload(b, std::vector<float>(12, 0.1f)),
                 variance = upload(b, std::vector<float>(12, 0.9f));
          Tensor saved_mean = empty_floats(b, 12), inverse_std = empty_floats(b, 12);
          if (training)
            b.batch_norm_forward_training(fused, in.data(), gamma.data(), beta.data(), out.data(),
                                          mean.data(), variance.data(), 0.1f, saved_mean.data(),
                                          inverse_std.data());
          else
            b.batch_norm_forward_inference(fused, in.data(), gamma.data(), beta.data(), mean.data(),
                                           variance.data(), out.data());
        },
        norm_input, 6 * 12 * 25, training ? "batch_norm training" : "batch_norm inference");
  }
}

}  // namespace
}  // namespace phalanx::testing
