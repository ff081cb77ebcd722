// Shared pieces of the NCCL tests: the test program runs under gtest_main as a one-rank MPI job, so
// MPI starts once on first use and ends at exit; CUDA tests skip with a reason without a GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/core/tensor.hpp"

#define PHALANX_SKIP_WITHOUT_CUDA()                                                                  \
  do {                                                                                               \
    if (::phalanx::backend::cuda_device_count() == 0)                                                \
      GTEST_SKIP() << "no CUDA device: cuda_device_count() is 0 (no GPU or no usable driver here); " \
                      "these tests run on a GPU machine";                                            \
  } while (false)

namespace phalanx::testing {

// The world of this one-rank test program. MPI may start only once per process, so the session
// lives until exit (the world communicator is destroyed before it, in reverse construction order).
inline comm::Communicator& mpi_world() {
  struct World {
    comm::MpiSession session{nullptr, nullptr};
    comm::Communicator world = comm::Communicator::world();
  };
  static World instance;
  return instance.world;
}

inline std::vector<float> random_floats(std::int64_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> distribution(0.0f, 1.0f);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& value : values) value = distribution(generator);
  return values;
}

inline Tensor upload_floats(backend::Backend& backend, const std::vector<float>& values) {
  Tensor tensor(backend, Shape{static_cast<std::int64_t>(values.size())}, DType::Float32);
  backend.copy_from_host(tensor.data_as<void>(), values.data(), values.size() * sizeof(float));
  return tensor;
}

// copy_to_host waits for the compute stream, so it also sees work ordered after communication.
inline std::vector<float> download_floats(backend::Backend& backend, const Tensor& tensor) {
  std::vector<float> values(tensor.bytes() / sizeof(float));
  backend.copy_to_host(values.data(), tensor.data_as<void>(), tensor.bytes());
  return values;
}

}  // namespace phalanx::testing
