// Flat parameter/gradient/buffer allocation and PyTorch-default initialisation.
#include "phalanx/nn/parameter_registry.hpp"

#include <algorithm>
#include <cmath>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::nn {
namespace {

// Offsets are padded to 16 floats (64 bytes) so every parameter view is aligned for SIMD.
constexpr std::int64_t alignment_elements = 16;

std::int64_t align_up(std::int64_t value) {
  return (value + alignment_elements - 1) / alignment_elements * alignment_elements;
}

void initialise(const ParameterInfo& info, std::uint64_t seed, std::vector<float>& host) {
  float* values = host.data() + info.offset;
  switch (info.initializer) {
    case Initializer::Ones: std::fill(values, values + info.count, 1.0f); return;
    case Initializer::Zeros: std::fill(values, values + info.count, 0.0f); return;
    case Initializer::KaimingUniformWeight:
    case Initializer::FanInUniformBias: {
      // kaiming_uniform_(a=sqrt(5)) has bound gain*sqrt(3/fan_in) with gain = sqrt(1/3): 1/sqrt(fan_in).
      const float bound = 1.0f / std::sqrt(static_cast<float>(info.fan_in));
      RandomStream stream(seed, fnv1a_hash(info.name));
      for (std::int64_t i = 0; i < info.count; ++i) values[i] = stream.next_uniform(-bound, bound);
      return;
    }
  }
}

}  // namespace

void ParameterRegistry::require_unique(const std::string& name) const {
  // Names are checkpoint paths: two layers with one name would overwrite each other's weights.
  for (const auto* list : {&parameter_info_, &buffer_info_})
    for (const auto& info : *list) {
      const std::string layer = name.substr(0, name.rfind('/'));
      PHALANX_REQUIRE_INPUT(
          info.name != name, "model: two layers are named '", layer,
          "'; layer names must be unique in the whole model (they name the checkpoint's parameters)");
    }
}

int ParameterRegistry::declare_parameter(const std::string& name, Shape shape, Initializer initializer,
                                         std::int64_t fan_in) {
  PHALANX_CHECK(parameters_.empty(), "parameter declared after allocation: ", name);
  require_unique(name);
  const std::int64_t count = shape.elements();
  parameter_info_.push_back({name, std::move(shape), parameter_elements_, count, initializer, fan_in});
  parameter_elements_ = align_up(parameter_elements_ + count);
  return static_cast<int>(parameter_info_.size() - 1);
}

int ParameterRegistry::declare_buffer(const std::string& name, Shape shape, Initializer initializer) {
  PHALANX_CHECK(buffers_.empty(), "buffer declared after allocation: ", name);
  require_unique(name);
  const std::int64_t count = shape.elements();
  buffer_info_.push_back({name, std::move(shape), buffer_elements_, count, initializer, 1});
  buffer_elements_ = align_up(buffer_elements_ + count);
  return static_cast<int>(buffer_info_.size() - 1);
}

int ParameterRegistry::freeze(const std::string& prefix) {
  int matched = 0;
  for (auto& info : parameter_info_) {
    if (info.name != prefix && !info.name.starts_with(prefix + "/")) continue;
    info.frozen = true;
    ++matched;
  }
  return matched;
}

bool ParameterRegistry::any_frozen() const {
  for (const auto& info : parameter_info_)
    if (info.frozen) return true;
  return false;
}

void ParameterRegistry::allocate(backend::Backend& backend, std::uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(parameter_elements_), 0.0f);
  for (const auto& info : parameter_info_) initialise(info, seed, host);
  parameters_ = Tensor(backend, Shape{std::max<std::int64_t>(parameter_elements_, 1)});
  gradients_ = Tensor(backend, Shape{std::max<std::int64_t>(parameter_elements_, 1)});
  backend.copy_from_host(parameters_.data(), host.data(), host.size() * sizeof(float));
  backend.fill(gradients_.data(), gradients_.elements(), 0.0f);

  std::vector<float> host_buffers(static_cast<std::size_t>(buffer_elements_), 0.0f);
  for (const auto& info : buffer_info_) initialise(info, seed, host_buffers);
  buffers_ = Tensor(backend, Shape{std::max<std::int64_t>(buffer_elements_, 1)});
  backend.fill(buffers_.data(), buffers_.elements(), 0.0f);
  backend.copy_from_host(buffers_.data(), host_buffers.data(), host_buffers.size() * sizeof(float));
}

}  // namespace phalanx::nn
