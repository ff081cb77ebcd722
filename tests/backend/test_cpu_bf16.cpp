// bf16 compute on the CPU backend (set_compute_precision(BFloat16)): each op family that bf16
// changes (convolution forward, backward data, backward weights; linear forward and backward)
// against the same op in fp32 on the same bf16-rounded inputs. On such inputs the conversion to
// bf16 is exact and every product of two bf16 values is exact in fp32, so the two differ only by
// the order of the fp32 sums: tolerance 1e-4 relative to max(1, |x|), 40x below bf16's rounding
// of an operand (2^-9). On unrounded inputs the bf16 op must give the very
// bits it gives on the rounded ones (it rounds to nearest even on the way in, nothing else), and
// those differ from fp32's by bf16's rounding: at most 1e-2 of the largest |value| of the result
// (measured up to 3.1e-3; the error of a sum of n terms grows as sqrt(n), its largest value as n). Batch norm, pooling, ReLU, the residual add and the loss run on fp32
// activations in this mode, their fp32 ops unchanged; gradient checks of every op stay fp32.
//
// The emulated and no-AMX paths: CTest runs this file again under ONEDNN_MAX_CPU_ISA=AVX512_CORE
// (no bf16 instructions) and AVX512_CORE_BF16 (no AMX), and under AVX2, where oneDNN has no bf16
// kernels and the backend computes in fp32 (the bf16 results are then fp32's bit for bit), with
// PHALANX_EXPECTED_BF16 naming what the backend must report (CpuBf16.ReportsHowBf16Runs) and
// CpuBf16.OneDnnHasTheKernelsTheNoteNames checking that oneDNN itself agrees at that ISA.
#include <gtest/gtest.h>

#include <cstring>
#include <dnnl.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::ComputePrecision;
using backend::ConvolutionGeometry;
using backend::LinearGeometry;

// Round to nearest even to bf16 and back, as oneDNN's reorder does (no NaN in these tests).
float round_to_bf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::vector<float> rounded(std::vector<float> values) {
  for (float& value : values) value = round_to_bf16(value);
  return values;
}

std::vector<double> widened(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Whether bf16 arithmetic is in effect when asked for (not below AVX-512, see the header).
bool bf16_available() {
  auto backend = make_test_backend();
  backend->set_compute_precision(ComputePrecision::BFloat16);
  return backend->arithmetic_note().find("bf16 unavailable") == std::string::npos;
}

constexpr double same_inputs_tolerance = 1e-4;
constexpr double bf16_rounding_tolerance = 1e-2;

// Largest |actual - expected| over max(1, largest |expected|): the error against the scale of the
// whole result, as bf16 rounding is (a single near-zero sum can lose all its relative digits).
double error_of_scale(const std::vector<float>& actual, const std::vector<float>& expected) {
  double largest = 1, worst = 0;
  for (const float value : expected) largest = std::max(largest, std::fabs(static_cast<double>(value)));
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    if (!(error <= worst)) worst = error;
  }
  return actual.size() == expected.size() ? worst / largest : INFINITY;
}

// ---- convolution -------------------------------------------------------------------------------

struct ConvolutionResults {
  std::vector<float> output, grad_input, grad_weight, grad_bias;
};

struct ConvolutionCase {
  std::string name;
  ConvolutionGeometry geometry;
};

void PrintTo(const ConvolutionCase& test_case, std::ostream* stream) {
  *stream << test_case.name;
}

struct ConvolutionData {
  std::vector<float> input, weight, bias, grad_output;
};

ConvolutionData convolution_data(const ConvolutionGeometry& g) {
  const auto inputs = static_cast<std::size_t>(g.input_elements());
  const auto outputs = static_cast<std::size_t>(g.output_elements());
  const auto weights = static_cast<std::size_t>(g.weight_elements());
  return {random_values(inputs, 11), random_values(weights, 12, -0.5f, 0.5f),
          random_values(std::size_t(g.out_channels), 13), random_values(outputs, 14)};
}

