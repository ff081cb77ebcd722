// The CPU backend's ops with a fused Relu6, Sigmoid or Hardsigmoid (geometry.activation) against the
// plain op followed by activation_forward: bitwise the same with fp32 activations (oneDNN applies
// the post-op with the code its eltwise primitive runs; batch norm runs that primitive in place),
// for several kinds of convolution, linear layers with and without bias, and batch norm in
// training and inference. With bf16 activations the fused op rounds once, after the activation,
// where the separate one rounds before it too: within one bf16 rounding of the activated value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "backend/activation_reference.hpp"
#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::ComputePrecision;
using backend::FusedActivation;

constexpr FusedActivation fused_kinds[] = {FusedActivation::Relu6, FusedActivation::Sigmoid,
                                           FusedActivation::Hardsigmoid};

std::string name_of(FusedActivation activation) {
  return activation_name(backend::activation_kind(activation));
}

// One op with its activation as a parameter: writes activation(op(inputs)) into `output`, with its
// activations (input and output) held in bf16 where `bf16` says so.
using FusedOp = std::function<void(backend::Backend&, FusedActivation, float* output, bool bf16)>;

// The op fused and the op then activation_forward in place, on `backend`, read back as floats.
struct Pair {
  std::vector<float> fused, separate;
};

Pair run_pair(backend::Backend& backend, const FusedOp& op, FusedActivation activation, std::size_t count,
              bool bf16) {
  Pair pair{std::vector<float>(count, NAN), std::vector<float>(count, NAN)};
  // Twice: the first call makes the fused primitive, the second finds it in the cache.
  for (int call = 0; call < 2; ++call) op(backend, activation, pair.fused.data(), bf16);
  op(backend, FusedActivation::None, pair.separate.data(), bf16);
  backend.activation_forward(backend::activation_kind(activation), static_cast<std::int64_t>(count),
                             pair.separate.data(), pair.separate.data());
  if (bf16) {
    pair.fused = read_bf16(pair.fused);
    pair.separate = read_bf16(pair.separate);
  }
  return pair;
}

// fp32: the same bits. bf16: the separate op rounds the plain result x (by at most 2^-9 |x|)
// before the activation f and rounds f again, the fused one rounds f(x) once; the two differ by at
// most 2^-9 |x f'(x)| + 2^-8 |f(x)|. |x f'(x)| stays below 1/4 for Sigmoid and 1/2 for
// Hardsigmoid, and Relu6 is x itself where it is not flat.
void expect_pair_matches(const Pair& pair, FusedActivation activation, bool bf16, const std::string& what) {
  ASSERT_EQ(pair.fused.size(), pair.separate.size());
  const double slope_bound = activation == FusedActivation::Sigmoid       ? 0.25
                             : activation == FusedActivation::Hardsigmoid ? 0.5
                                                                          : 0.0;
  int mismatches = 0;
  for (std::size_t i = 0; i < pair.fused.size(); ++i) {
    const float fused = pair.fused[i], separate = pair.separate[i];
    const double largest = std::max(std::fabs(fused), std::fabs(separate));
    const bool matches = bf16 ? std::fabs(fused - separate) <= (slope_bound + 2.0 * largest) / 256.0
                              : std::memcmp(&fused, &separate, sizeof(float)) == 0;
    if (!matches && mismatches++ < 5)
      ADD_FAILURE() << what << ": element " << i << " fused " << fused << " separate " << separate;
  }
}

// Runs `op` fused and separate for each fusable activation in fp32, and in bf16 storage where this
// CPU holds it; expects the plain op to reach every piece of the activations (values below 0,
// inside and, for Relu6, above 6).
void expect_fusion_matches(const FusedOp& op, std::size_t count, const std::string& name) {
  auto fp32 = make_test_backend();
  std::vector<float> plain(count);
  op(*fp32, FusedActivation::None, plain.data(), false);
  EXPECT_GT(std::count_if(plain.begin(), plain.end(), [](float value) { return value < -3.0f; }), 0) << name;
  EXPECT_GT(std::count_if(plain.begin(), plain.end(), [](float value) { return value > 6.0f; }), 0) << name;
  for (const FusedActivation activation : fused_kinds)
    expect_pair_matches(run_pair(*fp32, op, activation, count, false), activation, false,
                        name + " " + name_of(activation));

  if (!fp32->can_hold_activations(ComputePrecision::BFloat16, ComputePrecision::BFloat16)) return;
  auto bf16 = make_test_backend();
  bf16->set_compute_precision(ComputePrecision::BFloat16);
  bf16->set_activation_precision(ComputePrecision::BFloat16);
  for (const FusedActivation activation : fused_kinds)
    expect_pair_matches(run_pair(*bf16, op, activation, count, true), activation, true,
                        name + " " + name_of(activation) + " bf16");
}

