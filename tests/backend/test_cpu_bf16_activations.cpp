// bf16 activations on the CPU backend (set_activation_precision(BFloat16) under bf16 compute,
// train.activation_dtype: bf16): every op family that reads or writes activations, held as bf16
// in the first half of the caller's fp32-sized buffers, against the same op with fp32 activations
// on the same bf16-rounded inputs. Tolerances per op:
//   - element-wise ops (ReLU forward and backward, add, add + ReLU, accumulate, dropout, the
//     flatten transpose, input normalisation and augmentation), batch norm (all three passes) and
//     the loss compute in fp32 and round once: their bf16 results are the fp32 op's results
//     rounded to nearest even, bit for bit, and everything they keep in fp32 (batch-norm
//     statistics, gamma and beta gradients, the loss totals, probabilities) is fp32's bits;
//   - max pooling selects a value: bitwise the rounded fp32 result; average pooling and the
//     convolutions and linear layers accumulate in fp32 inside oneDNN and round the result once:
//     within one bf16 rounding (2^-8 relative, so a half-ulp tie broken after a different
//     summation order passes) of the fp32-activation result plus 1e-5 of the result's scale; their
//     fp32 weight and bias gradients within 1e-4 of the scale (the same bf16 operands, possibly
//     another kernel's summation order).
// The fp32 path stays bitwise what it was: ops run before and after a stretch of bf16 activations
// give the same bits. Under ONEDNN_MAX_CPU_ISA=AVX2 (CTest's CpuBf16Isa.AVX2) oneDNN has no bf16
// kernels and bf16 activations are refused as bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend_test_support.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

using backend::BatchNormGeometry;
using backend::ComputePrecision;
using backend::ConvolutionGeometry;
using backend::LinearGeometry;
using backend::PoolingGeometry;
using backend::PoolingKind;

std::uint16_t bf16_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

float from_bf16_bits(std::uint16_t stored) {
  const std::uint32_t bits = static_cast<std::uint32_t>(stored) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

float round_to_bf16(float value) {
  return from_bf16_bits(bf16_bits(value));
}

std::vector<float> rounded(std::vector<float> values) {
  for (float& value : values) value = round_to_bf16(value);
  return values;
}

// A buffer of `count` fp32 slots holding `values` as bf16 in its first half, as the backend
// expects activations under bf16 storage; the second half is filled with a marker no op may touch.
std::vector<float> stored_bf16(const std::vector<float>& values) {
  std::vector<float> buffer(values.size(), 12345.0f);
  auto* stored = reinterpret_cast<std::uint16_t*>(buffer.data());
  for (std::size_t i = 0; i < values.size(); ++i) stored[i] = bf16_bits(values[i]);
  return buffer;
}

std::vector<float> read_bf16(const std::vector<float>& buffer) {
  std::vector<float> values(buffer.size());
  const auto* stored = reinterpret_cast<const std::uint16_t*>(buffer.data());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = from_bf16_bits(stored[i]);
  return values;
}

// The untouched second half of a bf16-stored buffer (odd counts share the middle slot).
bool second_half_untouched(const std::vector<float>& buffer) {
  for (std::size_t i = (buffer.size() + 1) / 2; i < buffer.size(); ++i)
    if (buffer[i] != 12345.0f) return false;
  return true;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Largest |actual - expected| beyond one bf16 rounding of expected (2^-8 |expected|), over the
// largest |expected| (at least 1).
double error_beyond_one_rounding(const std::vector<float>& actual, const std::vector<float>& expected) {
  if (actual.size() != expected.size()) return INFINITY;
  double largest = 1, worst = 0;
  for (const float value : expected) largest = std::max(largest, std::fabs(static_cast<double>(value)));
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]) -
                         std::fabs(static_cast<double>(expected[i])) / 256.0;
    if (!(error <= worst)) worst = error;
  }
  return worst / largest;
}

double error_of_scale(const std::vector<float>& actual, const std::vector<float>& expected) {
  if (actual.size() != expected.size()) return INFINITY;
  double largest = 1, worst = 0;
  for (const float value : expected) largest = std::max(largest, std::fabs(static_cast<double>(value)));
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    if (!(error <= worst)) worst = error;
  }
  return worst / largest;
}