ConvolutionResults run_convolution(backend::Backend& backend, ComputePrecision precision,
                                   const ConvolutionGeometry& g, const ConvolutionData& data) {
  backend.set_compute_precision(precision);
  ConvolutionResults results{std::vector<float>(data.grad_output.size()), std::vector<float>(data.input.size()),
                             std::vector<float>(data.weight.size()), std::vector<float>(data.bias.size())};
  backend.convolution_forward(g, data.input.data(), data.weight.data(), g.has_bias ? data.bias.data() : nullptr,
                              results.output.data());
  backend.convolution_backward_data(g, data.grad_output.data(), data.weight.data(), results.grad_input.data());
  backend.convolution_backward_weights(g, data.input.data(), data.grad_output.data(),
                                       results.grad_weight.data(),
                                       g.has_bias ? results.grad_bias.data() : nullptr);
  backend.set_compute_precision(ComputePrecision::Float32);
  if (!g.has_bias) results.grad_bias.clear();
  return results;
}

ConvolutionGeometry grouped(ConvolutionGeometry geometry, int groups, int dilation) {
  geometry.groups = groups;
  geometry.dilation = dilation;
  return geometry;
}

class CpuBf16Convolution : public ::testing::TestWithParam<ConvolutionCase> {};

TEST_P(CpuBf16Convolution, MatchesFp32OnBf16RoundedInputs) {
  const ConvolutionGeometry& geometry = GetParam().geometry;
  auto backend = make_test_backend();
  ConvolutionData data = convolution_data(geometry);
  data.input = rounded(data.input);
  data.weight = rounded(data.weight);
  data.grad_output = rounded(data.grad_output);
  const ConvolutionResults fp32 = run_convolution(*backend, ComputePrecision::Float32, geometry, data);
  const ConvolutionResults bf16 = run_convolution(*backend, ComputePrecision::BFloat16, geometry, data);
  EXPECT_LE(max_error(bf16.output, widened(fp32.output)), same_inputs_tolerance) << "forward";
  EXPECT_LE(max_error(bf16.grad_input, widened(fp32.grad_input)), same_inputs_tolerance) << "backward data";
  EXPECT_LE(max_error(bf16.grad_weight, widened(fp32.grad_weight)), same_inputs_tolerance)
      << "backward weights";
  EXPECT_LE(max_error(bf16.grad_bias, widened(fp32.grad_bias)), same_inputs_tolerance) << "bias gradient";
}

TEST_P(CpuBf16Convolution, RoundsItsOperandsAndNothingElse) {
  const ConvolutionGeometry& geometry = GetParam().geometry;
  auto backend = make_test_backend();
  const ConvolutionData raw = convolution_data(geometry);
  ConvolutionData rounded_data = raw;
  rounded_data.input = rounded(raw.input);
  rounded_data.weight = rounded(raw.weight);
  rounded_data.grad_output = rounded(raw.grad_output);
  const ConvolutionResults on_raw = run_convolution(*backend, ComputePrecision::BFloat16, geometry, raw);
  const ConvolutionResults on_rounded =
      run_convolution(*backend, ComputePrecision::BFloat16, geometry, rounded_data);
  if (bf16_available()) {
    EXPECT_TRUE(same_bits(on_raw.output, on_rounded.output));
    EXPECT_TRUE(same_bits(on_raw.grad_input, on_rounded.grad_input));
    EXPECT_TRUE(same_bits(on_raw.grad_weight, on_rounded.grad_weight));
    EXPECT_TRUE(same_bits(on_raw.grad_bias, on_rounded.grad_bias));
  }
  // And bf16 is in effect: the results are not fp32's on the raw inputs, yet within bf16 rounding.
  const ConvolutionResults fp32 = run_convolution(*backend, ComputePrecision::Float32, geometry, raw);
  if (!bf16_available()) {
    EXPECT_TRUE(same_bits(on_raw.output, fp32.output) && same_bits(on_raw.grad_input, fp32.grad_input) &&
                same_bits(on_raw.grad_weight, fp32.grad_weight));
    return;
  }
  EXPECT_FALSE(same_bits(on_raw.output, fp32.output));
  EXPECT_LE(error_of_scale(on_raw.output, fp32.output), bf16_rounding_tolerance);
  EXPECT_LE(error_of_scale(on_raw.grad_input, fp32.grad_input), bf16_rounding_tolerance);
  EXPECT_LE(error_of_scale(on_raw.grad_weight, fp32.grad_weight), bf16_rounding_tolerance);
}

