// Helpers of the CUDA backend tests: the process-wide CPU and CUDA backends, moving data to and
// from a backend, and the parity check at the heart of the tests (ggml's test-backend-ops idea):
// an op case is one function of a Backend, run once on each backend with the same inputs, whose
// named outputs must agree within the case's tolerance.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/core/augment_operations.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/core/tensor.hpp"

// Every CUDA test but the device-count ones starts with this: without a device there is nothing to run.
#define PHALANX_SKIP_WITHOUT_CUDA()                                                                  \
  do {                                                                                               \
    if (::phalanx::backend::cuda_device_count() == 0)                                                \
      GTEST_SKIP() << "no CUDA device: cuda_device_count() is 0 (no GPU or no usable driver here); " \
                      "these tests run on a GPU machine";                                            \
  } while (false)

namespace phalanx::testing {

// The two backends the parity tests compare, created on first use and kept for the whole test
// program (a CUDA context and the cuDNN and cuBLAS handles take a noticeable time to set up, and
// there are many cases). release() ends them before the CUDA runtime shuts down at exit; a
// global test environment (test_cuda_parity.cpp) calls it.
class TestBackends {
 public:
  static backend::Backend& cpu() {
    if (!cpu_instance()) cpu_instance() = backend::make_cpu_backend(0);
    return *cpu_instance();
  }
  static backend::Backend& cuda() {
    if (!cuda_instance()) cuda_instance() = backend::make_cuda_backend(0);
    return *cuda_instance();
  }
  static void release() {
    cuda_instance().reset();
    cpu_instance().reset();
  }

 private:
  static std::unique_ptr<backend::Backend>& cpu_instance() {
    static std::unique_ptr<backend::Backend> instance;
    return instance;
  }
  static std::unique_ptr<backend::Backend>& cuda_instance() {
    static std::unique_ptr<backend::Backend> instance;
    return instance;
  }
};

inline backend::Backend& cpu_backend() {
  return TestBackends::cpu();
}

inline backend::Backend& cuda_backend() {
  return TestBackends::cuda();
}

template <typename T>
DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  if constexpr (std::is_same_v<T, std::int32_t>) return DType::Int32;
  if constexpr (std::is_same_v<T, std::uint8_t>) return DType::UInt8;
}

// A tensor on `backend` holding `values`.
template <typename T>
Tensor upload(backend::Backend& backend, const std::vector<T>& values) {
  Tensor tensor(backend, Shape{static_cast<std::int64_t>(values.size())}, dtype_of<T>());
  backend.copy_from_host(tensor.data_as<void>(), values.data(), values.size() * sizeof(T));
  return tensor;
}

// Seeded test inputs: bytes (uint8 images), class labels in [0, classes), and per image the five
// augmentation draws (shift_y, shift_x, flip, cutout_top, cutout_left) with crop shifts beyond the
// image, both flips and cutout squares clipped at every edge.
inline std::vector<std::uint8_t> random_bytes(std::size_t count, std::uint64_t stream) {
  RandomStream random(20240611, stream);
  std::vector<std::uint8_t> bytes(count);
  for (auto& byte : bytes) byte = static_cast<std::uint8_t>(random.next_u32() >> 24);
  return bytes;
}

inline std::vector<std::int32_t> random_labels(int count, int classes, std::uint64_t stream) {
  RandomStream random(20240611, stream);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(count));
  for (auto& label : labels) label = static_cast<std::int32_t>(random.next_below(classes));
  return labels;
}

