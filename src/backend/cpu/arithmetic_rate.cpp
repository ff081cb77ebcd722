// measure_arithmetic_rates (see arithmetic_rate.hpp). The loops are compiled for AVX-512 and AMX by
// target attribute and called only where the CPU reports the instructions (and, for AMX, the kernel
// grants the tiles), so the library itself still runs on any x86-64-v3 CPU.
#include "phalanx/backend/arithmetic_rate.hpp"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

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
    for (int index = 0; index < accumulators; ++index)
      sums[index] = _mm512_fmadd_ps(sums[index], factor, addend);
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
    for (int index = 0; index < accumulators; ++index)
      sums[index] = _mm512_dpbf16_ps(sums[index], left, right);
  __m512 total = sums[0];
  for (int index = 1; index < accumulators; ++index) total = _mm512_add_ps(total, sums[index]);
  return lane_sum(total);
}

// AMX: CPUID leaf 7 reports the tile unit (EDX bit 24) and its bf16 products (bit 22); Linux then
// hands a process the tile registers' 8 KB of state only once asked (arch_prctl
// ARCH_REQ_XCOMP_PERM for XTILEDATA), which oneDNN asks as well. Without either, no AMX rate.
bool amx_bf16_usable() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if (!(edx & (1u << 24)) || !(edx & (1u << 22))) return false;
  constexpr long request_permission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long tile_data = 18;               // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, request_permission, tile_data) == 0;
}

// The tile configuration's 64 bytes: palette 1, then each tile's bytes per row and its rows.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};

// iterations x 4 tdpbf16ps, each a 16x16 fp32 tile += a 16x32 bf16 tile times a 32x16 bf16 tile:
// 16 x 16 x 32 multiply-adds, 16,384 FLOPs each. Four accumulator tiles (0-3) from two left (4, 5)
// and two right (6, 7) tiles: independent products, enough to cover the unit's latency. The inputs
// are small values, so the sums stay finite; the accumulators' first element is returned so that
// the loop is not removed.
__attribute__((target("amx-tile,amx-bf16"))) float amx_bf16_loop(long iterations, float seed) {
  TileConfig config;
  for (int tile = 0; tile < 8; ++tile) {
    config.bytes_per_row[tile] = 64;
    config.rows[tile] = 16;
  }
  alignas(64) std::uint16_t inputs[16 * 32];
  std::uint32_t bits = 0;
  const float small = 1e-3f * (seed > 0.0f ? 1.0f : -1.0f);
  std::memcpy(&bits, &small, sizeof bits);
  for (auto& value : inputs) value = static_cast<std::uint16_t>(bits >> 16);  // bf16: fp32's upper half
  alignas(64) float sums[16 * 16] = {};
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, inputs, 64);
  _tile_loadd(5, inputs, 64);
  _tile_loadd(6, inputs, 64);
  _tile_loadd(7, inputs, 64);
  for (long iteration = 0; iteration < iterations; ++iteration) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, sums, 64);
  _tile_release();
  return sums[0];
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
  const bool amx = amx_bf16_usable();
  // A tile product is 64 vdpbf16ps' worth of work; fewer iterations keep a round as short.
  const long amx_iterations = std::max(1L, iterations / 16);
  float sink = 1.0f;
  // One round of each unmeasured first: the vector units power up and the clock settles.
  if (fp32) sink += fp32_fma_loop(iterations, sink);
  if (bf16) sink += bf16_dot_product_loop(iterations, sink);
  if (amx) sink += amx_bf16_loop(amx_iterations, sink);
  for (int round = 0; round < rounds; ++round) {
    if (fp32)
      best.fp32_fma =
          std::max(best.fp32_fma, rate_of(fp32_fma_loop, iterations, accumulators * 16 * 2.0, sink));
    if (bf16)
      best.bf16_dot_product = std::max(
          best.bf16_dot_product, rate_of(bf16_dot_product_loop, iterations, accumulators * 16 * 4.0, sink));
    if (amx)
      best.amx_bf16 = std::max(best.amx_bf16, rate_of(amx_bf16_loop, amx_iterations, 4 * 16384.0, sink));
  }
  // The sum is never read; a volatile store keeps the loops' results alive.
  volatile float keep = sink;
  (void)keep;
  return best;
}

}  // namespace phalanx::backend
