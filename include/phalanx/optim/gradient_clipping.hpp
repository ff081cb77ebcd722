// Gradient clipping by global norm (train.clip_grad_norm), as torch.nn.utils.clip_grad_norm_
// with the L2 norm: the summed, unscaled gradients of every trainable parameter are multiplied by
// max_norm / (norm + 1e-6) when that is below 1. After the all-reduce every rank holds the same
// summed gradients, so each computes the same norm locally: no collective of its own.
#pragma once

#include "phalanx/backend/backend.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::optim {

// torch's clip_grad_norm_ adds this to the norm before dividing by it.
constexpr double clip_norm_epsilon = 1e-6;

// The L2 norm of the gradients of the trainable parameters (frozen ones have no gradient in
// torch, so they count for nothing here either); inf or NaN when a gradient is.
double gradient_norm(backend::Backend& backend, nn::ParameterRegistry& registry);

// Clips the gradients of the trainable parameters to `max_norm` and returns their norm before
// clipping. Gradients whose norm is not finite are left as they are (the caller skips the update).
double clip_gradient_norm(backend::Backend& backend, nn::ParameterRegistry& registry, double max_norm);

}  // namespace phalanx::optim
