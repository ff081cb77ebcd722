// The layer types of phalanx. One class per file under src/nn/; this header declares them all
// because the model factory and the tests need every one.
#pragma once

#include <vector>

#include "phalanx/config/config.hpp"
#include "phalanx/nn/layer.hpp"

namespace phalanx::nn {

class Convolution final : public Layer {
 public:
  Convolution(std::string name, int out_channels, int kernel, int stride, int padding, int groups,
              int dilation, bool bias);
  std::string type() const override { return "conv"; }
  bool can_fuse_activation() const override { return true; }
  void set_fused_activation(backend::FusedActivation activation) override { fused_activation_ = activation; }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  std::int64_t sample_multiply_adds() const override;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  backend::ConvolutionGeometry geometry(std::int64_t batch) const;
  int out_channels_, kernel_, stride_, padding_, groups_, dilation_;
  bool bias_;
  backend::FusedActivation fused_activation_ = backend::FusedActivation::None;
  int in_channels_ = 0, in_height_ = 0, in_width_ = 0;
  int weight_ = -1, bias_index_ = -1;
};

class Linear final : public Layer {
 public:
  Linear(std::string name, int out_features, bool bias);
  std::string type() const override { return "linear"; }
  bool can_fuse_activation() const override { return true; }
  void set_fused_activation(backend::FusedActivation activation) override { fused_activation_ = activation; }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  std::int64_t sample_multiply_adds() const override { return std::int64_t{in_features_} * out_features_; }
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  int out_features_;
  bool bias_;
  backend::FusedActivation fused_activation_ = backend::FusedActivation::None;
  int in_features_ = 0;
  int weight_ = -1, bias_index_ = -1;
};

class Relu final : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "relu"; }
  backend::FusedActivation fused_form() const override { return backend::FusedActivation::Relu; }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;
};

// An element-wise activation other than ReLU (backend::ActivationKind): silu, relu6, hardswish,
// hardsigmoid, sigmoid, gelu, as torch.nn's modules of those names. Without parameters. Relu6,
// sigmoid and hardsigmoid right after a conv, linear or batch_norm are computed by that layer in a
// Sequential (fused_form), as relu is; the others need their input in backward and run on their own.
class Activation final : public Layer {
 public:
  Activation(std::string name, backend::ActivationKind kind);
  // The config type: "silu", "relu6", "hardswish", "hardsigmoid", "sigmoid", "gelu" (either form).
  std::string type() const override;
  backend::ActivationKind kind() const { return kind_; }
  backend::FusedActivation fused_form() const override { return backend::fused_form(kind_); }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  backend::ActivationKind kind_;
};

// Max or average pooling; global average pooling is Average over the whole input.
class Pooling final : public Layer {
 public:
  Pooling(std::string name, backend::PoolingKind kind, int kernel, int stride, int padding, bool global);
  std::string type() const override;
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  backend::PoolingGeometry geometry(std::int64_t batch) const;
  backend::PoolingKind kind_;
  int kernel_, stride_, padding_;
  bool global_;
  int channels_ = 0, in_height_ = 0, in_width_ = 0;
  Tensor workspace_;
};

class BatchNorm final : public Layer {
 public:
  explicit BatchNorm(std::string name, float momentum = 0.1f, float epsilon = 1e-5f);
  std::string type() const override { return "batch_norm"; }
  bool can_fuse_activation() const override { return true; }
  void set_fused_activation(backend::FusedActivation activation) override { fused_activation_ = activation; }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  backend::BatchNormGeometry geometry(std::int64_t batch) const;
  bool frozen(const ParameterRegistry& registry) const;
  void frozen_backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& grad_output,
                       Tensor& grad_input);
  float momentum_, epsilon_;
  backend::FusedActivation fused_activation_ = backend::FusedActivation::None;
  int channels_ = 0, spatial_ = 1;
  int gamma_ = -1, beta_ = -1, running_mean_ = -1, running_variance_ = -1;
  Tensor saved_mean_, saved_inverse_std_, scratch_gradient_;
  // Frozen: weight / sqrt(running_var + eps) per channel, as [C, 1, 1, 1] depthwise weights.
  Tensor frozen_scale_;
};

class Dropout final : public Layer {
 public:
  Dropout(std::string name, float probability);
  std::string type() const override { return "dropout"; }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  float probability_;
  Tensor mask_;
  bool last_forward_training_ = false;
};

// NHWC -> flat features in PyTorch's (C, H, W) order, so linear weights load into torch as is.
class Flatten final : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "flatten"; }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  int height_ = 0, width_ = 0, channels_ = 0;
};

// Layers in order; keeps the activations between them for backward. With ActivationFusion::Fused
// an activation layer whose backward reads only its output (relu, relu6, sigmoid, hardsigmoid)
// right after a conv, linear or batch_norm is computed by that layer into the activation's output
// buffer, which then is both layers' output (the producers' backward never reads its output).
// silu, hardswish and gelu stay layers of their own: their backward needs their input, the
// producer's pre-activation result, which a fused producer does not keep (keeping it would take
// the buffer the fusion saves, for one pass over memory less per activation).
class Sequential final : public Layer {
 public:
  explicit Sequential(std::string name, ActivationFusion fusion = ActivationFusion::Fused)
      : Layer(std::move(name)), fusion_(fusion) {}
  std::string type() const override { return "sequential"; }
  void add(LayerPointer layer) { layers_.push_back(std::move(layer)); }
  bool empty() const { return layers_.empty(); }
  const std::vector<LayerPointer>& layers() const { return layers_; }
  void collect_leaves(std::vector<const Layer*>& leaves) const override {
    for (const auto& layer : layers_) layer->collect_leaves(leaves);
  }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;
  // Activation layers whose producer computes them (none with ActivationFusion::Separate).
  int fused_activation_count() const;
  // Bytes of the intermediate activations this Sequential holds (not those of nested blocks):
  // each fused pair holds one buffer instead of two.
  std::size_t activation_bytes() const;
  // Floats of activation memory one sample needs here, nested blocks included, known once
  // configured: every buffer of a layer's output (one for a fused pair), two gradient buffers of the
  // largest, a residual block's own four. The memory check before training scales it by the batch.
  std::int64_t sample_activation_elements() const;

