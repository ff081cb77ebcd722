// The CUDA backend's combined convolution backward (convolution_backward: one cast of grad_output
// for both directions in bf16/fp16) against the two separate ops, in every precision. The same
// cached algorithms run on the same operands either way, so the results must be the same bits; the
// separate ops themselves are compared with the CPU by test_cuda_parity.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend_test_support.hpp"
#include "backend_cuda/cuda_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::Backend;
using backend::compute_precision_name;
using backend::ComputePrecision;
using backend::ConvolutionGeometry;

// Sets the CUDA backend's precision for one test and restores fp32 however the test ends.
class PrecisionScope {
 public:
  PrecisionScope(Backend& backend, ComputePrecision precision) : backend_(backend) {
    backend_.set_compute_precision(precision);
  }
  ~PrecisionScope() { backend_.set_compute_precision(ComputePrecision::Float32); }
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  Backend& backend_;
};

// One layer's operands on the device, and a place for each set of results.
struct Layer {
  Layer(Backend& backend, const ConvolutionGeometry& g, std::uint64_t stream)
      : geometry(g),
        input(upload(backend, random_values(g.input_elements(), stream))),
        weight(upload(backend, random_values(g.weight_elements(), stream + 1, -0.2f, 0.2f))),
        grad_output(upload(backend, random_values(g.output_elements(), stream + 2))) {}
  ConvolutionGeometry geometry;
  Tensor input, weight, grad_output;
};

struct Gradients {
  std::vector<float> input, weight, bias;
};

Gradients separate_ops(Backend& backend, const Layer& layer, bool with_grad_input) {
  const ConvolutionGeometry& g = layer.geometry;
  Tensor grad_input = upload(backend, std::vector<float>(g.input_elements(), NAN));
  Tensor grad_weight = upload(backend, std::vector<float>(g.weight_elements(), NAN));
  Tensor grad_bias = upload(backend, std::vector<float>(g.out_channels, NAN));
  backend.convolution_backward_weights(g, layer.input.data(), layer.grad_output.data(), grad_weight.data(),
                                       g.has_bias ? grad_bias.data() : nullptr);
  if (with_grad_input)
    backend.convolution_backward_data(g, layer.grad_output.data(), layer.weight.data(), grad_input.data());
  return {download(backend, grad_input), download(backend, grad_weight), download(backend, grad_bias)};
}

Gradients combined_op(Backend& backend, const Layer& layer, bool with_grad_input) {
  const ConvolutionGeometry& g = layer.geometry;
  Tensor grad_input = upload(backend, std::vector<float>(g.input_elements(), NAN));
  Tensor grad_weight = upload(backend, std::vector<float>(g.weight_elements(), NAN));
  Tensor grad_bias = upload(backend, std::vector<float>(g.out_channels, NAN));
  backend.convolution_backward(g, layer.input.data(), layer.grad_output.data(), layer.weight.data(),
                               with_grad_input ? grad_input.data() : nullptr, grad_weight.data(),
                               g.has_bias ? grad_bias.data() : nullptr);
  return {download(backend, grad_input), download(backend, grad_weight), download(backend, grad_bias)};
}

// Bitwise comparison that NaN == NaN (an output that neither call writes stays NaN in both).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

void expect_same(const Gradients& combined, const Gradients& separate, bool with_grad_input, bool has_bias) {
  EXPECT_TRUE(same_bits(combined.weight, separate.weight)) << "grad_weight differs";
  if (has_bias) {
    EXPECT_TRUE(same_bits(combined.bias, separate.bias)) << "grad_bias differs";
  }
  if (with_grad_input) {
    EXPECT_TRUE(same_bits(combined.input, separate.input)) << "grad_input differs";
    for (const float value : combined.input) ASSERT_FALSE(std::isnan(value)) << "grad_input not written";
  } else {
    // The first layer's call has no grad_input to write: the buffer stays as it was.
    for (const float value : combined.input) ASSERT_TRUE(std::isnan(value)) << "grad_input was written";
  }
}

ConvolutionGeometry grouped(ConvolutionGeometry g, int groups, int dilation) {
  g.groups = groups;
  g.dilation = dilation;
  return g;
}

// fmnist_cnn's two layers (the first with one input channel: bf16/fp16 may run it in fp32), a
// ResNet 3x3 64->64, a 1x1 stride-2 projection (no filter transposition), a stride-2 3x3 with odd
// channels, the 7x7 stem of 3 channels, a depthwise 3x3 and a grouped dilated 3x3.
std::vector<ConvolutionGeometry> geometries() {
  return {square_convolution(32, 1, 28, 32, 3, 1, 1, true),
          square_convolution(32, 32, 14, 64, 3, 1, 1, true),
          square_convolution(8, 64, 14, 64, 3, 1, 1, false),
          square_convolution(8, 64, 14, 128, 1, 2, 0, false),
          square_convolution(6, 13, 15, 24, 3, 2, 1, true),
          square_convolution(4, 3, 32, 16, 7, 2, 3, false),
          grouped(square_convolution(8, 32, 14, 32, 3, 1, 1, false), 32, 1),
          grouped(square_convolution(4, 64, 9, 64, 3, 1, 2, true), 8, 2)};
}

