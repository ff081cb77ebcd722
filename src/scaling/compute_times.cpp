// Per-layer compute times for the scaling model: from one device's throughput or from a profile.
#include "phalanx/scaling/compute_times.hpp"

#include <cstdio>
#include <map>
#include <numeric>

#include "json_fields.hpp"

namespace phalanx::scaling {

double ComputeTimes::forward_seconds() const {
  return std::accumulate(forward.begin(), forward.end(), 0.0);
}
double ComputeTimes::backward_seconds() const {
  return std::accumulate(backward.begin(), backward.end(), 0.0);
}

ComputeTimes compute_from_throughput(const LayerCosts& costs, double images_per_second, int local_batch) {
  PHALANX_REQUIRE_INPUT(images_per_second > 0, "--images-per-second must be > 0 (got ", images_per_second,
                        ")");
  PHALANX_REQUIRE_INPUT(local_batch >= 1, "the local batch must be >= 1 (got ", local_batch, ")");
  const double total = costs.multiply_adds();
  PHALANX_REQUIRE_INPUT(total > 0, "model ", costs.model,
                        " has no convolution or linear layer to share the time by");
  const double step = local_batch / images_per_second;
  ComputeTimes times;
  for (const LayerCost& layer : costs.layers) {
    const double share = layer.multiply_adds / total;
    times.forward.push_back(step / 3 * share);
    times.backward.push_back(step * 2 / 3 * share);
  }
  char text[96];
  std::snprintf(text, sizeof text, "one device at %g images/s, shared among the layers by multiply-adds",
                images_per_second);
  times.source = text;
  return times;
}

ComputeTimes compute_from_profile(const LayerCosts& costs, const std::string& path, int local_batch) {
  const nlohmann::json json = read_json_file(path, "profile");
  const double profile_batch = required_number(json, "batch_size", path, "");
  const auto layers = json.find("layers");
  PHALANX_REQUIRE_INPUT(layers != json.end() && layers->is_array(), path,
                        ": field 'layers' is missing or not a list");
  std::map<std::string, std::pair<double, double>> measured;
  for (std::size_t index = 0; index < layers->size(); ++index) {
    const nlohmann::json& layer = (*layers)[index];
    const std::string where = "layers[" + std::to_string(index) + "].";
    PHALANX_REQUIRE_INPUT(layer.is_object(), path, ": field '", where, "' must be an object");
    const std::string name = optional_text(layer, "name", path, where);
    PHALANX_REQUIRE_INPUT(!name.empty(), path, ": field '", where, "name' is missing");
    measured[name] = {required_number(layer, "forward_seconds", path, where, false),
                      required_number(layer, "backward_seconds", path, where, false)};
  }
  const double scale = local_batch / profile_batch;
  ComputeTimes times;
  for (const LayerCost& layer : costs.layers) {
    const auto found = measured.find(layer.name);
    PHALANX_REQUIRE_INPUT(found != measured.end(), path, ": field 'layers' has no entry named '", layer.name,
                          "' (a layer of model ", costs.model, "; was the profile taken of another model?)");
    times.forward.push_back(found->second.first * scale);
    times.backward.push_back(found->second.second * scale);
  }
  times.source = "profile " + path;
  return times;
}

}  // namespace phalanx::scaling
