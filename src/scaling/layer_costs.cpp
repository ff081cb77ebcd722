// A model's layers as the scaling model sees them: gradient ranges from the parameter registry,
// multiply-adds from the configured layers, or both from a layer table file.
#include "phalanx/scaling/layer_costs.hpp"

#include <algorithm>
#include <climits>

#include "json_fields.hpp"

namespace phalanx::scaling {
namespace {

// A layer table's parameters, per layer and summed over the model: up to 2^40 (a trillion, beyond
// any data-parallel CNN; the bucket plan and the timeline stay small). The sums stay far from
// int64's end, and from 2^53, where a double would round them.
constexpr std::int64_t most_parameters = std::int64_t{1} << 40;

}  // namespace

std::int64_t LayerCosts::multiply_adds() const {
  std::int64_t total = 0;
  for (const LayerCost& layer : layers) total += layer.multiply_adds;
  return total;
}

LayerCosts layer_costs(const nn::ModelPlan& plan, const std::string& model_name) {
  std::vector<const nn::Layer*> leaves;
  plan.network().collect_leaves(leaves);
  LayerCosts costs;
  costs.model = model_name;
  costs.parameters = plan.size().parameters;
  costs.gradient_elements = plan.registry().parameter_count();
  // A layer's gradients run from its first offset to the next layer's (alignment padding counts: the
  // all-reduce sums it too).
  std::vector<std::int64_t> offsets;
  for (const nn::Layer* leaf : leaves)
    if (leaf->first_parameter_offset() != INT64_MAX) offsets.push_back(leaf->first_parameter_offset());
  std::sort(offsets.begin(), offsets.end());
  for (const nn::Layer* leaf : leaves) {
    LayerCost cost{leaf->name(), 0, 0, leaf->sample_multiply_adds()};
    if (const std::int64_t offset = leaf->first_parameter_offset(); offset != INT64_MAX) {
      const auto next = std::upper_bound(offsets.begin(), offsets.end(), offset);
      cost.gradient_offset = offset;
      cost.gradient_elements = (next == offsets.end() ? costs.gradient_elements : *next) - offset;
    }
    costs.layers.push_back(std::move(cost));
  }
  return costs;
}

LayerCosts read_layer_table(const std::string& path) {
  const nlohmann::json json = read_json_file(path, "layer table");
  LayerCosts costs;
  std::int64_t multiply_adds = 0;
  costs.model = optional_text(json, "model", path, "");
  PHALANX_REQUIRE_INPUT(!costs.model.empty(), path, ": field 'model' is missing (the model's name)");
  const auto layers = json.find("layers");
  PHALANX_REQUIRE_INPUT(layers != json.end() && layers->is_array() && !layers->empty(), path,
                        ": field 'layers' is missing or not a non-empty list");
  for (std::size_t index = 0; index < layers->size(); ++index) {
    const nlohmann::json& layer = (*layers)[index];
    const std::string where = "layers[" + std::to_string(index) + "].";
    PHALANX_REQUIRE_INPUT(layer.is_object(), path, ": field '", where, "' must be an object");
    LayerCost cost;
    cost.name = optional_text(layer, "name", path, where);
    PHALANX_REQUIRE_INPUT(!cost.name.empty(), path, ": field '", where, "name' is missing");
    cost.gradient_elements = required_count(layer, "parameters", path, where, 0, most_parameters);
    cost.multiply_adds = required_count(layer, "multiply_adds", path, where, 0, most_multiply_adds);
    cost.gradient_offset = costs.gradient_elements;
    costs.gradient_elements += cost.gradient_elements;
    multiply_adds += cost.multiply_adds;
    PHALANX_REQUIRE_INPUT(costs.gradient_elements <= most_parameters, path, ": field '", where,
                          "parameters' brings the model's parameters to ", costs.gradient_elements, ", over ",
                          most_parameters);
    PHALANX_REQUIRE_INPUT(multiply_adds <= most_multiply_adds, path, ": field '", where,
                          "multiply_adds' brings the model's multiply-adds to ", multiply_adds, ", over ",
                          most_multiply_adds);
    costs.layers.push_back(std::move(cost));
  }
  costs.parameters = costs.gradient_elements;
  PHALANX_REQUIRE_INPUT(costs.multiply_adds() > 0, path, ": no layer has 'multiply_adds' > 0");
  return costs;
}

}  // namespace phalanx::scaling
