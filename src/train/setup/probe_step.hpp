// ProbeStep: a throw-away copy of the configured model and optimizer on a rank's device that runs
// real training steps (forward, loss, backward, update) on a zero batch. Start-up measurements use
// it without touching the weights that training will start from: the auto batch size reads the
// device memory a step needs, the throughput batch split times a few steps.
#pragma once

#include <memory>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/shape.hpp"
#include "phalanx/core/tensor.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/optimizer.hpp"
#include "phalanx/train/arithmetic.hpp"

namespace phalanx::train {

class ProbeStep {
 public:
  // Allocates everything a step at `batch` needs (a DeviceMemory error when it does not fit), and
  // sets the arithmetic a rank training a local batch of `batch` would (apply_arithmetic with
  // micro_batches_per_step). Under train.batch_size: auto, `batch` is the batch size probed.
  ProbeStep(const config::Config& config, backend::Backend& backend, const Shape& sample, int classes,
            int batch);
  // One training step, waited for on the device.
  void run();
  int batch() const { return batch_; }
  // The precision and activation storage the probe runs under, auto resolved.
  const Arithmetic& arithmetic() const { return arithmetic_; }

 private:
  const config::Config& config_;
  backend::Backend& backend_;
  int classes_, batch_;
  nn::Model model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  Tensor input_, labels_, grad_logits_;
  Arithmetic arithmetic_;
};

}  // namespace phalanx::train
