// measure_arithmetic_rates (see arithmetic_rate.hpp). The loops are compiled for AVX-512 by target
// attribute and called only where the CPU reports the instructions, so the library itself still
// runs on any x86-64-v3 CPU.
#include "phalanx/backend/arithmetic_rate.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace phalanx::backend {

namespace {

// Enough independent accumulators to cover an FMA's latency (4 cycles) times the FMA ports (2);
// fewer would measure latency instead of throughput.
constexpr int accumulators = 12;

// The sum of a vector's lanes through memory (GCC 12's _mm512_reduce_add_ps trips its own
// -Wuninitialized).
__attribute__((target("avx512f"))) float lane_sum(__m512 vector) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, vector);
  float sum = 0.0f;
  for (const float lane : lanes) sum += lane;
  return sum;
}

// iterations x accumulators FMAs of 16 lanes: 32 FLOPs each. The result is returned so that the
// loop is not removed.
__attribute__((target("avx512f"))) float fp32_fma_loop(long iterations, float seed) {
  __m512 sums[accumulators];
  for (int index = 0; index < accumulators; ++index) sums[index] = _mm512_set1_ps(seed + index);
  const __m512 factor = _mm512_set1_ps(0.999999f);
  const __m512 addend = _mm512_set1_ps(1e-7f);
  for (long iteration = 0; iteration < iterations; ++iteration)
    for (int index = 0; index < accumulators; ++index) sums[index] = _mm512_fmadd_ps(sums[index], factor, addend);
  __m512 total = sums[0];
  for (int index = 1; index < accumulators; ++index) total = _mm512_add_ps(total, sums[index]);
  return lane_sum(total);
}

// iterations x accumulators vdpbf16ps of 16 lanes, each lane two bf16 products added to fp32: 64
// FLOPs each.
__attribute__((target("avx512f,avx512bf16"))) float bf16_dot_product_loop(long iterations, float seed) {
  __m512 sums[accumulators];
  for (int index = 0; index < accumulators; ++index) sums[index] = _mm512_set1_ps(seed + index);
  const __m512bh left = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  const __m512bh right = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(-1e-3f));
  for (long iteration = 0; iteration < iterations; ++iteration)
    for (int index = 0; index < accumulators; ++index) sums[index] = _mm512_dpbf16_ps(sums[index], left, right);
  __m512 total = sums[0];
  for (int index = 1; index < accumulators; ++index) total = _mm512_add_ps(total, sums[index]);
  return lane_sum(total);
}

// FLOP/s of one call of `loop`.
template <typename Loop>
double rate_of(Loop loop, long iterations, double flops_per_iteration, float& sink) {
  const auto start = std::chrono::steady_clock::now();
  sink += loop(iterations, sink);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds > 0.0 ? static_cast<double>(iterations) * flops_per_iteration / seconds : 0.0;
}

}  // namespace

ArithmeticRates measure_arithmetic_rates(long iterations, int rounds) {
  ArithmeticRates best;
  const bool fp32 = __builtin_cpu_supports("avx512f");
  const bool bf16 = fp32 && __builtin_cpu_supports("avx512bf16");
  float sink = 1.0f;
  // One round of each unmeasured first: the vector units power up and the clock settles.
  if (fp32) sink += fp32_fma_loop(iterations, sink);
  if (bf16) sink += bf16_dot_product_loop(iterations, sink);
  for (int round = 0; round < rounds; ++round) {
    if (fp32)
      best.fp32_fma = std::max(best.fp32_fma, rate_of(fp32_fma_loop, iterations, accumulators * 16 * 2.0, sink));
    if (bf16)
      best.bf16_dot_product =
          std::max(best.bf16_dot_product, rate_of(bf16_dot_product_loop, iterations, accumulators * 16 * 4.0, sink));
  }
  // The sum is never read; a volatile store keeps the loops' results alive.
  volatile float keep = sink;
  (void)keep;
  return best;
}

}  // namespace phalanx::backend
