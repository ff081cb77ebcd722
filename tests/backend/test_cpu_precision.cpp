// The CPU backend holds activations in fp32, or in bf16 under bf16 compute
// (test_cpu_bf16_activations.cpp), and computes in fp32 or bf16 (test_cpu_bf16.cpp): asking it for
// fp16 activations or compute, or for bf16 activations under fp32 compute, is a clear input error
// (exit status 2), and a refused request changes nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend_test_support.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

using backend::ComputePrecision;

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

}  // namespace
}  // namespace phalanx::testing
