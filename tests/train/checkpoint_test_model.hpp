// The smallest model a checkpoint test needs: one parameter (fc/weight, 2 x 3) on the CPU backend,
// for tests that write a real checkpoint with write_checkpoint and read it back.
#pragma once

#include <memory>

#include "phalanx/backend/backend.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::testing {

struct CheckpointTestModel {
  std::unique_ptr<backend::Backend> backend = backend::make_cpu_backend(1);
  nn::ParameterRegistry registry;
  CheckpointTestModel() {
    registry.declare_parameter("fc/weight", Shape{2, 3}, nn::Initializer::KaimingUniformWeight, 3);
    registry.allocate(*backend, 5);
  }
};

}  // namespace phalanx::testing