constexpr double accumulated_tolerance = 1e-5;
constexpr double weight_gradient_tolerance = 1e-4;

// A convolution's or linear layer's forward output and backward gradients.
struct LayerResults {
  std::vector<float> output, grad_input, grad_weight, grad_bias;
};

// Runs `pass` (forward and backward of one layer: stored input, stored output gradient, results
// to fill) on fp32 activations, or on bf16-stored ones read back as floats.
LayerResults run_layer(const std::vector<float>& input, const std::vector<float>& grad_output,
                       std::size_t weights, std::size_t biases, bool bf16,
                       const std::function<void(const float*, const float*, LayerResults&)>& pass) {
  LayerResults results{std::vector<float>(grad_output.size()), std::vector<float>(input.size()),
                       std::vector<float>(weights), std::vector<float>(biases)};
  const std::vector<float> in = bf16 ? stored_bf16(input) : input;
  const std::vector<float> grad = bf16 ? stored_bf16(grad_output) : grad_output;
  pass(in.data(), grad.data(), results);
  if (bf16) {
    results.output = read_bf16(results.output);
    results.grad_input = read_bf16(results.grad_input);
  }
  return results;
}

// Activations within one rounding (accumulated in fp32, rounded once), fp32 weight and bias
// gradients within the scale's tolerance.
void expect_layer_results_match(const LayerResults& actual, const LayerResults& expected,
                                const std::string& name) {
  EXPECT_LE(error_beyond_one_rounding(actual.output, expected.output), accumulated_tolerance) << name;
  EXPECT_LE(error_beyond_one_rounding(actual.grad_input, expected.grad_input), accumulated_tolerance) << name;
  EXPECT_LE(error_of_scale(actual.grad_weight, expected.grad_weight), weight_gradient_tolerance) << name;
  EXPECT_LE(error_of_scale(actual.grad_bias, expected.grad_bias), weight_gradient_tolerance) << name;
}

// Whether this CPU takes bf16 activations (oneDNN has bf16 kernels: not below AVX-512).
// The backend's own answer (QueryAgreesWithTheSetter checks it against the setter).
bool bf16_activations_available() {
  return make_test_backend()->can_hold_activations(ComputePrecision::BFloat16, ComputePrecision::BFloat16);
}

// A backend computing in bf16, with activations in fp32 (the reference) or in bf16.
std::unique_ptr<backend::Backend> backend_with(ComputePrecision activations) {
  auto backend = make_test_backend();
  backend->set_compute_precision(ComputePrecision::BFloat16);
  backend->set_activation_precision(activations);
  return backend;
}

class CpuBf16Activations : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bf16_activations_available()) GTEST_SKIP() << "no oneDNN bf16 kernels here (see Refused)";
    reference_ = backend_with(ComputePrecision::Float32);
    bf16_ = backend_with(ComputePrecision::BFloat16);
  }
  std::unique_ptr<backend::Backend> reference_, bf16_;
};

TEST(CpuBf16ActivationsSetup, RefusedWhereOneDnnHasNoBf16KernelsAndWithoutBf16Compute) {
  auto backend = make_test_backend();
  // fp32 compute with bf16 activations would convert at every convolution: refused everywhere.
  EXPECT_THROW(backend->set_activation_precision(ComputePrecision::BFloat16), Error);
  EXPECT_THROW(backend->set_activation_precision(ComputePrecision::Float16), Error);
  backend->set_compute_precision(ComputePrecision::BFloat16);
  if (expected_bf16() == "unavailable") {
    try {
      backend->set_activation_precision(ComputePrecision::BFloat16);
      ADD_FAILURE() << "bf16 activations accepted without oneDNN bf16 kernels";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
      EXPECT_NE(std::string(error.what()).find("AVX-512"), std::string::npos) << error.what();
    }
    return;
  }
  if (!bf16_activations_available()) GTEST_SKIP() << "no oneDNN bf16 kernels here";
  backend->set_activation_precision(ComputePrecision::BFloat16);
  // The compute precision changes only under fp32 activations.
  EXPECT_THROW(backend->set_compute_precision(ComputePrecision::Float32), Error);
  backend->set_activation_precision(ComputePrecision::Float32);
  EXPECT_NO_THROW(backend->set_compute_precision(ComputePrecision::Float32));
}

