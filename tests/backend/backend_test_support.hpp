// Helpers of the CPU backend tests: seeded random data, comparisons of float results with double
// references, and the central-difference gradient checker every differentiable op's test uses.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::testing {

// The backend the tests run: thread count from OMP_NUM_THREADS (CTest sets 1).
inline std::unique_ptr<backend::Backend> make_test_backend() {
  return backend::make_cpu_backend(0);
}

using backend::square_convolution;

// Whether /proc/cpuinfo lists `flag` (avx512f, avx512_bf16, amx_bf16) for this CPU: what a test
// expects of the backend's own ISA detection, read independently of oneDNN.
inline bool cpu_has(const std::string& flag) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// How bf16 must run here: the best of "amx", "avx512_bf16", "emulated" and "unavailable" that both
// the CPU has and PHALANX_EXPECTED_BF16 allows (set by the CTest entries that lower
// ONEDNN_MAX_CPU_ISA; unset, the CPU alone decides). oneDNN has no bf16 kernels below AVX-512.
inline std::string expected_bf16() {
  const char* cap = std::getenv("PHALANX_EXPECTED_BF16");
  const std::string allowed = cap ? cap : "amx";
  if (allowed == "unavailable" || !cpu_has("avx512f")) return "unavailable";
  if (allowed == "amx" && cpu_has("amx_bf16")) return "amx";
  if (allowed != "emulated" && cpu_has("avx512_bf16")) return "avx512_bf16";
  return "emulated";
}

// Uniform values in [low, high) from a seeded counter-based stream: every run sees the same data.
inline std::vector<float> random_values(std::size_t count, std::uint64_t stream, float low = -1.0f,
                                        float high = 1.0f) {
  RandomStream random(20240611, stream);
  std::vector<float> values(count);
  for (float& value : values) value = random.next_uniform(low, high);
  return values;
}

// Distinct values spaced `gap` apart in random order: max pooling sees no ties, and a
// perturbation smaller than gap/2 never changes which input is the maximum.
inline std::vector<float> shuffled_distinct_values(std::size_t count, std::uint64_t stream, float gap) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = (static_cast<float>(i) - count / 2.0f) * gap;
  RandomStream random(20240611, stream);
  for (std::size_t i = count; i > 1; --i) std::swap(values[i - 1], values[random.next_below(i)]);
  return values;
}

// Largest |actual - expected| / max(1, |expected|): relative for large values, absolute near zero.
inline double max_error(const std::vector<float>& actual, const std::vector<double>& expected) {
  if (actual.size() != expected.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double error = std::fabs(actual[i] - expected[i]) / std::max(1.0, std::fabs(expected[i]));
    if (!(error <= worst)) worst = error;  // NaN counts as the worst
  }
  return worst;
}

// sum_i values[i] * weights[i] in double: the scalar objective of the gradient checks, whose
// gradient with respect to the op's output is `weights`.
inline double weighted_sum(const std::vector<float>& values, const std::vector<float>& weights) {
  double sum = 0;
  for (std::size_t i = 0; i < values.size(); ++i) sum += static_cast<double>(values[i]) * weights[i];
  return sum;
}

// Compares an analytic gradient with central differences of `objective` (which runs the float
// op on the current `variable` and returns a double) at every element of `variable`.
// Returns the worst |analytic - numeric| / max(|analytic|, |numeric|, 0.1 * largest |analytic|):
// relative per element, with a floor so that near-zero entries are judged against the scale of
// the whole gradient instead of their own rounding noise.
inline double gradient_check_error(std::vector<float>& variable, const std::vector<float>& analytic,
                                   const std::function<double()>& objective, float epsilon) {
  double largest = 0;
  for (const float value : analytic) largest = std::max(largest, std::fabs(static_cast<double>(value)));
  double worst = 0;
  for (std::size_t i = 0; i < variable.size(); ++i) {
    const float original = variable[i];
    const float up = original + epsilon, down = original - epsilon;
    variable[i] = up;
    const double objective_up = objective();
    variable[i] = down;
    const double objective_down = objective();
    variable[i] = original;
    // Divide by the perturbation float arithmetic actually made.
    const double numeric = (objective_up - objective_down) / (static_cast<double>(up) - down);
    const double scale =
        std::max({std::fabs(numeric), std::fabs(static_cast<double>(analytic[i])), 0.1 * largest, 1e-12});
    const double error = std::fabs(numeric - analytic[i]) / scale;
    if (!(error <= worst)) worst = error;
  }
  return worst;
}

}  // namespace phalanx::testing