// After those nine words, each image's max_augment_operations auto-augment op slots (7 words:
// AugmentOperation, 6 float parameters). Identity without `operations`; with it, random ops with
// parameters over the ranges TrivialAugment and RandAugment reach and beyond (any rotation with
// shear and an integer shift, factors in [0.01, 1.99], posterize bits 0 to 8, thresholds 0 to 255).
inline std::vector<std::int32_t> random_augment_draws(int batch, std::uint64_t stream,
                                                      bool operations = false, int height = 9,
                                                      int width = 7) {
  RandomStream random(20240611, stream);
  const auto uniform = [&random](double low, double high) {
    return low + (high - low) * static_cast<double>(random.next_u32()) * 0x1p-32;
  };
  std::vector<std::int32_t> draws;
  for (int sample = 0; sample < batch; ++sample) {
    draws.push_back(static_cast<std::int32_t>(random.next_below(13)) - 6);  // shift_y
    draws.push_back(static_cast<std::int32_t>(random.next_below(13)) - 6);  // shift_x
    draws.push_back(static_cast<std::int32_t>(random.next_below(2)));       // flip
    draws.push_back(static_cast<std::int32_t>(random.next_below(9)) - 2);   // cutout_top
    draws.push_back(static_cast<std::int32_t>(random.next_below(7)) - 2);   // cutout_left
    draws.push_back(static_cast<std::int32_t>(random.next_below(9)));       // erase_top
    draws.push_back(static_cast<std::int32_t>(random.next_below(7)));       // erase_left
    // Nothing erased in about a third of the images, as when random erasing does not fire.
    const bool erased = random.next_below(3) != 0;
    draws.push_back(erased ? static_cast<std::int32_t>(1 + random.next_below(8)) : 0);  // erase_height
    draws.push_back(erased ? static_cast<std::int32_t>(1 + random.next_below(6)) : 0);  // erase_width
    for (int slot = 0; slot < max_augment_operations; ++slot) {
      const auto operation = operations ? static_cast<int>(random.next_below(augment_operation_count)) : 0;
      float parameters[6] = {};
      if (operation >= static_cast<int>(AugmentOperation::ShearX) &&
          operation <= static_cast<int>(AugmentOperation::Rotate)) {
        const double angle = uniform(-2.4, 2.4), shear = uniform(-1.0, 1.0);
        parameters[0] = static_cast<float>(std::cos(angle));
        parameters[1] = static_cast<float>(std::sin(angle) + shear);
        parameters[2] = static_cast<float>((width - 1) / 2.0 + (static_cast<int>(random.next_below(9)) - 4));
        parameters[3] = static_cast<float>(-std::sin(angle));
        parameters[4] = static_cast<float>(std::cos(angle));
        parameters[5] = static_cast<float>((height - 1) / 2.0 + (static_cast<int>(random.next_below(9)) - 4));
      } else if (operation == static_cast<int>(AugmentOperation::Posterize)) {
        parameters[0] = static_cast<float>(random.next_below(9));
      } else if (operation == static_cast<int>(AugmentOperation::Solarize)) {
        parameters[0] = static_cast<float>(uniform(0.0, 255.0));
      } else {
        const double factor = uniform(0.01, 1.99);
        parameters[0] = static_cast<float>(factor);
        parameters[1] = static_cast<float>(1.0 - factor);
      }
      draws.push_back(operation);
      for (const float parameter : parameters) draws.push_back(std::bit_cast<std::int32_t>(parameter));
    }
  }
  return draws;
}

// An uninitialised float tensor of `count` elements on `backend`.
inline Tensor empty_floats(backend::Backend& backend, std::int64_t count) {
  return Tensor(backend, Shape{count}, DType::Float32);
}

template <typename T = float>
std::vector<T> download(backend::Backend& backend, const Tensor& tensor) {
  std::vector<T> values(tensor.bytes() / sizeof(T));
  backend.copy_to_host(values.data(), tensor.data_as<void>(), tensor.bytes());
  return values;
}

template <typename T>
std::vector<double> as_doubles(const std::vector<T>& values) {
  return std::vector<double>(values.begin(), values.end());
}

struct NamedOutput {
  std::string name;
  std::vector<double> values;  // floats, integers and byte masks all convert exactly
};
using Outputs = std::vector<NamedOutput>;

struct OpCase {
  std::string name;
  // Bound on scaled_max_difference for every output; 0 demands identical values.
  double tolerance;
  std::function<Outputs(backend::Backend&)> run;
};

// max_i |actual_i - expected_i| / max_i |expected_i|: the error relative to the output's scale, so a
// layout or indexing bug (order 1) fails while float rounding (1e-7 .. 1e-4) passes. NaN or a
// length mismatch gives infinity. `worst` receives the index of the largest difference.
inline double scaled_max_difference(const std::vector<double>& actual, const std::vector<double>& expected,
                                    std::size_t& worst) {
  worst = 0;
  if (actual.size() != expected.size()) return INFINITY;
  double largest_difference = 0, scale = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double difference = std::fabs(actual[i] - expected[i]);
    if (!(difference <= largest_difference)) {  // NaN counts as the largest
      largest_difference = std::isnan(difference) ? INFINITY : difference;
      worst = i;
    }
    scale = std::max(scale, std::fabs(expected[i]));
  }
  if (largest_difference == 0) return 0;
  return largest_difference / std::max(scale, 1e-30);
}