 private:
  // ReLU then a max pool gives the same values and the same gradients as the max pool then ReLU:
  // both are monotonic, so the window's maximum is the same element either way, and a window whose
  // maximum is <= 0 passes no gradient in either order. The second order runs ReLU, and above all
  // its backward (a pass over memory, a large share of a small CNN's step), on the pooled tensor,
  // a quarter of the elements for a 2x2 pool. So configure runs every such pair in that order,
  // unless ActivationFusion::Separate asks for the layers exactly as written.
  void run_relu_after_max_pool();
  // The index of the tensor layer `index` writes: its own, or its fused relu's.
  std::size_t output_slot(std::size_t index) const;

  ActivationFusion fusion_;
  std::vector<LayerPointer> layers_;
  // Per layer: an activation its producer computes.
  std::vector<bool> fused_into_previous_;
  std::vector<Shape> sample_shapes_;  // output shape of each layer
  std::vector<Tensor> activations_;   // outputs of all but the last layer
  std::vector<Tensor> gradients_;     // two ping-pong buffers for input gradients
};

// output = main(x) + shortcut(x) (identity shortcut when empty), then ReLU when asked. With
// stochastic depth p > 0, training drops main(x) of each sample with probability p and scales the
// kept ones by 1/(1-p) (torchvision.ops.StochasticDepth, mode "row"); evaluation keeps all.
class Residual final : public Layer {
 public:
  Residual(std::string name, std::unique_ptr<Sequential> main, std::unique_ptr<Sequential> shortcut,
           bool relu_after, ActivationFusion fusion = ActivationFusion::Fused, float stochastic_depth = 0.0f);
  std::string type() const override { return "residual"; }
  void collect_leaves(std::vector<const Layer*>& leaves) const override {
    main_->collect_leaves(leaves);
    if (shortcut_) shortcut_->collect_leaves(leaves);
  }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  // Its paths' activation floats per sample and its own buffers, for an output of `output_elements`.
  std::int64_t sample_activation_elements(std::int64_t output_elements) const;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  std::unique_ptr<Sequential> main_, shortcut_;
  bool relu_after_;
  ActivationFusion fusion_;
  float stochastic_depth_;
  Tensor main_output_, shortcut_output_, sum_gradient_, path_gradient_;
  // Stochastic depth: the kept samples of the last training forward (one byte each, on the device
  // and as drawn on the host), main(x) scaled by them, and the main path's gradient.
  bool last_forward_dropped_paths_ = false;
  std::vector<std::uint8_t> keep_drawn_;
  Tensor keep_, scaled_main_, main_gradient_;
};

// torchvision.ops.SqueezeExcitation: scale = scale_activation(fc2(activation(fc1(avgpool(x))))),
// output = x * scale per sample and channel; fc1 and fc2 are 1x1 convolutions with bias, named
// <name>/fc1 and <name>/fc2 as in torch. They are built once the input channels are known.
class SqueezeExcitation final : public Layer {
 public:
  SqueezeExcitation(std::string name, int squeeze_channels, std::string activation,
                    std::string scale_activation, ActivationFusion fusion = ActivationFusion::Fused);
  std::string type() const override { return "squeeze_excitation"; }
  void collect_leaves(std::vector<const Layer*>& leaves) const override {
    if (squeeze_) squeeze_->collect_leaves(leaves);
  }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  // Floats per sample of its squeeze path and its own buffers, for an input of `input_elements`.
  std::int64_t sample_activation_elements(std::int64_t input_elements) const;
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  int squeeze_channels_;
  std::string activation_, scale_activation_;
  ActivationFusion fusion_;
  std::unique_ptr<Sequential> squeeze_;
  std::int64_t spatial_ = 0, channels_ = 0;
  Tensor scale_, grad_scale_, path_gradient_;
};

// An inverted-residual block (MobileNetV2 and after) as the config's inverted_residual layer
// writes it: expand 1x1 conv + BN + activation (unless the expanded channels equal the input's),
// depthwise kxk conv + BN + activation with the stride, optional squeeze-and-excitation, project
// 1x1 conv + BN, and the residual sum when stride 1 keeps the channels. Its layers depend on the
// input channels, so they are built (named as torchvision's MobileNetV3 names them: <name>/block/K)
// when the block meets its input.
class InvertedResidual final : public Layer {
 public:
  InvertedResidual(std::string name, config::LayerSpec spec,
                   ActivationFusion fusion = ActivationFusion::Fused);
  std::string type() const override { return "inverted_residual"; }
  void collect_leaves(std::vector<const Layer*>& leaves) const override {
    if (body_) body_->collect_leaves(leaves);
  }
  Shape configure(const Shape& sample_input, ParameterRegistry& registry) override;
  const Sequential& body() const { return *body_; }
  void forward(backend::Backend&, ParameterRegistry&, const Tensor&, Tensor&, const ForwardContext&) override;
  void backward(backend::Backend&, ParameterRegistry&, const Tensor&, const Tensor&, const Tensor&, Tensor*,
                const GradientsReady&) override;

 private:
  config::LayerSpec spec_;
  ActivationFusion fusion_;
  std::unique_ptr<Sequential> body_;
};

}  // namespace phalanx::nn
