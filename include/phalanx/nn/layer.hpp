// Layer: one node of a network. A layer is configured once with its per-sample input shape
// (it declares its parameters then), and then runs forward and backward on batches through a
// Backend, never knowing which device that is.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/shape.hpp"
#include "phalanx/core/tensor.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::nn {

enum class Mode { Training, Evaluation };

// Whether an activation is computed by the op before it: a conv, linear or batch_norm directly
// followed by a relu, relu6, sigmoid or hardsigmoid layer in a Sequential writes the activated
// result itself (the activation layer's output is that same buffer, one activation buffer fewer),
// and a residual block adds and applies its ReLU in one pass. Results are the same bit for bit with
// fp32 activations (backend.hpp says where NaN differs, and what reduced-precision storage
// changes); Separate runs every layer on its own, to compare.
enum class ActivationFusion { Fused, Separate };
// The name from when only ReLU fused.
using ReluFusion = ActivationFusion;

struct ForwardContext {
  Mode mode = Mode::Training;
  std::uint64_t seed = 0;  // run seed, for dropout masks
  std::int64_t step = 0;   // global optimizer step, so masks differ per step and per rank
  int rank = 0;
};

// Called during backward with the lowest flat-gradient offset whose gradients are now final:
// every gradient at or above it will not change again this step (backward runs in reverse
// registration order), which is what GradSync needs to start a bucket's all-reduce.
using GradientsReady = std::function<void(std::int64_t first_final_offset)>;

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual std::string type() const = 0;

  // Per-sample input shape ([H, W, C] or [F]) -> per-sample output shape. Declares parameters.
  // Throws InvalidInput when the input does not fit the layer (naming the layer).
  virtual Shape configure(const Shape& sample_input, ParameterRegistry& registry) = 0;

  // input/output are [batch, ...sample shape]; output is already sized by the caller.
  virtual void forward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                       Tensor& output, const ForwardContext& context) = 0;
  // Writes the parameter gradients and, when grad_input is not null, the input gradient.
  virtual void backward(backend::Backend& backend, ParameterRegistry& registry, const Tensor& input,
                        const Tensor& output, const Tensor& grad_output, Tensor* grad_input,
                        const GradientsReady& gradients_ready) = 0;

  // Whether forward can apply the activation of a layer that follows it (conv, linear, batch_norm).
  virtual bool can_fuse_activation() const { return false; }
  // What this layer is as an activation its producer can apply (relu, relu6, sigmoid, hardsigmoid);
  // None for every other layer. Its backward then must read only its output (the producer's
  // pre-activation result is never stored).
  virtual backend::FusedActivation fused_form() const { return backend::FusedActivation::None; }
  // From now on forward applies `activation` to its result (the Sequential then skips the activation
  // layer's forward).
  virtual void set_fused_activation(backend::FusedActivation) {}

  // The layers that compute, in forward order: the layer itself, or a block's own layers (what a
  // cost model times one by one).
  virtual void collect_leaves(std::vector<const Layer*>& leaves) const { leaves.push_back(this); }
  // Multiply-adds of one sample's forward pass, known once configured: convolutions and linear
  // layers (the bulk of a CNN's arithmetic); 0 for the layers that only move or scale memory.
  virtual std::int64_t sample_multiply_adds() const { return 0; }

  // Lowest flat offset of this layer's parameters (INT64_MAX when it has none).
  std::int64_t first_parameter_offset() const { return first_parameter_offset_; }

 protected:
  // The backends index a sample's activations, and a linear layer its features, with 32-bit ints:
  // an output larger than that (a config's padding of 10^5) is an input error naming the layer,
  // checked in 64 bits before any int is formed from it.
  void require_sample_fits(std::int64_t elements) const;
  // The same for an output of height x width x channels, each factor checked first, so that the
  // product cannot overflow on the way (a padding near 2^31 gives sides of 2^32).
  void require_sample_fits(std::int64_t height, std::int64_t width, std::int64_t channels) const;
  // A sliding window (a convolution's kernel, a pool's window) over one padded image dimension
  // whose stride is past the padded extent would give the same single output as a stride of the
  // extent itself; the CPU library's kernels crash on such strides, so they are refused. The
  // padded extents must be ints too (the backends' geometry holds them so).
  void require_stride_within(std::int64_t padded_height, std::int64_t padded_width, int stride,
                             int padding) const;

  void note_parameter(const ParameterRegistry& registry, int index) {
    first_parameter_offset_ = std::min(first_parameter_offset_, registry.parameter_info(index).offset);
  }
  std::int64_t first_parameter_offset_ = INT64_MAX;

 private:
  std::string name_;
};

using LayerPointer = std::unique_ptr<Layer>;

}  // namespace phalanx::nn