// activation_precision_refusal answers for set_activation_precision without trying it: for every
// pair of activations and compute precision, empty exactly where the setter accepts the pair, and
// the setter's message where it refuses; asking changes nothing. Where oneDNN has no bf16 kernels
// (a CPU without AVX-512, or CpuBf16Isa.AVX2 holding oneDNN below it) bf16 activations are refused
// naming AVX-512, elsewhere held under bf16 compute.
TEST(CpuBf16ActivationsSetup, QueryAgreesWithTheSetter) {
  const std::vector<ComputePrecision> precisions{ComputePrecision::Float32, ComputePrecision::BFloat16,
                                                 ComputePrecision::Float16};
  const bool unavailable = expected_bf16() == "unavailable";
  for (const ComputePrecision compute : {ComputePrecision::Float32, ComputePrecision::BFloat16}) {
    for (const ComputePrecision activations : precisions) {
      SCOPED_TRACE(backend::compute_precision_name(compute) + " compute, " +
                   backend::compute_precision_name(activations) + " activations");
      auto backend = make_test_backend();
      backend->set_compute_precision(compute);
      const std::string refusal = backend->activation_precision_refusal(activations, compute);
      EXPECT_EQ(backend->can_hold_activations(activations, compute), refusal.empty());
      const bool held = activations == ComputePrecision::Float32 ||
                        (activations == compute && compute == ComputePrecision::BFloat16 && !unavailable);
      EXPECT_EQ(refusal.empty(), held) << refusal;
      if (!refusal.empty()) {
        EXPECT_NE(refusal.find(backend->name()), std::string::npos) << refusal;
      }
      if (unavailable && activations == compute && compute == ComputePrecision::BFloat16) {
        EXPECT_NE(refusal.find("AVX-512"), std::string::npos) << refusal;
      }
      // The question left fp32 activations: an op still reads and writes 4-byte floats.
      const std::vector<float> input{-1.5f, 2.25f, 1e-30f};
      std::vector<float> output(input.size(), -7.0f);
      backend->relu_forward(3, input.data(), output.data());
      EXPECT_EQ(output, (std::vector<float>{0.0f, 2.25f, 1e-30f}));
      std::string thrown;
      try {
        backend->set_activation_precision(activations);
      } catch (const Error& error) {
        EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
        thrown = error.what();
      }
      // The error's text is the refusal after the rank's prefix ("rank 0: ").
      EXPECT_EQ(thrown.empty(), refusal.empty()) << thrown;
      EXPECT_TRUE(thrown.ends_with(refusal)) << thrown << "\n" << refusal;
      backend->set_activation_precision(ComputePrecision::Float32);
    }
  }
}

TEST_F(CpuBf16Activations, ElementwiseOpsAreTheFp32OpsRoundedOnce) {
  constexpr std::int64_t count = 7 * 73 * 137;  // above the parallel threshold, and odd
  const std::vector<float> a = rounded(random_values(count, 1, -3, 3)),
                           b = rounded(random_values(count, 2, -3, 3));
  struct Op {
    std::string name;
    std::function<void(backend::Backend&, const float*, const float*, float*)> run;
  };
  const std::vector<Op> ops = {
      {"relu_forward",
       [](backend::Backend& on, const float* x, const float*, float* y) { on.relu_forward(count, x, y); }},
      {"relu_backward", [](backend::Backend& on, const float* x, const float* g,
                           float* y) { on.relu_backward(count, x, g, y); }},
      {"add", [](backend::Backend& on, const float* x, const float* g, float* y) { on.add(count, x, g, y); }},
      {"add_relu",
       [](backend::Backend& on, const float* x, const float* g, float* y) { on.add_relu(count, x, g, y); }},
      {"accumulate",
       [](backend::Backend& on, const float* x, const float* g, float* y) {
         on.copy(y, g, count * sizeof(float));
         on.accumulate(count, x, y);
       }},
      {"dropout_forward",
       [](backend::Backend& on, const float* x, const float*, float* y) {
         std::vector<std::uint8_t> mask(count);
         on.dropout_forward(count, 0.3f, 7, 3, x, y, mask.data());
       }},
      {"dropout_backward",
       [](backend::Backend& on, const float* x, const float* g, float* y) {
         // The mask of a forward (the same on both backends: a function of seed and stream).
         std::vector<std::uint8_t> mask(count);
         on.dropout_forward(count, 0.3f, 7, 3, x, y, mask.data());
         on.dropout_backward(count, 0.3f, mask.data(), g, y);
       }},
      {"transpose_samples", [](backend::Backend& on, const float* x, const float*,
                               float* y) { on.transpose_samples(7, 73, 137, x, y); }},
  };
  for (const Op& op : ops) {
    std::vector<float> expected(count);
    op.run(*reference_, a.data(), b.data(), expected.data());
    const std::vector<float> stored_a = stored_bf16(a), stored_b = stored_bf16(b);
    std::vector<float> output = stored_bf16(std::vector<float>(count, 0.0f));
    op.run(*bf16_, stored_a.data(), stored_b.data(), output.data());
    EXPECT_TRUE(same_bits(read_bf16(output), rounded(expected))) << op.name;
    EXPECT_TRUE(second_half_untouched(output)) << op.name;
  }
}

