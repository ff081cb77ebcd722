// WeightedLayerPrimitives and WeightedLayers (see weighted_layers.hpp): the oneDNN primitives of
// convolutions and linear layers, their bridges from and to the caller's layouts, and the one way
// every call binds, converts, runs and converts back.
#include "weighted_layers.hpp"

#include <cstring>
#include <functional>
#include <numeric>

#include "elementwise.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::backend::cpu {

namespace {

using DataType = dnnl::memory::data_type;

DataType data_type(ComputePrecision precision) {
  return precision == ComputePrecision::BFloat16 ? DataType::bf16 : DataType::f32;
}

std::int64_t element_count(const dnnl::memory::desc& descriptor) {
  const dnnl::memory::dims dims = descriptor.get_dims();
  return std::accumulate(dims.begin(), dims.end(), std::int64_t{1}, std::multiplies<>());
}

// bf16 compute reads bf16 operands and writes the output and input gradient as the activations are
// held. A shape oneDNN had no bf16 primitive for (none of the presets' shapes on AVX-512) computes
// in fp32 instead, as the CUDA backend widens a convolution cuDNN has no bf16 algorithm for.
template <typename Geometry>
LayerDescriptors describe(const Geometry& geometry, const LayerOperands& operands, ComputePrecision precision,
                          const dnnl::engine& engine) {
  std::optional<LayerDescriptors> descriptors;
  if (precision == ComputePrecision::BFloat16)
    descriptors = describe_layer(geometry, operands, DataType::bf16, operands.output.get_data_type(), engine);
  if (!descriptors) descriptors = describe_layer(geometry, operands, DataType::f32, DataType::f32, engine);
  PHALANX_CHECK(descriptors.has_value(), "oneDNN has no primitives for the ", layer_name(geometry));
  return *descriptors;
}

}  // namespace

ActivationDescriptors activation_descriptors(const LayerOperands& operands, DataType operand_type,
                                             DataType result_type) {
  const auto as = [](const dnnl::memory::desc& caller, DataType type) {
    return dnnl::memory::desc(caller.get_dims(), type, caller.get_strides());
  };
  return {as(operands.input, operand_type), as(operands.output, result_type), as(operands.input, result_type),
          as(operands.output, operand_type)};
}

WeightedLayerPrimitives::WeightedLayerPrimitives(DnnlContext& context, Activations& activations,
                                                 const LayerOperands& operands,
                                                 const LayerDescriptors& descriptors)
    : context_(context), activations_(activations), descriptors_(descriptors) {
  input_ = context.unbound_memory(operands.input);
  grad_input_ = context.unbound_memory(operands.input);
  output_ = context.unbound_memory(operands.output);
  grad_output_ = context.unbound_memory(operands.output);
  weight_ = context.unbound_memory(operands.weight);
  grad_weight_ = context.unbound_memory(operands.weight);
  if (!operands.bias.is_zero()) {
    bias_ = context.unbound_memory(operands.bias);
    grad_bias_ = context.unbound_memory(operands.bias);
    zero_bias_ = dnnl::memory(operands.bias, context.engine);
    std::memset(zero_bias_.get_data_handle(), 0, operands.bias.get_size());
    discarded_grad_bias_ = dnnl::memory(operands.bias, context.engine);
  }
  forward_ = bridged_forward(descriptors.forward);
  backward_data_ = BridgedPrimitive(context, descriptors.backward_data, {DNNL_ARG_DIFF_DST, grad_output_},
                                    {DNNL_ARG_WEIGHTS, weight_}, {DNNL_ARG_DIFF_SRC, grad_input_});
  backward_weights_ =
      BridgedPrimitive(context, descriptors.backward_weights, {DNNL_ARG_DIFF_DST, grad_output_},
                       {DNNL_ARG_SRC, input_}, {DNNL_ARG_DIFF_WEIGHTS, grad_weight_});
  if (grad_bias_) backward_weights_.arguments.emplace(DNNL_ARG_DIFF_BIAS, grad_bias_);
  // backward binds both directions' bridges at once (all but the shared grad_output).
  context.reserve_transient({&backward_weights_.first, &backward_weights_.second, &backward_weights_.result,
                             &backward_data_.second, &backward_data_.result});
}

BridgedPrimitive WeightedLayerPrimitives::bridged_forward(const dnnl::primitive_desc& descriptor) {
  BridgedPrimitive forward(context_, descriptor, {DNNL_ARG_SRC, input_}, {DNNL_ARG_WEIGHTS, weight_},
                           {DNNL_ARG_DST, output_});
  if (bias_) forward.arguments.emplace(DNNL_ARG_BIAS, bias_);
  return forward;
}

