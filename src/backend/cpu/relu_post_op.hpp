// A forward primitive with the ReLU after it as a oneDNN post-op, for the fused activation of
// convolutions and linear layers (backend.hpp, FusedActivation).
#pragma once

#include <optional>
#include <string>

#include "dnnl_context.hpp"

namespace phalanx::backend::cpu {

// The primitive descriptor of `operation` with a ReLU post-op, only when oneDNN picks the very
// implementation and layouts of the plain forward `plain` for it: then the fused results are the
// plain ones bit for bit (NaN aside, see backend.hpp). Nothing otherwise, and the caller runs the
// plain forward and relu_forward in place.
template <typename PrimitiveDescriptor, typename OperationDescriptor>
std::optional<PrimitiveDescriptor> relu_post_op_descriptor(const OperationDescriptor& operation,
                                                           const PrimitiveDescriptor& plain,
                                                           const dnnl::engine& engine) {
  dnnl::primitive_attr attributes = DnnlContext::primitive_attributes();
  dnnl::post_ops operations;
  operations.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  attributes.set_post_ops(operations);
  constexpr bool allow_empty = true;
  PrimitiveDescriptor fused(operation, attributes, engine, allow_empty);
  if (!fused || std::string(fused.impl_info_str()) != plain.impl_info_str() ||
      fused.src_desc() != plain.src_desc() || fused.weights_desc() != plain.weights_desc() ||
      fused.dst_desc() != plain.dst_desc())
    return std::nullopt;
  return fused;
}

}  // namespace phalanx::backend::cpu