// convolution_backward (both directions over one grad_output, which bf16 converts once) gives
// the bits of the two separate calls.
TEST_P(CpuBf16Convolution, CombinedBackwardEqualsSeparate) {
  const ConvolutionGeometry& geometry = GetParam().geometry;
  const ConvolutionData data = convolution_data(geometry);
  auto backend = make_test_backend();
  const ConvolutionResults separate = run_convolution(*backend, ComputePrecision::BFloat16, geometry, data);
  backend->set_compute_precision(ComputePrecision::BFloat16);
  ConvolutionResults combined{{}, std::vector<float>(data.input.size()), std::vector<float>(data.weight.size()),
                              std::vector<float>(data.bias.size())};
  backend->convolution_backward(geometry, data.input.data(), data.grad_output.data(), data.weight.data(),
                                combined.grad_input.data(), combined.grad_weight.data(),
                                geometry.has_bias ? combined.grad_bias.data() : nullptr);
  if (!geometry.has_bias) combined.grad_bias.clear();
  EXPECT_TRUE(same_bits(separate.grad_input, combined.grad_input));
  EXPECT_TRUE(same_bits(separate.grad_weight, combined.grad_weight));
  EXPECT_TRUE(same_bits(separate.grad_bias, combined.grad_bias));
  // Without grad_input (a first layer) only the weight gradients.
  std::vector<float> grad_weight(data.weight.size());
  backend->convolution_backward(geometry, data.input.data(), data.grad_output.data(), data.weight.data(),
                                nullptr, grad_weight.data(), nullptr);
  EXPECT_TRUE(same_bits(separate.grad_weight, grad_weight));
}

// fp32 gives the same bits before and after bf16 ran the same shape (primitives are cached per
// shape and precision, so bf16 never replaces an fp32 primitive).
TEST_P(CpuBf16Convolution, Fp32BitwiseUnchangedAfterBf16) {
  const ConvolutionGeometry& geometry = GetParam().geometry;
  const ConvolutionData data = convolution_data(geometry);
  auto backend = make_test_backend();
  const ConvolutionResults before = run_convolution(*backend, ComputePrecision::Float32, geometry, data);
  run_convolution(*backend, ComputePrecision::BFloat16, geometry, data);
  const ConvolutionResults after = run_convolution(*backend, ComputePrecision::Float32, geometry, data);
  auto fresh = make_test_backend();
  const ConvolutionResults never_bf16 = run_convolution(*fresh, ComputePrecision::Float32, geometry, data);
  for (const auto* results : {&after, &never_bf16}) {
    EXPECT_TRUE(same_bits(before.output, results->output));
    EXPECT_TRUE(same_bits(before.grad_input, results->grad_input));
    EXPECT_TRUE(same_bits(before.grad_weight, results->grad_weight));
    EXPECT_TRUE(same_bits(before.grad_bias, results->grad_bias));
  }
}

// The layers of fmnist_cnn and resnet20 (small batches), and shapes AMX takes and does not take:
// 1 and 3 input channels reduce over fewer than AMX's 16-wide bf16 pairs. Then MobileNet's
// depthwise layers (stride 1 and 2), a ResNeXt-style grouped layer and a dilated one.
INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuBf16Convolution,
    ::testing::Values(
        ConvolutionCase{"fmnist_conv1_1to32_28x28", square_convolution(4, 1, 28, 32, 3, 1, 1, true)},
        ConvolutionCase{"fmnist_conv2_32to64_14x14", square_convolution(4, 32, 14, 64, 3, 1, 1, true)},
        ConvolutionCase{"resnet_stem_3to16_32x32", square_convolution(2, 3, 32, 16, 3, 1, 1, false)},
        ConvolutionCase{"resnet_16to16_32x32", square_convolution(2, 16, 32, 16, 3, 1, 1, false)},
        ConvolutionCase{"resnet_16to32_stride2", square_convolution(2, 16, 32, 32, 3, 2, 1, false)},
        ConvolutionCase{"resnet_1x1_32to64_stride2", square_convolution(2, 32, 16, 64, 1, 2, 0, false)},
        ConvolutionCase{"resnet_64to64_8x8", square_convolution(3, 64, 8, 64, 3, 1, 1, false)},
        ConvolutionCase{"depthwise_32_3x3",
                        grouped(square_convolution(2, 32, 12, 32, 3, 1, 1, false), 32, 1)},
        ConvolutionCase{"depthwise_48_stride2",
                        grouped(square_convolution(2, 48, 11, 48, 3, 2, 1, true), 48, 1)},
        ConvolutionCase{"grouped_64to64_g8", grouped(square_convolution(2, 64, 8, 64, 3, 1, 1, false), 8, 1)},
        ConvolutionCase{"dilated_32to32_d2",
                        grouped(square_convolution(2, 32, 10, 32, 3, 1, 2, true), 1, 2)}),
    [](const ::testing::TestParamInfo<ConvolutionCase>& info) { return info.param.name; });

