// The weight average's update and exchange (weight_average.hpp): one backend pass over each flat
// buffer per update, device copies for the exchange, so nothing crosses to the host.
#include "phalanx/optim/weight_average.hpp"

#include <algorithm>

#include "phalanx/core/error.hpp"

namespace phalanx::optim {
namespace {

Tensor copy_of(backend::Backend& backend, const Tensor& source, std::int64_t count) {
  if (count == 0) return {};
  Tensor copy(backend, Shape{count});
  backend.copy(copy.data(), source.data(), static_cast<std::size_t>(count) * sizeof(float));
  return copy;
}

}  // namespace

double weight_average_decay(const config::EmaConfig& settings, std::int64_t updates_so_far) {
  if (!settings.warmup) return settings.decay;
  const double updates = static_cast<double>(updates_so_far);
  return std::min(settings.decay, (1.0 + updates) / (10.0 + updates));
}

WeightAverage::WeightAverage(const config::EmaConfig& settings, backend::Backend& backend,
                             nn::ParameterRegistry& registry)
    : settings_(settings),
      backend_(backend),
      registry_(registry),
      parameters_(copy_of(backend, registry.parameters(), registry.parameter_count())),
      buffers_(copy_of(backend, registry.buffers(), registry.buffer_count())) {
  PHALANX_CHECK(settings.every_steps >= 1, "weight average every ", settings.every_steps, " steps");
}

bool WeightAverage::after_step(std::int64_t global_step) {
  if (global_step % settings_.every_steps != 0) return false;
  update();
  return true;
}

void WeightAverage::update() {
  const float decay = static_cast<float>(weight_average_decay(settings_, updates_));
  if (registry_.parameter_count() > 0)
    backend_.moving_average(registry_.parameter_count(), decay, registry_.parameters().data(),
                            parameters_.data());
  if (registry_.buffer_count() > 0)
    backend_.moving_average(registry_.buffer_count(), decay, registry_.buffers().data(), buffers_.data());
  ++updates_;
}

void WeightAverage::exchange_with_registry() {
  const std::int64_t largest = std::max(registry_.parameter_count(), registry_.buffer_count());
  if (largest == 0) return;
  if (scratch_.empty()) scratch_ = Tensor(backend_, Shape{largest});
  const auto exchange = [&](Tensor& live, Tensor& average, std::int64_t count) {
    if (count == 0) return;
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
    backend_.copy(scratch_.data(), live.data(), bytes);
    backend_.copy(live.data(), average.data(), bytes);
    backend_.copy(average.data(), scratch_.data(), bytes);
  };
  exchange(registry_.parameters(), parameters_, registry_.parameter_count());
  exchange(registry_.buffers(), buffers_, registry_.buffer_count());
}

}  // namespace phalanx::optim
