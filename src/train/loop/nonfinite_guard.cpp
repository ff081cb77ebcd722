// The non-finite check of train.nonfinite. The common path is one pass over the summed gradients
// (backend all_finite), whose flag the ranks agree on in the step's one small collective
// (RunControl::agree_before_update); finding the layer copies the buffer to the host and runs only
// when a step has already failed.
#include "loop/nonfinite_guard.hpp"

#include <cmath>

#include "phalanx/core/error.hpp"

namespace phalanx::train {

std::optional<NonFiniteFinding> find_nonfinite(const std::vector<nn::ParameterInfo>& parameters,
                                               const float* host, ScanOrder order) {
  std::optional<NonFiniteFinding> first;
  int with_nonfinite = 0;
  const auto size = parameters.size();
  for (std::size_t step = 0; step < size; ++step) {
    const auto& info = parameters[order == ScanOrder::Forward ? step : size - 1 - step];
    std::int64_t values = 0;
    bool nan = false;
    for (std::int64_t index = 0; index < info.count; ++index) {
      const float value = host[info.offset + index];
      if (std::isfinite(value)) continue;
      ++values;
      nan = nan || std::isnan(value);
    }
    if (values == 0) continue;
    ++with_nonfinite;
    if (!first) first = NonFiniteFinding{info.name, values, info.count, 0, nan};
  }
  if (first) first->parameters = with_nonfinite;
  return first;
}

std::string describe(const NonFiniteFinding& finding) {
  std::string text = finding.parameter + ": " + std::to_string(finding.values) + " of " +
                     std::to_string(finding.count) + " values " +
                     (finding.any_nan ? "NaN or infinite" : "infinite");
  if (finding.parameters > 1)
    text += " (and " + std::to_string(finding.parameters - 1) + " more parameter" +
            (finding.parameters > 2 ? "s" : "") + ")";
  return text;
}

NonFiniteGuard::NonFiniteGuard(config::NonFinite policy, backend::Backend& backend)
    : policy_(policy), backend_(backend) {}

bool NonFiniteGuard::local_gradients_finite(const float* gradients, std::int64_t count) {
  // On a GPU rank all_finite reduces on the device and reads one flag back: the host waits here
  // for backward and the gradient sums. Keeping that wait off the host would take the flag's
  // agreement onto the device too: the flag reduced with NCCL (a max, after the last bucket on the
  // communication stream), the optimizer and loss-scaler kernels reading it from device memory
  // to skip the update and halve the scale there, and the host learning of a skip (the message,
  // the skip count, train.nonfinite: stop) a step late, like the step times; the stop signal and
  // handover would still need their host collective. Nothing of that exists yet.
  return backend_.all_finite(count, gradients);
}

std::vector<float> NonFiniteGuard::to_host(const Tensor& tensor, std::int64_t count) {
  std::vector<float> host(static_cast<std::size_t>(count));
  if (count) backend_.copy_to_host(host.data(), tensor.data(), host.size() * sizeof(float));
  return host;
}

NonFiniteFinding NonFiniteGuard::describe_gradients(nn::ParameterRegistry& registry) {
  const auto host = to_host(registry.gradients(), registry.parameter_count());
  const auto finding = find_nonfinite(registry.parameters_info(), host.data(), ScanOrder::Backward);
  // Another rank's sums held the inf or NaN (see RunControl::agree_before_update): this rank's are
  // finite.
  return finding.value_or(NonFiniteFinding{"(another rank's gradient sums)", 0, 0, 0, false});
}

std::optional<NonFiniteFinding> NonFiniteGuard::find_nonfinite_state(
    nn::ParameterRegistry& registry, const std::vector<const Tensor*>& optimizer_states) {
  const auto scan = [&](const Tensor& tensor, std::int64_t count,
                        const std::vector<nn::ParameterInfo>& layout,
                        const std::string& prefix) -> std::optional<NonFiniteFinding> {
    if (count == 0 || backend_.all_finite(count, tensor.data())) return std::nullopt;
    const auto host = to_host(tensor, count);
    auto finding = find_nonfinite(layout, host.data(), ScanOrder::Forward);
    if (finding) finding->parameter = prefix + finding->parameter;
    return finding;
  };
  if (auto finding = scan(registry.parameters(), registry.parameter_count(), registry.parameters_info(), ""))
    return finding;
  if (auto finding = scan(registry.buffers(), registry.buffer_count(), registry.buffers_info(), ""))
    return finding;
  for (const Tensor* state : optimizer_states)
    if (auto finding =
            scan(*state, registry.parameter_count(), registry.parameters_info(), "optimizer state of "))
      return finding;
  return std::nullopt;
}

}  // namespace phalanx::train
