// The arithmetic rates of one CPU core's vector units, measured: AVX-512 fp32 fused multiply-adds
// and AVX512-BF16 dot products (vdpbf16ps: two bf16 products summed into each fp32 lane), each in
// a loop of independent accumulators that only the execution units limit. Which of the two is
// faster differs between CPUs that both have AVX512-BF16: some run the dot product at twice the
// FMA's FLOP rate, others at half (docs/BENCHMARKS.md, "Peak FLOP/s"), and a bf16 step follows.
// Where the CPU has AMX, its tile products (tdpbf16ps) are measured too: oneDNN's bf16
// convolutions run on the tiles there, so that is the bf16 peak a step is held against.
#pragma once

namespace phalanx::backend {

struct ArithmeticRates {
  double fp32_fma = 0.0;          // FLOP/s (a multiply-add is 2); 0 without AVX-512
  double bf16_dot_product = 0.0;  // FLOP/s (2 products and 2 adds per lane); 0 without AVX512-BF16
  double amx_bf16 = 0.0;          // FLOP/s of AMX tile products (tdpbf16ps); 0 without AMX or its tiles
};

// Each loop `rounds` times for `iterations` iterations (12 instructions each), the two kinds
// interleaved so that a clock change or a neighbour's burst hits both; the best round of each.
// 1 << 18 iterations take about a millisecond per round.
ArithmeticRates measure_arithmetic_rates(long iterations, int rounds);

}  // namespace phalanx::backend