// ---- linear ------------------------------------------------------------------------------------

struct LinearResults {
  std::vector<float> output, grad_input, grad_weight, grad_bias;
};

struct LinearData {
  std::vector<float> input, weight, bias, grad_output;
};

LinearData linear_data(const LinearGeometry& g) {
  return {random_values(std::size_t(g.batch) * g.in_features, 21),
          random_values(std::size_t(g.out_features) * g.in_features, 22, -0.5f, 0.5f),
          random_values(std::size_t(g.out_features), 23),
          random_values(std::size_t(g.batch) * g.out_features, 24)};
}

LinearResults run_linear(backend::Backend& backend, ComputePrecision precision, const LinearGeometry& g,
                         const LinearData& data) {
  backend.set_compute_precision(precision);
  LinearResults results{std::vector<float>(data.grad_output.size()), std::vector<float>(data.input.size()),
                        std::vector<float>(data.weight.size()), std::vector<float>(data.bias.size())};
  backend.linear_forward(g, data.input.data(), data.weight.data(), data.bias.data(), results.output.data());
  backend.linear_backward(g, data.input.data(), data.weight.data(), data.grad_output.data(),
                          results.grad_input.data(), results.grad_weight.data(), results.grad_bias.data());
  backend.set_compute_precision(ComputePrecision::Float32);
  return results;
}

LinearGeometry linear(int batch, int in_features, int out_features) {
  LinearGeometry geometry;
  geometry.batch = batch;
  geometry.in_features = in_features;
  geometry.out_features = out_features;
  return geometry;
}

struct LinearCase {
  std::string name;
  LinearGeometry geometry;
};

void PrintTo(const LinearCase& test_case, std::ostream* stream) {
  *stream << test_case.name;
}

class CpuBf16Linear : public ::testing::TestWithParam<LinearCase> {};

TEST_P(CpuBf16Linear, MatchesFp32OnBf16RoundedInputs) {
  const LinearGeometry& geometry = GetParam().geometry;
  auto backend = make_test_backend();
  LinearData data = linear_data(geometry);
  data.input = rounded(data.input);
  data.weight = rounded(data.weight);
  data.grad_output = rounded(data.grad_output);
  const LinearResults fp32 = run_linear(*backend, ComputePrecision::Float32, geometry, data);
  const LinearResults bf16 = run_linear(*backend, ComputePrecision::BFloat16, geometry, data);
  EXPECT_LE(max_error(bf16.output, widened(fp32.output)), same_inputs_tolerance) << "forward";
  EXPECT_LE(max_error(bf16.grad_input, widened(fp32.grad_input)), same_inputs_tolerance) << "backward data";
  EXPECT_LE(max_error(bf16.grad_weight, widened(fp32.grad_weight)), same_inputs_tolerance)
      << "backward weights";
  EXPECT_LE(max_error(bf16.grad_bias, widened(fp32.grad_bias)), same_inputs_tolerance) << "bias gradient";
}