// ReLU on bf16 works on the bits: the special values get what the fp32 formulas give, rounded
// (x < 0 ? 0 : x keeps -0 and NaN; the gradient passes where the output is > 0, +inf included).
TEST_F(CpuBf16Activations, ReluOnSpecialValuesIsTheFp32FormulaRounded) {
  const std::vector<std::uint16_t> specials = {0x0000, 0x8000, 0x0001, 0x8001, 0x7f7f, 0xff7f, 0x7f80,
                                               0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xff81, 0x3f80, 0xbf80};
  std::vector<float> values;
  for (const std::uint16_t x : specials)
    for (const std::uint16_t g : specials) {
      values.push_back(from_bf16_bits(x));
      values.push_back(from_bf16_bits(g));
    }
  const std::int64_t count = static_cast<std::int64_t>(values.size() / 2);
  std::vector<float> inputs(count), gradients(count);
  for (std::int64_t i = 0; i < count; ++i) {
    inputs[i] = values[2 * i];
    gradients[i] = values[2 * i + 1];
  }
  std::vector<float> forward = stored_bf16(std::vector<float>(count, 0.0f));
  std::vector<float> backward = stored_bf16(std::vector<float>(count, 0.0f));
  const std::vector<float> stored_inputs = stored_bf16(inputs), stored_gradients = stored_bf16(gradients);
  bf16_->relu_forward(count, stored_inputs.data(), forward.data());
  bf16_->relu_backward(count, stored_inputs.data(), stored_gradients.data(), backward.data());
  const std::vector<float> forward_values = read_bf16(forward), backward_values = read_bf16(backward);
  for (std::int64_t i = 0; i < count; ++i) {
    const float x = inputs[i], g = gradients[i];
    const std::uint16_t expected_forward = bf16_bits(x < 0.0f ? 0.0f : x);
    const std::uint16_t expected_backward = bf16_bits(x > 0.0f ? g : 0.0f);
    // NaN keeps its sign and payload with the quiet bit set, as the fp32 loop's rounding does.
    const auto quieted = [](float value, std::uint16_t rounded_bits) {
      std::uint32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return std::isnan(value) ? static_cast<std::uint16_t>((bits >> 16) | 0x40u) : rounded_bits;
    };
    EXPECT_EQ(bf16_bits(forward_values[i]), quieted(x < 0.0f ? 0.0f : x, expected_forward)) << "x " << x;
    EXPECT_EQ(bf16_bits(backward_values[i]), quieted(x > 0.0f ? g : 0.0f, expected_backward))
        << "x " << x << " g " << g;
  }
}