TEST(CpuFusedActivations, ConvolutionForwardEqualsConvolutionThenActivation) {
  const auto conv = square_convolution;
  const std::pair<const char*, backend::ConvolutionGeometry> cases[] = {
      {"1->32 3x3 on 28x28", conv(4, 1, 28, 32, 3, 1, 1, true)},
      {"32->64 3x3 on 14x14", conv(2, 32, 14, 64, 3, 1, 1, true)},
      {"16->16 3x3 stride 2, no bias", conv(3, 16, 9, 16, 3, 2, 1, false)},
      {"64->32 1x1", conv(2, 64, 6, 32, 1, 1, 0, true)},
  };
  for (const auto& [name, shape] : cases) {
    // A copy, not the structured binding: clang before 16 cannot capture a binding in a lambda.
    backend::ConvolutionGeometry geometry = shape;
    if (geometry.out_channels == 16) geometry.groups = 16;  // depthwise, as MobileNets run it
    // Inputs and weights wide enough that outputs pass -3 and 6.
    const auto input = random_values(static_cast<std::size_t>(geometry.input_elements()), 1, -3.0f, 3.0f);
    const auto weight = random_values(static_cast<std::size_t>(geometry.weight_elements()), 2, -1.0f, 1.0f);
    const auto bias = random_values(geometry.out_channels, 3);
    const auto stored_input = stored_bf16(input);
    const FusedOp op = [&, geometry](backend::Backend& backend, FusedActivation activation, float* output,
                                     bool bf16) {
      auto fused = geometry;
      fused.activation = activation;
      backend.convolution_forward(fused, bf16 ? stored_input.data() : input.data(), weight.data(),
                                  geometry.has_bias ? bias.data() : nullptr, output);
    };
    expect_fusion_matches(op, static_cast<std::size_t>(geometry.output_elements()), name);
  }
}

TEST(CpuFusedActivations, LinearForwardEqualsLinearThenActivation) {
  for (const auto& geometry : {backend::LinearGeometry{16, 576, 128}, backend::LinearGeometry{5, 128, 10}}) {
    const auto input =
        random_values(static_cast<std::size_t>(geometry.batch) * geometry.in_features, 7, -3.0f, 3.0f);
    const auto weight =
        random_values(static_cast<std::size_t>(geometry.out_features) * geometry.in_features, 8, -0.5f, 0.5f);
    const auto bias = random_values(geometry.out_features, 9);
    const auto stored_input = stored_bf16(input);
    for (const bool with_bias : {true, false}) {
      const FusedOp op = [&, geometry, with_bias](backend::Backend& backend, FusedActivation activation,
                                                  float* output, bool bf16) {
        auto fused = geometry;
        fused.activation = activation;
        backend.linear_forward(fused, bf16 ? stored_input.data() : input.data(), weight.data(),
                               with_bias ? bias.data() : nullptr, output);
      };
      expect_fusion_matches(op, static_cast<std::size_t>(geometry.batch) * geometry.out_features,
                            std::to_string(geometry.in_features) + "->" +
                                std::to_string(geometry.out_features) + (with_bias ? "" : " without bias"));
    }
  }
}

TEST(CpuFusedActivations, BatchNormTrainingAndInferenceEqualBatchNormThenActivation) {
  for (const auto& geometry :
       {backend::BatchNormGeometry{8, 16, 49}, backend::BatchNormGeometry{300, 24, 1}}) {
    const std::size_t count = static_cast<std::size_t>(geometry.batch) * geometry.spatial * geometry.channels;
    const auto input = random_values(count, 10, -2.0f, 3.0f);
    const auto gamma = random_values(geometry.channels, 11, 2.0f, 4.0f);  // outputs past -3 and 6
    const auto beta = random_values(geometry.channels, 12);
    const auto stored_input = stored_bf16(input);
    for (const bool training : {true, false}) {
      const FusedOp op = [&, geometry, training](backend::Backend& backend, FusedActivation activation,
                                                 float* output, bool bf16) {
        const float* in = bf16 ? stored_input.data() : input.data();
        auto fused = geometry;
        fused.activation = activation;
        std::vector<float> mean(geometry.channels, 0.1f), variance(geometry.channels, 0.9f);
        std::vector<float> saved_mean(geometry.channels), inverse_std(geometry.channels);
        if (training)
          backend.batch_norm_forward_training(fused, in, gamma.data(), beta.data(), output, mean.data(),
                                              variance.data(), 0.1f, saved_mean.data(), inverse_std.data());
        else
          backend.batch_norm_forward_inference(fused, in, gamma.data(), beta.data(), mean.data(),
                                               variance.data(), output);
      };
      expect_fusion_matches(op, count, training ? "training" : "inference");
    }
  }
}

}  // namespace
}  // namespace phalanx::testing
