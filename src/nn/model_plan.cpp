// The first phase of building a Model: layers from config specs, configured once for the data,
// their parameters declared but not allocated.
#include "phalanx/nn/model_plan.hpp"

#include <map>
#include <optional>

#include "phalanx/core/error.hpp"

namespace phalanx::nn {
namespace {

backend::PoolingKind pooling_kind(const std::string& type) {
  return type == "max_pool" ? backend::PoolingKind::Max : backend::PoolingKind::Average;
}

// The ActivationKind of an activation layer's spec; nullopt for every other layer type.
std::optional<backend::ActivationKind> activation_kind(const config::LayerSpec& spec) {
  using backend::ActivationKind;
  if (spec.type == "relu6") return ActivationKind::Relu6;
  if (spec.type == "sigmoid") return ActivationKind::Sigmoid;
  if (spec.type == "hardsigmoid") return ActivationKind::Hardsigmoid;
  if (spec.type == "silu") return ActivationKind::Silu;
  if (spec.type == "hardswish") return ActivationKind::Hardswish;
  if (spec.type == "gelu")
    return spec.approximate == "tanh" ? ActivationKind::GeluTanh : ActivationKind::Gelu;
  return std::nullopt;
}

LayerPointer build_layer(const config::LayerSpec& spec, const std::string& name, ActivationFusion fusion) {
  if (spec.type == "conv")
    return std::make_unique<Convolution>(name, spec.out_channels, spec.kernel, spec.stride, spec.padding,
                                         spec.groups, spec.dilation, spec.bias);
  if (spec.type == "linear") return std::make_unique<Linear>(name, spec.out_features, spec.bias);
  if (spec.type == "relu") return std::make_unique<Relu>(name);
  if (const auto kind = activation_kind(spec)) return std::make_unique<Activation>(name, *kind);
  if (spec.type == "max_pool" || spec.type == "avg_pool") {
    // Stride 0 (the config's default for pools) means "equal to the kernel", as in torch.
    const int stride = spec.stride > 0 ? spec.stride : spec.kernel;
    return std::make_unique<Pooling>(name, pooling_kind(spec.type), spec.kernel, stride, spec.padding, false);
  }
  if (spec.type == "global_avg_pool")
    return std::make_unique<Pooling>(name, backend::PoolingKind::Average, 1, 1, 0, true);
  if (spec.type == "batch_norm")
    return std::make_unique<BatchNorm>(name, spec.batch_norm_momentum, spec.batch_norm_epsilon);
  if (spec.type == "dropout") return std::make_unique<Dropout>(name, spec.probability);
  if (spec.type == "flatten") return std::make_unique<Flatten>(name);
  if (spec.type == "residual") {
    PHALANX_REQUIRE_INPUT(!spec.main.empty(), "layer '", name, "': a residual block needs a main path");
    auto main = build_layers(spec.main, name, fusion);
    auto shortcut = spec.shortcut.empty() ? nullptr : build_layers(spec.shortcut, name + "/shortcut", fusion);
    return std::make_unique<Residual>(name, std::move(main), std::move(shortcut), spec.relu_after, fusion,
                                      spec.stochastic_depth);
  }
  if (spec.type == "squeeze_excitation")
    return std::make_unique<SqueezeExcitation>(name, spec.squeeze_channels, spec.activation,
                                               spec.scale_activation, fusion);
  if (spec.type == "inverted_residual") return std::make_unique<InvertedResidual>(name, spec, fusion);
  throw_input_error("model.layers: unknown layer type '" + spec.type + "'");
}

}  // namespace

std::unique_ptr<Sequential> build_layers(const std::vector<config::LayerSpec>& specs, const std::string& name,
                                         ActivationFusion fusion) {
  auto sequential = std::make_unique<Sequential>(name, fusion);
  std::map<std::string, int> counts;
  for (const auto& spec : specs) {
    std::string layer_name = spec.name;
    if (layer_name.empty()) {
      layer_name = spec.type + std::to_string(++counts[spec.type]);
      if (!name.empty() && name != "model") layer_name = name + "/" + layer_name;
    }
    sequential->add(build_layer(spec, layer_name, fusion));
  }
  return sequential;
}

ModelPlan::ModelPlan(const config::ModelConfig& model_config, const Shape& sample_shape, int classes,
                     ActivationFusion fusion)
    : sample_shape_(sample_shape), classes_(classes) {
  const auto specs = model_config.preset.empty() ? model_config.layers
                                                 : preset_layers(model_config.preset, sample_shape, classes);
  PHALANX_REQUIRE_INPUT(!specs.empty(), "model: no layers (set model.preset or model.layers)");
  network_ = build_layers(specs, "model", fusion);
  // Declaring the parameters allocates nothing: only ParameterRegistry::allocate does.
  const Shape output = network_->configure(sample_shape, registry_);
  PHALANX_REQUIRE_INPUT(output.elements() == classes, "model: the last layer gives ", output.to_string(),
                        " outputs per sample but the data has ", classes,
                        " classes (the model does not fit the data)");
  size_ = ModelSize{0, registry_.parameter_count(), registry_.buffer_count()};
  for (const auto& info : registry_.parameters_info()) size_.parameters += info.count;
}

}  // namespace phalanx::nn