TEST_P(CpuBf16Linear, RoundsItsOperandsAndNothingElse) {
  const LinearGeometry& geometry = GetParam().geometry;
  auto backend = make_test_backend();
  const LinearData raw = linear_data(geometry);
  LinearData rounded_data = raw;
  rounded_data.input = rounded(raw.input);
  rounded_data.weight = rounded(raw.weight);
  rounded_data.grad_output = rounded(raw.grad_output);
  const LinearResults on_raw = run_linear(*backend, ComputePrecision::BFloat16, geometry, raw);
  const LinearResults on_rounded = run_linear(*backend, ComputePrecision::BFloat16, geometry, rounded_data);
  const LinearResults fp32 = run_linear(*backend, ComputePrecision::Float32, geometry, raw);
  if (!bf16_available()) {
    EXPECT_TRUE(same_bits(on_raw.output, fp32.output) && same_bits(on_raw.grad_input, fp32.grad_input) &&
                same_bits(on_raw.grad_weight, fp32.grad_weight));
    return;
  }
  EXPECT_TRUE(same_bits(on_raw.output, on_rounded.output));
  EXPECT_TRUE(same_bits(on_raw.grad_input, on_rounded.grad_input));
  EXPECT_TRUE(same_bits(on_raw.grad_weight, on_rounded.grad_weight));
  EXPECT_TRUE(same_bits(on_raw.grad_bias, on_rounded.grad_bias));
  EXPECT_FALSE(same_bits(on_raw.output, fp32.output));
  EXPECT_LE(error_of_scale(on_raw.output, fp32.output), bf16_rounding_tolerance);
  EXPECT_LE(error_of_scale(on_raw.grad_input, fp32.grad_input), bf16_rounding_tolerance);
  EXPECT_LE(error_of_scale(on_raw.grad_weight, fp32.grad_weight), bf16_rounding_tolerance);
}

TEST_P(CpuBf16Linear, Fp32BitwiseUnchangedAfterBf16) {
  const LinearGeometry& geometry = GetParam().geometry;
  const LinearData data = linear_data(geometry);
  auto backend = make_test_backend();
  const LinearResults before = run_linear(*backend, ComputePrecision::Float32, geometry, data);
  run_linear(*backend, ComputePrecision::BFloat16, geometry, data);
  const LinearResults after = run_linear(*backend, ComputePrecision::Float32, geometry, data);
  EXPECT_TRUE(same_bits(before.output, after.output));
  EXPECT_TRUE(same_bits(before.grad_input, after.grad_input));
  EXPECT_TRUE(same_bits(before.grad_weight, after.grad_weight));
  EXPECT_TRUE(same_bits(before.grad_bias, after.grad_bias));
}

// fmnist_cnn's two linear layers and resnet20's head (small batches).
INSTANTIATE_TEST_SUITE_P(Shapes, CpuBf16Linear,
                         ::testing::Values(LinearCase{"fmnist_fc1_3136to128", linear(8, 3136, 128)},
                                           LinearCase{"fmnist_fc2_128to10", linear(8, 128, 10)},
                                           LinearCase{"resnet_head_64to10", linear(5, 64, 10)}),
                         [](const ::testing::TestParamInfo<LinearCase>& info) { return info.param.name; });

// ---- what the backend says -----------------------------------------------------------------------

TEST(CpuBf16, ReportsHowBf16Runs) {
  auto backend = make_test_backend();
  EXPECT_EQ(backend->arithmetic_note(), "") << "fp32 has nothing to report";
  backend->set_compute_precision(ComputePrecision::BFloat16);
  const std::string note = backend->arithmetic_note();
  const std::string expected = expected_bf16();
  if (expected == "unavailable") {
    EXPECT_NE(note.find("bf16 unavailable: oneDNN has no bf16 kernels below AVX-512"), std::string::npos)
        << note;
  } else if (expected == "amx") {
    EXPECT_NE(note.find("bf16 on AMX tiles"), std::string::npos) << note;
  } else if (expected == "avx512_bf16") {
    EXPECT_NE(note.find("AVX-512 bf16 instructions, no AMX"), std::string::npos) << note;
  } else {
    EXPECT_NE(note.find("bf16 emulated by oneDNN"), std::string::npos) << note;
  }
  backend->set_compute_precision(ComputePrecision::Float32);
  EXPECT_EQ(backend->arithmetic_note(), "");
}

