// The CPU backend holds activations in fp32, or in bf16 under bf16 compute
// (test_cpu_bf16_activations.cpp), and computes in fp32 or bf16 (test_cpu_bf16.cpp): asking it for
// fp16 activations or compute, or for bf16 activations under fp32 compute, is a clear input error
// (exit status 2), and a refused request changes nothing. fp32 compute stays fp32 whatever oneDNN's
// default math mode.
#include <gtest/gtest.h>

#include <cstring>
#include <dnnl.hpp>
#include <string>
#include <vector>

#include "backend/backend_test_support.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

using backend::ComputePrecision;
using backend::ConvolutionGeometry;
using backend::LinearGeometry;

// The message of the InvalidInput error `call` throws; empty (and a failure) when it does not.
template <typename Call>
std::string input_error_of(Call call) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << error.what();
    EXPECT_EQ(error.exit_status(), 2) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "expected an InvalidInput error";
  return "";
}

TEST(CpuPrecision, ActivationsStayFp32WhenRefused) {
  auto backend = make_test_backend();
  EXPECT_NO_THROW(backend->set_activation_precision(ComputePrecision::Float32));
  // Under fp32 compute, bf16 activations would convert at every convolution: refused, as fp16.
  const std::string bf16 =
      input_error_of([&] { backend->set_activation_precision(ComputePrecision::BFloat16); });
  EXPECT_NE(bf16.find("bf16 activations need train.precision: bf16"), std::string::npos) << bf16;
  EXPECT_NE(bf16.find(backend->name()), std::string::npos) << bf16;
  backend->set_compute_precision(ComputePrecision::BFloat16);
  const std::string fp16 =
      input_error_of([&] { backend->set_activation_precision(ComputePrecision::Float16); });
  EXPECT_NE(fp16.find("fp16 activations need a GPU rank"), std::string::npos) << fp16;
  EXPECT_NE(fp16.find(backend->name()), std::string::npos) << fp16;
  // The refusals left fp32 activations: an op reads and writes 4-byte floats as before.
  const std::vector<float> input{-1.5f, 0.0f, 2.25f, 1e-30f, -3e10f};
  std::vector<float> output(input.size(), -7.0f);
  backend->relu_forward(static_cast<std::int64_t>(input.size()), input.data(), output.data());
  EXPECT_EQ(output, (std::vector<float>{0.0f, 0.0f, 2.25f, 1e-30f, 0.0f}));
}

TEST(CpuPrecision, ComputesInFp32OrBf16Only) {
  auto backend = make_test_backend();
  EXPECT_NO_THROW(backend->set_compute_precision(ComputePrecision::Float32));
  EXPECT_NO_THROW(backend->set_compute_precision(ComputePrecision::BFloat16));
  const std::string message =
      input_error_of([&] { backend->set_compute_precision(ComputePrecision::Float16); });
  EXPECT_NE(message.find("computes in fp32 or bf16; fp16 needs a GPU rank"), std::string::npos) << message;
  // The refusal left bf16 in effect.
  EXPECT_NE(backend->arithmetic_note().find("bf16"), std::string::npos);
}

// Every result of the convolutions and linear layers below, computed by a new backend (so oneDNN
// creates its primitives now).
std::vector<float> fp32_layer_results() {
  auto backend = make_test_backend();
  std::vector<float> results;
  const auto append = [&](const std::vector<float>& values) {
    results.insert(results.end(), values.begin(), values.end());
  };
  std::uint64_t stream = 60;
  for (const ConvolutionGeometry& geometry : {backend::square_convolution(2, 3, 9, 8, 3, 1, 1, true),
                                              backend::square_convolution(2, 32, 14, 64, 3, 1, 1, true)}) {
    const auto input = random_values(geometry.input_elements(), ++stream);
    const auto weight = random_values(geometry.weight_elements(), ++stream);
    const auto bias = random_values(geometry.out_channels, ++stream);
    const auto grad_output = random_values(geometry.output_elements(), ++stream);
    std::vector<float> output(geometry.output_elements()), grad_input(geometry.input_elements()),
        grad_weight(geometry.weight_elements()), grad_bias(geometry.out_channels);
    backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
    backend->convolution_backward(geometry, input.data(), grad_output.data(), weight.data(),
                                  grad_input.data(), grad_weight.data(), grad_bias.data());
    for (const auto* values : {&output, &grad_input, &grad_weight, &grad_bias}) append(*values);
  }
  const LinearGeometry linear{16, 256, 32};
  const auto input = random_values(std::size_t{16} * 256, ++stream);
  const auto weight = random_values(std::size_t{32} * 256, ++stream);
  const auto grad_output = random_values(std::size_t{16} * 32, ++stream);
  std::vector<float> output(std::size_t{16} * 32), grad_input(input.size()), grad_weight(weight.size()),
      grad_bias(32);
  backend->linear_forward(linear, input.data(), weight.data(), nullptr, output.data());
  backend->linear_backward(linear, input.data(), weight.data(), grad_output.data(), grad_input.data(),
                           grad_weight.data(), grad_bias.data());
  for (const auto* values : {&output, &grad_input, &grad_weight, &grad_bias}) append(*values);
  backend->synchronize();
  return results;
}

// oneDNN 3 lets its default math mode (ONEDNN_DEFAULT_FPMATH_MODE, or set_default_fpmath_mode)
// compute fp32 primitives in bf16; the backend pins fpmath_mode::strict on its own, so fp32 stays
// fp32, bit for bit. (Without it, oneDNN 3.2 on AMX runs the 3->8 backward data in bf16, 1.6e-2
// from the fp32 result.)
TEST(CpuPrecision, Fp32StaysFp32UnderABf16DefaultMathMode) {
  const std::vector<float> strict = fp32_layer_results();
  const dnnl::fpmath_mode before = dnnl::get_default_fpmath_mode();
  dnnl::set_default_fpmath_mode(dnnl::fpmath_mode::bf16);
  const std::vector<float> under_bf16_default = fp32_layer_results();
  dnnl::set_default_fpmath_mode(before);
  ASSERT_EQ(strict.size(), under_bf16_default.size());
  EXPECT_EQ(std::memcmp(strict.data(), under_bf16_default.data(), strict.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace phalanx::testing
