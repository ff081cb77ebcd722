// The CPU backend's choice for train.precision: auto (Backend::preferred_precision): bf16 on AMX,
// on AVX512-BF16 where the core's bf16 dot products are at least as fast as its fp32 FMAs
// (measure_arithmetic_rates), fp32 where oneDNN would emulate bf16 or has no bf16 kernels. Named
// CpuBf16* so that CTest runs it again with oneDNN held below this CPU's ISA (tests/CMakeLists.txt).
#include <cpuid.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "backend/backend_test_support.hpp"
#include "phalanx/backend/arithmetic_rate.hpp"

namespace phalanx::testing {
namespace {

using backend::ComputePrecision;

// The rates are what the instructions allow: both measured where the CPU has them, none where not.
TEST(CpuBf16PreferredPrecision, RatesAreMeasuredWhereTheInstructionsExist) {
  const backend::ArithmeticRates rates = backend::measure_arithmetic_rates(1L << 16, 3);
  EXPECT_EQ(rates.fp32_fma > 0.0, static_cast<bool>(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(rates.bf16_dot_product > 0.0,
            __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"));
  // A core does at least a GFLOP/s and at most a TFLOP/s in either: a broken timer or a loop the
  // compiler removed would land outside.
  for (const double rate : {rates.fp32_fma, rates.bf16_dot_product}) {
    if (rate > 0.0) {
      EXPECT_GT(rate, 1e9);
      EXPECT_LT(rate, 1e12);
    }
  }
  // AMX where the CPU has its tiles and bf16 products: a tile product does 64 vdpbf16ps' work, and
  // however few cycles per instruction a CPU needs, the tiles outpace the vector dot product
  // (measured: 27x); at most 1,024 FLOPs a cycle at 10 GHz.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool amx = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 24)) &&
                   (edx & (1u << 22)) &&
                   syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
  EXPECT_EQ(rates.amx_bf16 > 0.0, amx);
  if (rates.amx_bf16 > 0.0) {
    EXPECT_GT(rates.amx_bf16, 2.0 * rates.bf16_dot_product);
    EXPECT_LT(rates.amx_bf16, 1.1e13);
  }
}

// The choice follows the rule, and the reason says which branch of it.
TEST(CpuBf16PreferredPrecision, Bf16WhereItOutpacesFp32) {
  const auto cpu = make_test_backend();
  cpu->set_compute_precision(ComputePrecision::BFloat16);
  const std::string note = cpu->arithmetic_note();  // how oneDNN runs bf16 here (bf16_support)
  cpu->set_compute_precision(ComputePrecision::Float32);
  const backend::PrecisionChoice choice = cpu->preferred_precision();
  if (note.find("bf16 on AMX tiles") != std::string::npos) {
    EXPECT_EQ(choice.precision, ComputePrecision::BFloat16);
    EXPECT_EQ(choice.reason, "AMX tiles");
  } else if (note.find("bf16 on AVX-512 bf16 instructions") != std::string::npos) {
    ASSERT_NE(choice.reason.find("bf16 dot products at "), std::string::npos) << choice.reason;
    const double ratio = std::stod(choice.reason.substr(choice.reason.find(" at ") + 4));
    EXPECT_EQ(choice.precision, ratio >= 1.0 ? ComputePrecision::BFloat16 : ComputePrecision::Float32)
        << choice.reason;
    // A second measurement lands on the same side, unless the CPU sits right at the threshold.
    const backend::ArithmeticRates again = backend::measure_arithmetic_rates(1L << 18, 5);
    const double ratio_again = again.bf16_dot_product / again.fp32_fma;
    if (ratio_again < 0.8 || ratio_again > 1.25) {
      EXPECT_EQ(ratio >= 1.0, ratio_again >= 1.0) << ratio_again;
    }
    // Asked twice, the process's one measurement answers.
    EXPECT_EQ(cpu->preferred_precision().reason, choice.reason);
  } else if (note.find("bf16 emulated") != std::string::npos) {
    EXPECT_EQ(choice.precision, ComputePrecision::Float32);
    EXPECT_EQ(choice.reason, "no bf16 instructions: oneDNN would emulate bf16");
  } else {
    EXPECT_EQ(choice.precision, ComputePrecision::Float32);
    EXPECT_EQ(choice.reason, "no oneDNN bf16 kernels below AVX-512");
  }
}

}  // namespace
}  // namespace phalanx::testing