// The note is read from oneDNN's ISA; what oneDNN then runs must be what it names. For fmnist_cnn's
// second convolution described as the backend describes it (NHWC bf16 operands, fp32 results), at
// the ISA this run holds oneDNN to: the forward on AMX tiles; on AVX-512 bf16 instructions without
// AMX; on plain AVX-512 still a bf16 kernel (oneDNN's emulation), with both backward directions, the
// inner product and pooling in bf16 too; and at AVX2 no bf16 convolution at all, so computing in
// fp32 there is the only choice. (oneDNN 3.2 under ONEDNN_MAX_CPU_ISA=AVX512_CORE_AMX,
// AVX512_CORE_BF16, AVX512_CORE: brgconv:avx512_core_amx, brgconv:avx512_core_bf16,
// jit_bf16:avx512_core.) A CPU below AVX-512 with AVX-NE-CONVERT (avx2_vnni_2), for which later
// oneDNN 3 releases have some bf16 kernels, is not asked about: the backend computes in fp32 there.
TEST(CpuBf16, OneDnnHasTheKernelsTheNoteNames) {
  using Tag = dnnl::memory::format_tag;
  using DataType = dnnl::memory::data_type;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const dnnl::memory::desc input({8, 32, 14, 14}, DataType::bf16, Tag::nhwc);
  const dnnl::memory::desc output({8, 64, 14, 14}, DataType::f32, Tag::nhwc);
  const dnnl::memory::desc grad_input({8, 32, 14, 14}, DataType::f32, Tag::nhwc);
  const dnnl::memory::desc grad_output({8, 64, 14, 14}, DataType::bf16, Tag::nhwc);
  const dnnl::memory::desc weight({64, 32, 3, 3}, DataType::bf16, Tag::any);
  const dnnl::memory::desc grad_weight({64, 32, 3, 3}, DataType::f32, Tag::any);
  const dnnl::memory::desc bias({64}, DataType::f32, Tag::x);
  const dnnl::memory::dims ones{1, 1};
  const dnnl::primitive_attr attributes;
  constexpr bool allow_empty = true;
  const dnnl::convolution_forward::primitive_desc forward(
      engine, dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, input, weight, bias,
      output, ones, ones, ones, attributes, allow_empty);
  const std::string expected = expected_bf16();
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  if (expected == "unavailable") {
    if ((isa & ~static_cast<unsigned>(dnnl::cpu_isa::avx2)) == 0) {
      EXPECT_FALSE(forward) << "oneDNN has a bf16 convolution at AVX2: " << forward.impl_info_str();
    }
    return;
  }
  ASSERT_TRUE(forward) << "no bf16 convolution forward, though the note says " << expected;
  const std::string kernel = forward.impl_info_str();
  EXPECT_EQ(kernel.find("amx") != std::string::npos, expected == "amx") << kernel;
  EXPECT_EQ(kernel.find("avx512_core_bf16") != std::string::npos, expected == "avx512_bf16") << kernel;
  EXPECT_TRUE(dnnl::convolution_backward_data::primitive_desc(engine, dnnl::algorithm::convolution_direct,
                                                              grad_input, weight, grad_output, ones, ones,
                                                              ones, forward, attributes, allow_empty))
      << "no bf16 convolution backward data";
  EXPECT_TRUE(dnnl::convolution_backward_weights::primitive_desc(
      engine, dnnl::algorithm::convolution_direct, input, grad_weight, bias, grad_output, ones, ones, ones,
      forward, attributes, allow_empty))
      << "no bf16 convolution backward weights";
  EXPECT_TRUE(dnnl::inner_product_forward::primitive_desc(
      engine, dnnl::prop_kind::forward_training, dnnl::memory::desc({8, 128}, DataType::bf16, Tag::nc),
      dnnl::memory::desc({10, 128}, DataType::bf16, Tag::any),
      dnnl::memory::desc({8, 10}, DataType::f32, Tag::nc), attributes, allow_empty))
      << "no bf16 inner product";
  EXPECT_TRUE(dnnl::pooling_forward::primitive_desc(
      engine, dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max, input,
      dnnl::memory::desc({8, 32, 7, 7}, DataType::bf16, Tag::nhwc), {2, 2}, {2, 2}, {0, 0}, {0, 0}, {0, 0},
      attributes, allow_empty))
      << "no bf16 pooling";
}

}  // namespace
}  // namespace phalanx::testing
