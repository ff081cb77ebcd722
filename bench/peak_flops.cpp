// The arithmetic peak of this machine's cores, measured (backend::measure_arithmetic_rates: AVX-512
// fp32 FMAs, AVX512-BF16 dot products and, where there is AMX, its bf16 tile products in loops that only the
// execution units limit), on one thread and on every thread asked for at once. It is the denominator of a
// training step's "achieved vs peak FLOP/s" (the step's FLOPs from bench/model_flops.py times steps per
// second), and it shows which arithmetic `train.precision: auto` picks here: a vendor's figure assumes clocks
// and port counts that a virtual machine may not give; this is what the cores deliver.
//   ./phalanx_bench_peak_flops [threads] [rounds]
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "phalanx/backend/arithmetic_rate.hpp"

namespace {

constexpr long iterations = 1L << 22;  // about 15 ms of fp32 FMAs per round on a 2.7 GHz core

// Every thread measures at once; their rates added.
phalanx::backend::ArithmeticRates measure_together(int threads, int rounds) {
  std::vector<phalanx::backend::ArithmeticRates> rates(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int thread = 0; thread < threads; ++thread)
    workers.emplace_back([&, thread] {
      rates[static_cast<std::size_t>(thread)] =
          phalanx::backend::measure_arithmetic_rates(iterations, rounds);
    });
  for (auto& worker : workers) worker.join();
  phalanx::backend::ArithmeticRates total;
  for (const auto& rate : rates) {
    total.fp32_fma += rate.fp32_fma;
    total.bf16_dot_product += rate.bf16_dot_product;
    total.amx_bf16 += rate.amx_bf16;
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
  const auto one = measure_together(1, rounds);
  if (one.fp32_fma == 0.0) {
    std::printf("peak_flops: this CPU has no AVX-512: nothing to measure\n");
    return 0;
  }
  const auto all = measure_together(threads, rounds);
  std::printf("# peak GFLOP/s, best of %d rounds of %ld iterations, 1 thread and %d at once\n", rounds,
              iterations, threads);
  std::printf("%-32s %14s %14s\n", "kind", "1 thread", "all threads");
  std::printf("%-32s %14.1f %14.1f\n", "fp32 FMA (AVX-512)", one.fp32_fma / 1e9, all.fp32_fma / 1e9);
  if (one.bf16_dot_product > 0.0) {
    std::printf("%-32s %14.1f %14.1f\n", "bf16 dot product (AVX512-BF16)", one.bf16_dot_product / 1e9,
                all.bf16_dot_product / 1e9);
    if (one.amx_bf16 > 0.0)
      std::printf("%-32s %14.1f %14.1f\n", "bf16 tile product (AMX)", one.amx_bf16 / 1e9, all.amx_bf16 / 1e9);
    std::printf("bf16 / fp32 rate: %.2fx (train.precision: auto takes bf16 from 1.00x, or on AMX)\n",
                one.bf16_dot_product / one.fp32_fma);
  }
  return 0;
}