TEST_F(CpuBf16Activations, InputNormalisationIsTheFp32OneRounded) {
  const std::int64_t pixels = 4 * 32 * 32;
  std::vector<std::uint8_t> images(pixels * 3);
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<std::uint8_t>((i * 37 + 11) % 256);
  const float mean[3] = {0.49f, 0.48f, 0.45f}, deviation[3] = {0.25f, 0.24f, 0.26f};
  std::vector<float> expected(images.size()), output = stored_bf16(std::vector<float>(images.size(), 0.0f));
  reference_->normalize_images(images.data(), pixels, 3, mean, deviation, expected.data());
  bf16_->normalize_images(images.data(), pixels, 3, mean, deviation, output.data());
  EXPECT_TRUE(same_bits(read_bf16(output), rounded(expected)));

  const backend::AugmentGeometry geometry{4, 32, 32, 3, 8};
  // Per image: shift_y, shift_x, flip, cutout_top, cutout_left, then the erased rectangle's top,
  // left, height and width (none in the second image).
  // The auto-augment op slots after those nine words stay zero (Identity).
  const std::vector<std::int32_t> first_words = {1,  -2, 1,  3, 4, 2, 3,  5, 6,  0, 0, 0,
                                                 40, 40, 0,  0, 0, 0, -4, 4, 1,  0, 0, 30,
                                                 28, 4,  10, 2, 3, 0, 28, 1, 10, 0, 8, 32};
  std::vector<std::int32_t> draws(static_cast<std::size_t>(4 * backend::augment_draw_words), 0);
  for (std::size_t image = 0; image < 4; ++image)
    std::copy_n(first_words.begin() + static_cast<std::ptrdiff_t>(9 * image), 9,
                draws.begin() + static_cast<std::ptrdiff_t>(image * backend::augment_draw_words));
  bf16_->augment_normalize_images(geometry, images.data(), draws.data(), mean, deviation, output.data());
  reference_->augment_normalize_images(geometry, images.data(), draws.data(), mean, deviation,
                                       expected.data());
  EXPECT_TRUE(same_bits(read_bf16(output), rounded(expected)));
}

TEST_F(CpuBf16Activations, BatchNormIsTheFp32OneRoundedWithFp32Statistics) {
  for (const auto activation : {backend::FusedActivation::None, backend::FusedActivation::Relu}) {
    const BatchNormGeometry geometry{32, 24, 16 * 16, 1e-5f, activation};
    const std::size_t values = std::size_t(32) * 16 * 16 * 24;
    // A mean large against the spread in some channels, as after a convolution with a bias.
    std::vector<float> input = random_values(values, 3, -2, 2);
    for (std::size_t i = 0; i < values; i += 24) input[i] += 40.0f;
    input = rounded(input);
    const std::vector<float> grad_output = rounded(random_values(values, 4));
    const std::vector<float> gamma = random_values(24, 5, 0.5f, 1.5f), beta = random_values(24, 6);

    struct Results {
      std::vector<float> output, running_mean, running_variance, saved_mean, saved_inverse_std, inference,
          grad_input, grad_gamma, grad_beta;
    };
    auto run = [&](backend::Backend& on, bool bf16) {
      Results r{std::vector<float>(values), std::vector<float>(24, 0.1f), std::vector<float>(24, 0.9f),
                std::vector<float>(24),     std::vector<float>(24),       std::vector<float>(values),
                std::vector<float>(values), std::vector<float>(24),       std::vector<float>(24)};
      const std::vector<float> in = bf16 ? stored_bf16(input) : input;
      const std::vector<float> grad = bf16 ? stored_bf16(grad_output) : grad_output;
      on.batch_norm_forward_training(geometry, in.data(), gamma.data(), beta.data(), r.output.data(),
                                     r.running_mean.data(), r.running_variance.data(), 0.1f,
                                     r.saved_mean.data(), r.saved_inverse_std.data());
      on.batch_norm_forward_inference(geometry, in.data(), gamma.data(), beta.data(), r.running_mean.data(),
                                      r.running_variance.data(), r.inference.data());
      BatchNormGeometry plain = geometry;
      plain.activation = backend::FusedActivation::None;
      on.batch_norm_backward(plain, in.data(), grad.data(), gamma.data(), r.saved_mean.data(),
                             r.saved_inverse_std.data(), r.grad_input.data(), r.grad_gamma.data(),
                             r.grad_beta.data());
      if (bf16) {
        r.output = read_bf16(r.output);
        r.inference = read_bf16(r.inference);
        r.grad_input = read_bf16(r.grad_input);
      }
      return r;
    };
    const Results expected = run(*reference_, false), actual = run(*bf16_, true);
    EXPECT_TRUE(same_bits(actual.output, rounded(expected.output)));
    EXPECT_TRUE(same_bits(actual.inference, rounded(expected.inference)));
    EXPECT_TRUE(same_bits(actual.grad_input, rounded(expected.grad_input)));
    EXPECT_TRUE(same_bits(actual.saved_mean, expected.saved_mean));
    EXPECT_TRUE(same_bits(actual.saved_inverse_std, expected.saved_inverse_std));
    EXPECT_TRUE(same_bits(actual.running_mean, expected.running_mean));
    EXPECT_TRUE(same_bits(actual.running_variance, expected.running_variance));
    EXPECT_TRUE(same_bits(actual.grad_gamma, expected.grad_gamma));
    EXPECT_TRUE(same_bits(actual.grad_beta, expected.grad_beta));
  }
}

