// ComputeTimes: each layer's forward and backward seconds for one rank's local batch, the compute
// side of a step prediction. Measured per layer (a profile from `phalanx bench calibrate`), or, for
// a device nobody profiled here, one device's images per second shared among the layers by their
// multiply-adds.
#pragma once

#include <string>
#include <vector>

#include "phalanx/scaling/layer_costs.hpp"

namespace phalanx::scaling {

struct ComputeTimes {
  std::vector<double> forward, backward;  // seconds, one per LayerCosts layer
  std::string source;                     // how they were found, for the printout

  double forward_seconds() const;
  double backward_seconds() const;
};

// One device trains `images_per_second` at `local_batch`: its step's compute takes
// local_batch / images_per_second, a third of it forward and two thirds backward (backward computes
// the gradients of the inputs and of the weights, each as many multiply-adds as the forward), each
// shared among the layers in proportion to their multiply-adds.
ComputeTimes compute_from_throughput(const LayerCosts& costs, double images_per_second, int local_batch);

// A profile's per-layer times (docs/SCALING.md), measured at its batch size and scaled to
// `local_batch`. Every layer of `costs` must be in it, by name; throws InvalidInput naming the file
// and the field otherwise.
ComputeTimes compute_from_profile(const LayerCosts& costs, const std::string& path, int local_batch);

}  // namespace phalanx::scaling