// Made on the first fused call, and only when oneDNN picks the very implementation and layouts of
// the plain forward for it: the same kernel with the activation applied in its epilogue by the
// code the eltwise primitive runs (oneDNN's eltwise injector), so fused results are the plain ones
// followed by the activation, bit for bit with fp32 activations (NaN aside, see backend.hpp; with
// bf16 ones the fused kernel rounds once, after the activation). Otherwise (null) the caller runs
// the plain forward and the activation in place.
const BridgedPrimitive* WeightedLayerPrimitives::fused_forward(FusedActivation activation) {
  const auto index = static_cast<std::size_t>(activation);
  if (fused_forward_tried_[index]) return fused_forward_[index] ? &*fused_forward_[index] : nullptr;
  fused_forward_tried_[index] = true;
  dnnl::primitive_attr attributes = DnnlContext::primitive_attributes();
  dnnl::post_ops operations;
  if (activation == FusedActivation::Relu) {
    operations.append_eltwise(dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  } else {
    const EltwiseAlgorithm form = eltwise_algorithm(activation_kind(activation));
    operations.append_eltwise(form.algorithm, form.alpha, form.beta);
  }
  attributes.set_post_ops(operations);
  const dnnl::primitive_desc fused = descriptors_.forward_with(attributes);
  const dnnl::primitive_desc& plain = descriptors_.forward;
  if (!fused || std::string(fused.impl_info_str()) != plain.impl_info_str() ||
      fused.src_desc() != plain.src_desc() || fused.weights_desc() != plain.weights_desc() ||
      fused.dst_desc() != plain.dst_desc())
    return nullptr;
  fused_forward_[index] = bridged_forward(fused);
  return &*fused_forward_[index];
}

void WeightedLayerPrimitives::forward(const float* input, const float* weight, const float* bias,
                                      float* output, FusedActivation activation) {
  const BridgedPrimitive* fused = activation == FusedActivation::None ? nullptr : fused_forward(activation);
  const BridgedPrimitive& forward = fused ? *fused : forward_;
  input_.set_data_handle(mutable_pointer(input));
  weight_.set_data_handle(mutable_pointer(weight));
  if (bias_) bias_.set_data_handle(bias ? mutable_pointer(bias) : zero_bias_.get_data_handle());
  output_.set_data_handle(output);
  forward.bind_transient(context_);
  forward.execute(context_);
  if (activation == FusedActivation::None || fused) return;
  const std::int64_t count = element_count(output_.get_desc());
  if (activation != FusedActivation::Relu)
    activations_.forward(activation_kind(activation), count, output, output);
  else if (output_.get_desc().get_data_type() == DataType::bf16)
    relu_forward(count, as_bf16(output), as_bf16(output));
  else
    relu_forward(count, output, output);
}

void WeightedLayerPrimitives::bind_gradients(const float* input, const float* grad_output, float* grad_weight,
                                             float* grad_bias) {
  input_.set_data_handle(mutable_pointer(input));
  grad_output_.set_data_handle(mutable_pointer(grad_output));
  grad_weight_.set_data_handle(grad_weight);
  if (grad_bias_)
    grad_bias_.set_data_handle(grad_bias ? static_cast<void*>(grad_bias)
                                         : discarded_grad_bias_.get_data_handle());
}

void WeightedLayerPrimitives::backward_data(const float* grad_output, const float* weight,
                                            float* grad_input) {
  grad_output_.set_data_handle(mutable_pointer(grad_output));
  weight_.set_data_handle(mutable_pointer(weight));
  grad_input_.set_data_handle(grad_input);
  backward_data_.bind_transient(context_);
  backward_data_.execute(context_);
}

void WeightedLayerPrimitives::backward_weights(const float* input, const float* grad_output,
                                               float* grad_weight, float* grad_bias) {
  bind_gradients(input, grad_output, grad_weight, grad_bias);
  backward_weights_.bind_transient(context_);
  backward_weights_.execute(context_);
}

void WeightedLayerPrimitives::backward(const float* input, const float* grad_output, const float* weight,
                                       float* grad_input, float* grad_weight, float* grad_bias) {
  // Where both directions convert grad_output to the same layout and type (bf16 compute over fp32
  // activations), it is converted once; otherwise each direction runs as it is.
  const bool share = grad_input != nullptr && backward_weights_.first.reorder &&
                     backward_data_.first.reorder &&
                     backward_weights_.first.internal.get_desc() == backward_data_.first.internal.get_desc();
  if (!share) {
    backward_weights(input, grad_output, grad_weight, grad_bias);
    if (grad_input) backward_data(grad_output, weight, grad_input);
    return;
  }
  bind_gradients(input, grad_output, grad_weight, grad_bias);
  weight_.set_data_handle(mutable_pointer(weight));
  grad_input_.set_data_handle(grad_input);
  context_.bind_transient({&backward_weights_.first, &backward_weights_.second, &backward_weights_.result,
                           &backward_data_.second, &backward_data_.result});
  backward_data_.first.internal.set_data_handle(backward_weights_.first.internal.get_data_handle());
  backward_weights_.execute(context_);
  backward_data_.execute(context_, BridgedPrimitive::FirstOperand::Converted);
}

// Each cache entry is the primitives of one shape, described with the family's hooks.
template <typename Geometry>
struct WeightedLayers<Geometry>::Entry : WeightedLayerPrimitives {
  Entry(const Geometry& geometry, DnnlContext& context, Activations& activations, ComputePrecision precision,
        ComputePrecision storage)
      : Entry(geometry, context, activations, precision, layer_operands(geometry, data_type(storage))) {}
  Entry(const Geometry& geometry, DnnlContext& context, Activations& activations, ComputePrecision precision,
        const LayerOperands& operands)
      : WeightedLayerPrimitives(context, activations, operands,
                                describe(geometry, operands, precision, context.engine)) {}
};

template <typename Geometry>
WeightedLayers<Geometry>::WeightedLayers(DnnlContext& context, Activations& activations)
    : context_(context), activations_(activations) {}

template <typename Geometry>
WeightedLayers<Geometry>::~WeightedLayers() = default;

template <typename Geometry>
void WeightedLayers<Geometry>::set_precision(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU convolutions and linear layers compute in fp32 or bf16");
  precision_ = precision;
}

template <typename Geometry>
void WeightedLayers<Geometry>::set_storage(ComputePrecision precision) {
  PHALANX_CHECK(precision == ComputePrecision::Float32 || precision == ComputePrecision::BFloat16,
                "the CPU convolutions and linear layers hold activations in fp32 or bf16");
  storage_ = precision;
}

template <typename Geometry>
WeightedLayerPrimitives& WeightedLayers<Geometry>::primitives(const Geometry& geometry) {
  // One entry per shape: the fused forward lives beside the plain one (backward ignores the
  // activation), so a fused layer builds no second set of backward primitives.
  Geometry shape = geometry;
  shape.activation = FusedActivation::None;
  try {
    return cache_.find_or_create_with(precision_, storage_, shape, context_, activations_, precision_,
                                      storage_);
  } catch (const dnnl::error& error) {
    throw_dnnl_error(error,
                     detail::concat("create ", precision_ == ComputePrecision::BFloat16 ? "bf16 " : "",
                                    layer_name(geometry)),
                     __FILE__, __LINE__);
  }
}

template <typename Geometry>
template <typename Call>
void WeightedLayers<Geometry>::run(const Geometry& geometry, const char* direction, const Call& call) {
  WeightedLayerPrimitives& layer = primitives(geometry);
  try {
    call(layer);
  } catch (const dnnl::error& error) {
    throw_dnnl_error(error, detail::concat("run ", layer_name(geometry), " ", direction), __FILE__, __LINE__);
  }
}

template <typename Geometry>
void WeightedLayers<Geometry>::forward(const Geometry& geometry, const float* input, const float* weight,
                                       const float* bias, float* output) {
  run(geometry, "forward", [&](WeightedLayerPrimitives& layer) {
    layer.forward(input, weight, bias, output, geometry.activation);
  });
}

template <typename Geometry>
void WeightedLayers<Geometry>::backward_data(const Geometry& geometry, const float* grad_output,
                                             const float* weight, float* grad_input) {
  run(geometry, "backward data",
      [&](WeightedLayerPrimitives& layer) { layer.backward_data(grad_output, weight, grad_input); });
}

template <typename Geometry>
void WeightedLayers<Geometry>::backward_weights(const Geometry& geometry, const float* input,
                                                const float* grad_output, float* grad_weight,
                                                float* grad_bias) {
  run(geometry, "backward weights", [&](WeightedLayerPrimitives& layer) {
    layer.backward_weights(input, grad_output, grad_weight, grad_bias);
  });
}

template <typename Geometry>
void WeightedLayers<Geometry>::backward(const Geometry& geometry, const float* input,
                                        const float* grad_output, const float* weight, float* grad_input,
                                        float* grad_weight, float* grad_bias) {
  run(geometry, "backward", [&](WeightedLayerPrimitives& layer) {
    layer.backward(input, grad_output, weight, grad_input, grad_weight, grad_bias);
  });
}

template <typename Geometry>
std::string WeightedLayers<Geometry>::backward_weights_implementation(const Geometry& geometry) {
  return primitives(geometry).backward_weights_implementation();
}

template class WeightedLayers<ConvolutionGeometry>;
template class WeightedLayers<LinearGeometry>;

}  // namespace phalanx::backend::cpu