TEST_F(CpuBf16Activations, PoolingMatchesFp32OnRoundedInputs) {
  for (const PoolingKind kind : {PoolingKind::Max, PoolingKind::Average}) {
    for (const PoolingGeometry& geometry :
         {PoolingGeometry{16, 32, 28, 28, 2, 2, 2, 0, kind}, PoolingGeometry{16, 64, 8, 8, 8, 8, 8, 0, kind}}) {
      const std::size_t inputs =
          std::size_t(geometry.batch) * geometry.channels * geometry.in_height * geometry.in_width;
      const std::size_t outputs =
          std::size_t(geometry.batch) * geometry.channels * geometry.out_height() * geometry.out_width();
      const std::vector<float> input = rounded(shuffled_distinct_values(inputs, 8, 1.0f / 64));
      const std::vector<float> grad_output = rounded(random_values(outputs, 9));
      auto run = [&](backend::Backend& on, bool bf16) {
        std::vector<std::uint8_t> workspace(on.pooling_workspace_bytes(geometry) + 1);
        std::vector<float> output(outputs), grad_input(inputs);
        const std::vector<float> in = bf16 ? stored_bf16(input) : input;
        const std::vector<float> grad = bf16 ? stored_bf16(grad_output) : grad_output;
        on.pooling_forward(geometry, in.data(), output.data(), workspace.data());
        on.pooling_backward(geometry, grad.data(), workspace.data(), grad_input.data());
        if (bf16) return std::make_pair(read_bf16(output), read_bf16(grad_input));
        return std::make_pair(output, grad_input);
      };
      const auto expected = run(*reference_, false), actual = run(*bf16_, true);
      const std::string name =
          (kind == PoolingKind::Max ? "max " : "average ") + std::to_string(geometry.kernel_height);
      if (kind == PoolingKind::Max) {
        EXPECT_TRUE(same_bits(actual.first, expected.first)) << name;
        EXPECT_TRUE(same_bits(actual.second, expected.second)) << name;
      } else {
        EXPECT_LE(error_beyond_one_rounding(actual.first, expected.first), accumulated_tolerance) << name;
        EXPECT_LE(error_beyond_one_rounding(actual.second, expected.second), accumulated_tolerance) << name;
      }
    }
  }
}

