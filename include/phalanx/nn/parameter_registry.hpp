// ParameterRegistry: every learnable parameter of a model lives in one contiguous buffer, and
// every gradient in another of the same layout, so the all-reduce and the optimizer work on
// flat memory while layers see views (Caffe's idea). Non-learnable state (batch-norm running
// statistics) lives in a third flat buffer of "buffers", kept out of the gradient path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/shape.hpp"
#include "phalanx/core/tensor.hpp"

namespace phalanx::nn {

enum class Initializer {
  KaimingUniformWeight,  // PyTorch's default for conv/linear weights: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  FanInUniformBias,      // PyTorch's default for conv/linear biases: the same bound
  Ones,
  Zeros,
};

struct ParameterInfo {
  std::string name;     // "<layer>/<param>", PyTorch state_dict name with '/' for '.'
  Shape shape;          // PyTorch layout
  std::int64_t offset;  // in elements, into the flat buffer
  std::int64_t count;
  Initializer initializer;
  std::int64_t fan_in;
  bool frozen = false;  // train.freeze: the optimizer leaves it as it is
};

class ParameterRegistry {
 public:
  // Declaration phase (model construction): returns the parameter's index.
  int declare_parameter(const std::string& name, Shape shape, Initializer initializer, std::int64_t fan_in);
  int declare_buffer(const std::string& name, Shape shape, Initializer initializer);

  // train.freeze: marks the parameters `prefix` names as frozen: "a/b" names a/b itself and
  // everything under a/b/ (whole name components: "layer1" is not "layer10"). Returns how many.
  int freeze(const std::string& prefix);
  bool frozen(int index) const { return parameter_info_[index].frozen; }
  bool any_frozen() const;

  // Allocates the flat buffers on `backend` and initialises parameters from `seed`.
  void allocate(backend::Backend& backend, std::uint64_t seed);

  float* parameter(int index) { return parameters_.data() + parameter_info_[index].offset; }
  float* gradient(int index) { return gradients_.data() + parameter_info_[index].offset; }
  float* buffer(int index) { return buffers_.data() + buffer_info_[index].offset; }
  const ParameterInfo& parameter_info(int index) const { return parameter_info_[index]; }

  const std::vector<ParameterInfo>& parameters_info() const { return parameter_info_; }
  const std::vector<ParameterInfo>& buffers_info() const { return buffer_info_; }
  Tensor& parameters() { return parameters_; }
  Tensor& gradients() { return gradients_; }
  Tensor& buffers() { return buffers_; }
  // False while only declared (a ModelPlan's registry), true once allocate() ran.
  bool allocated() const { return !parameters_.empty(); }
  // The flat buffers' lengths, alignment padding between tensors included (what the optimizer,
  // the all-reduce and the checkpoints iterate over); the model's parameter count is
  // Model::size().parameters.
  std::int64_t parameter_count() const { return parameter_elements_; }
  std::int64_t buffer_count() const { return buffer_elements_; }

 private:
  void require_unique(const std::string& name) const;
  std::vector<ParameterInfo> parameter_info_;
  std::vector<ParameterInfo> buffer_info_;
  std::int64_t parameter_elements_ = 0;
  std::int64_t buffer_elements_ = 0;
  Tensor parameters_, gradients_, buffers_;
};

}  // namespace phalanx::nn