// The separate ops run first (they choose and cache the algorithms), the combined op second: the
// same algorithms on the same (once-cast) operands, so the same bits, in every precision.
TEST(CudaConvolutionBackward, CombinedEqualsTheSeparateOpsInEveryPrecision) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& cuda = cuda_backend();
  for (const ComputePrecision precision :
       {ComputePrecision::Float32, ComputePrecision::BFloat16, ComputePrecision::Float16}) {
    const PrecisionScope scope(cuda, precision);
    std::uint64_t stream = 100;
    for (const ConvolutionGeometry& g : geometries()) {
      SCOPED_TRACE(compute_precision_name(precision) + " " + std::to_string(g.in_channels) + "->" +
                   std::to_string(g.out_channels) + " kernel " + std::to_string(g.kernel_height) +
                   " stride " + std::to_string(g.stride));
      const Layer layer(cuda, g, stream += 3);
      for (const bool with_grad_input : {true, false}) {
        const Gradients separate = separate_ops(cuda, layer, with_grad_input);
        const Gradients combined = combined_op(cuda, layer, with_grad_input);
        expect_same(combined, separate, with_grad_input, g.has_bias);
      }
    }
  }
}

// A shape seen first by the combined op: its algorithm searches run on the shared cast (and a
// direction without a reduced-precision algorithm falls back to fp32 there); the separate ops
// called afterwards find the cached choices and give the same bits.
TEST(CudaConvolutionBackward, CombinedFirstThenSeparateGiveTheSameBits) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& cuda = cuda_backend();
  for (const ComputePrecision precision :
       {ComputePrecision::Float32, ComputePrecision::BFloat16, ComputePrecision::Float16}) {
    const PrecisionScope scope(cuda, precision);
    // Shapes no other test of this program uses, so nothing is cached for them yet.
    for (const ConvolutionGeometry& g :
         {square_convolution(5, 24, 9, 40, 3, 1, 1, true), square_convolution(3, 1, 20, 8, 5, 1, 2, true)}) {
      SCOPED_TRACE(compute_precision_name(precision) + " " + std::to_string(g.in_channels) + "->" +
                   std::to_string(g.out_channels));
      const Layer layer(cuda, g, 300 + static_cast<std::uint64_t>(precision));
      const Gradients combined = combined_op(cuda, layer, true);
      const Gradients separate = separate_ops(cuda, layer, true);
      expect_same(combined, separate, true, g.has_bias);
    }
  }
}

// Backward passes gradients through two ping-pong buffers, so successive layers hand the same
// grad_output address with other contents (and other shapes): every call must cast what the buffer
// holds now. Two layers share one grad_output buffer here, called alternately.
TEST(CudaConvolutionBackward, ReusedGradOutputBufferIsCastAfresh) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& cuda = cuda_backend();
  for (const ComputePrecision precision : {ComputePrecision::BFloat16, ComputePrecision::Float16}) {
    const PrecisionScope scope(cuda, precision);
    const ConvolutionGeometry g = square_convolution(8, 32, 12, 32, 3, 1, 1, false);
    const Layer first(cuda, g, 500), second(cuda, g, 600);
    const Gradients expected_first = separate_ops(cuda, first, true);
    const Gradients expected_second = separate_ops(cuda, second, true);
    Tensor shared_grad_output = empty_floats(cuda, g.output_elements());
    Tensor grad_input = empty_floats(cuda, g.input_elements()),
           grad_weight = empty_floats(cuda, g.weight_elements());
    for (int round = 0; round < 2; ++round) {
      for (const Layer* layer : {&first, &second}) {
        cuda.copy(shared_grad_output.data(), layer->grad_output.data(), g.output_elements() * sizeof(float));
        cuda.convolution_backward(g, layer->input.data(), shared_grad_output.data(), layer->weight.data(),
                                  grad_input.data(), grad_weight.data(), nullptr);
        const Gradients& expected = layer == &first ? expected_first : expected_second;
        EXPECT_TRUE(same_bits(download(cuda, grad_input), expected.input))
            << compute_precision_name(precision) << " round " << round;
        EXPECT_TRUE(same_bits(download(cuda, grad_weight), expected.weight))
            << compute_precision_name(precision) << " round " << round;
      }
    }
  }
}

// The combined op against the CPU backend (fp32): the same tolerance as the separate ops' parity.
TEST(CudaConvolutionBackward, CombinedMatchesTheCpuInFloat32) {
  PHALANX_SKIP_WITHOUT_CUDA();
  for (const ConvolutionGeometry& g : geometries()) {
    SCOPED_TRACE(std::to_string(g.in_channels) + "->" + std::to_string(g.out_channels));
    // Wide 3x3 stride-1 convolutions keep a looser bound (see test_cuda_parity.cpp).
    const bool wide_3x3 =
        g.kernel_height == 3 && g.stride == 1 && g.in_channels >= 32 && g.out_channels >= 32;
    const double tolerance = wide_3x3 ? 2e-3 : 1e-4;
    const Gradients on_cuda = combined_op(cuda_backend(), Layer(cuda_backend(), g, 700), true);
    const Gradients on_cpu = combined_op(cpu_backend(), Layer(cpu_backend(), g, 700), true);
    std::size_t worst = 0;
    EXPECT_LE(scaled_max_difference(as_doubles(on_cuda.input), as_doubles(on_cpu.input), worst), tolerance);
    EXPECT_LE(scaled_max_difference(as_doubles(on_cuda.weight), as_doubles(on_cpu.weight), worst), tolerance);
    if (g.has_bias) {
      EXPECT_LE(scaled_max_difference(as_doubles(on_cuda.bias), as_doubles(on_cpu.bias), worst), 1e-5);
    }
  }
}

}  // namespace
}  // namespace phalanx::testing