TEST_F(CpuBf16Activations, ConvolutionMatchesFp32ActivationsOnRoundedInputs) {
  const auto grouped = [](ConvolutionGeometry geometry, int groups, int dilation) {
    geometry.groups = groups;
    geometry.dilation = dilation;
    return geometry;
  };
  // fmnist_cnn's two layers and resnet20's stem, a block layer and a strided 1x1 shortcut; then a
  // depthwise layer (stride 1 and 2), a grouped one and a dilated one.
  for (const ConvolutionGeometry& geometry :
       {square_convolution(16, 1, 28, 32, 3, 1, 1, true), square_convolution(16, 32, 14, 64, 3, 1, 1, true),
        square_convolution(16, 3, 32, 16, 3, 1, 1, false), square_convolution(16, 16, 32, 16, 3, 1, 1, false),
        square_convolution(16, 16, 32, 32, 1, 2, 0, false),
        grouped(square_convolution(8, 32, 14, 32, 3, 1, 1, true), 32, 1),
        grouped(square_convolution(8, 32, 14, 32, 3, 2, 1, false), 32, 1),
        grouped(square_convolution(8, 32, 12, 64, 3, 1, 1, false), 4, 1),
        grouped(square_convolution(8, 16, 12, 16, 3, 1, 2, true), 1, 2)}) {
    const auto inputs = static_cast<std::size_t>(geometry.input_elements());
    const auto outputs = static_cast<std::size_t>(geometry.output_elements());
    const auto weights = static_cast<std::size_t>(geometry.weight_elements());
    const std::vector<float> input = rounded(random_values(inputs, 11)),
                             grad_output = rounded(random_values(outputs, 14));
    const std::vector<float> weight = rounded(random_values(weights, 12, -0.5f, 0.5f)),
                             bias = random_values(geometry.out_channels, 13);
    auto run = [&](backend::Backend& on, bool bf16) {
      return run_layer(input, grad_output, weights, geometry.out_channels, bf16,
                       [&](const float* in, const float* grad, LayerResults& results) {
                         const float* layer_bias = geometry.has_bias ? bias.data() : nullptr;
                         on.convolution_forward(geometry, in, weight.data(), layer_bias,
                                                results.output.data());
                         on.convolution_backward(geometry, in, grad, weight.data(), results.grad_input.data(),
                                                 results.grad_weight.data(),
                                                 geometry.has_bias ? results.grad_bias.data() : nullptr);
                       });
    };
    const LayerResults expected = run(*reference_, false), actual = run(*bf16_, true);
    const std::string name =
        std::to_string(geometry.in_channels) + "->" + std::to_string(geometry.out_channels) + " groups " +
        std::to_string(geometry.groups) + " dilation " + std::to_string(geometry.dilation);
    expect_layer_results_match(actual, expected, name);

    // The fused ReLU writes the rounded ReLU of the plain output.
    ConvolutionGeometry fused = geometry;
    fused.activation = backend::FusedActivation::Relu;
    std::vector<float> with_relu(outputs);
    const std::vector<float> in = stored_bf16(input);
    bf16_->convolution_forward(fused, in.data(), weight.data(), geometry.has_bias ? bias.data() : nullptr,
                               with_relu.data());
    std::vector<float> relu_of_plain = actual.output;
    for (float& value : relu_of_plain) value = value < 0 ? 0.0f : value;
    EXPECT_TRUE(same_bits(read_bf16(with_relu), relu_of_plain)) << name;
  }
}

TEST_F(CpuBf16Activations, LinearMatchesFp32ActivationsOnRoundedInputs) {
  for (const LinearGeometry& geometry : {LinearGeometry{64, 3136, 128}, LinearGeometry{64, 128, 10}}) {
    const std::size_t inputs = std::size_t(geometry.batch) * geometry.in_features;
    const std::size_t outputs = std::size_t(geometry.batch) * geometry.out_features;
    const std::size_t weights = std::size_t(geometry.out_features) * geometry.in_features;
    const std::vector<float> input = rounded(random_values(inputs, 21)),
                             grad_output = rounded(random_values(outputs, 22)),
                             weight = rounded(random_values(weights, 23, -0.1f, 0.1f)),
                             bias = random_values(geometry.out_features, 24);
    auto run = [&](backend::Backend& on, bool bf16) {
      return run_layer(input, grad_output, weights, geometry.out_features, bf16,
                       [&](const float* in, const float* grad, LayerResults& results) {
                         on.linear_forward(geometry, in, weight.data(), bias.data(), results.output.data());
                         on.linear_backward(geometry, in, weight.data(), grad, results.grad_input.data(),
                                            results.grad_weight.data(), results.grad_bias.data());
                       });
    };
    const LayerResults expected = run(*reference_, false), actual = run(*bf16_, true);
    const std::string name =
        std::to_string(geometry.in_features) + "->" + std::to_string(geometry.out_features);
    expect_layer_results_match(actual, expected, name);
  }
}