// Runs `op` on the CPU and the CUDA backend and expects every output to agree.
inline void expect_parity(const OpCase& op) {
  SCOPED_TRACE(op.name);
  const Outputs expected = op.run(cpu_backend());
  const Outputs actual = op.run(cuda_backend());
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t output = 0; output < expected.size(); ++output) {
    std::size_t worst = 0;
    const double difference = scaled_max_difference(actual[output].values, expected[output].values, worst);
    const bool in_range = worst < expected[output].values.size() && worst < actual[output].values.size();
    EXPECT_LE(difference, op.tolerance)
        << op.name << ": output '" << expected[output].name << "' (" << expected[output].values.size()
        << " values) differs by " << difference << " of its scale; worst at index " << worst << ": cuda "
        << (in_range ? actual[output].values[worst] : NAN) << " vs cpu "
        << (in_range ? expected[output].values[worst] : NAN);
  }
}

inline void expect_parity(const std::vector<OpCase>& cases) {
  for (const OpCase& op : cases) expect_parity(op);
}

// ---- 2-byte activations (Backend::set_activation_precision) ----------------------------------
// IEEE bf16 and fp16 bit patterns on the host: what a GPU backend holds under reduced activations,
// written independently of its kernels. Narrowing rounds to nearest, ties to even (as
// __float2bfloat16_rn and __float2half_rn do); NaN stays NaN (quiet), overflow becomes infinity.

inline std::uint16_t bfloat16_bits_from_float(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  // Adding 0x7fff, plus one when the kept part is odd, carries into the kept part exactly when the
  // dropped half is above one half, or equal to it with an odd kept part.
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

inline float float_from_bfloat16_bits(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline std::uint16_t half_bits_from_float(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  // 65520 is halfway between fp16's largest value (65504, odd significand) and 2^16: it and
  // everything above round to infinity.
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    // Below 2^-14, fp16 is subnormal: a multiple of 2^-24. Scaling by 2^24 is exact in float, and
    // nearbyint rounds to nearest even in the default rounding mode (1024 gives the smallest normal).
    const float units = std::nearbyint(std::bit_cast<float>(magnitude) * 16777216.0f);
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(units));
  }
  // Normal: rebias the exponent (127 -> 15) and drop 13 significand bits, rounding to nearest
  // even; a carry out of the significand moves the exponent up, as it should.
  const std::uint32_t rebased = magnitude - (112u << 23);
  std::uint32_t result = rebased >> 13;
  const std::uint32_t dropped = rebased & 0x1fffu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (result & 1u))) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

inline float float_from_half_bits(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu, significand = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(significand), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (significand << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (significand << 13));
}

// The bits of `value` in a 2-byte activation precision (BFloat16 or Float16).
inline std::uint16_t storage_bits(float value, backend::ComputePrecision precision) {
  return precision == backend::ComputePrecision::BFloat16 ? bfloat16_bits_from_float(value)
                                                          : half_bits_from_float(value);
}

inline float float_from_storage_bits(std::uint16_t bits, backend::ComputePrecision precision) {
  return precision == backend::ComputePrecision::BFloat16 ? float_from_bfloat16_bits(bits)
                                                          : float_from_half_bits(bits);
}

// `value` as an activation of `precision` holds it: itself in fp32, else rounded to 2 bytes.
inline float rounded_to_storage(float value, backend::ComputePrecision precision) {
  if (precision == backend::ComputePrecision::Float32) return value;
  return float_from_storage_bits(storage_bits(value, precision), precision);
}

inline std::vector<float> rounded_to_storage(std::vector<float> values, backend::ComputePrecision precision) {
  for (float& value : values) value = rounded_to_storage(value, precision);
  return values;
}

inline const char* precision_name(backend::ComputePrecision precision) {
  switch (precision) {
    case backend::ComputePrecision::Float32: return "fp32";
    case backend::ComputePrecision::BFloat16: return "bf16";
    case backend::ComputePrecision::Float16: return "fp16";
  }
  return "?";
}

}  // namespace phalanx::testing