TEST_F(CpuBf16Activations, LossReadsBf16LogitsAndComputesInFp32) {
  constexpr int batch = 96, classes = 10;
  const std::vector<float> logits = rounded(random_values(batch * classes, 31, -6, 6));
  std::vector<std::int32_t> labels(batch);
  for (int i = 0; i < batch; ++i) labels[i] = (i * 7) % classes;
  std::vector<float> expected_grad(batch * classes), grad = stored_bf16(expected_grad);
  const backend::LossTotals expected = reference_->softmax_cross_entropy(
      batch, classes, logits.data(), labels.data(), 0.1f, 1.0f / batch, expected_grad.data());
  const std::vector<float> stored = stored_bf16(logits);
  const backend::LossTotals actual = bf16_->softmax_cross_entropy(
      batch, classes, stored.data(), labels.data(), 0.1f, 1.0f / batch, grad.data());
  EXPECT_EQ(actual.loss_sum, expected.loss_sum);
  EXPECT_EQ(actual.correct, expected.correct);
  EXPECT_TRUE(same_bits(read_bf16(grad), rounded(expected_grad)));
  EXPECT_TRUE(second_half_untouched(grad));

  std::vector<std::int32_t> expected_class(batch), actual_class(batch);
  std::vector<float> expected_probabilities(batch * classes), actual_probabilities(batch * classes);
  reference_->predict(batch, classes, logits.data(), expected_class.data(), expected_probabilities.data());
  bf16_->predict(batch, classes, stored.data(), actual_class.data(), actual_probabilities.data());
  EXPECT_EQ(actual_class, expected_class);
  EXPECT_TRUE(same_bits(actual_probabilities, expected_probabilities));  // fp32, not stored as bf16
}

// The fp32 path is what it was: the same ops give the same bits before and after a stretch of
// bf16 activations on the same backend (separate primitive caches, nothing left behind).
TEST_F(CpuBf16Activations, Fp32BitwiseUnchangedAfterBf16Activations) {
  auto backend = make_test_backend();
  const ConvolutionGeometry convolution = square_convolution(8, 16, 16, 32, 3, 1, 1, true);
  const BatchNormGeometry batch_norm{8, 32, 16 * 16, 1e-5f, backend::FusedActivation::Relu};
  const PoolingGeometry pooling{8, 32, 16, 16, 2, 2, 2, 0, PoolingKind::Max};
  const std::vector<float> input = random_values(8 * 16 * 16 * 16, 41),
                           weight = random_values(32 * 16 * 9, 42), bias = random_values(32, 43),
                           gamma = random_values(32, 44, 0.5f, 1.5f), beta = random_values(32, 45);
  auto run = [&](ComputePrecision precision) {
    backend->set_compute_precision(precision);
    std::vector<float> convolved(8 * 16 * 16 * 32), normalised(convolved.size()), pooled(8 * 8 * 8 * 32),
        mean(32), inverse_std(32), running_mean(32, 0.0f), running_variance(32, 1.0f);
    std::vector<std::uint8_t> workspace(backend->pooling_workspace_bytes(pooling) + 1);
    backend->convolution_forward(convolution, input.data(), weight.data(), bias.data(), convolved.data());
    backend->batch_norm_forward_training(batch_norm, convolved.data(), gamma.data(), beta.data(),
                                         normalised.data(), running_mean.data(), running_variance.data(),
                                         0.1f, mean.data(), inverse_std.data());
    backend->pooling_forward(pooling, normalised.data(), pooled.data(), workspace.data());
    backend->add(static_cast<std::int64_t>(pooled.size()), pooled.data(), pooled.data(), pooled.data());
    std::vector<float> all = convolved;
    all.insert(all.end(), normalised.begin(), normalised.end());
    all.insert(all.end(), pooled.begin(), pooled.end());
    all.insert(all.end(), running_variance.begin(), running_variance.end());
    return all;
  };
  for (const ComputePrecision precision : {ComputePrecision::Float32, ComputePrecision::BFloat16}) {
    const std::vector<float> before = run(precision);
    backend->set_compute_precision(ComputePrecision::BFloat16);
    backend->set_activation_precision(ComputePrecision::BFloat16);
    const std::vector<float> with_bf16_activations = run(ComputePrecision::BFloat16);
    backend->set_activation_precision(ComputePrecision::Float32);
    EXPECT_FALSE(same_bits(with_bf16_activations, before));
    EXPECT_TRUE(same_bits(run(precision), before));
  }
}

}  // namespace
}  // namespace phalanx::testing
