// LayerCosts: what the scaling model needs of a model, layer by layer in forward order: where each
// layer's gradients lie in the flat gradient buffer (so the bucket plan says when backward has made a
// bucket whole) and its forward multiply-adds (to share a measured step's compute among the layers).
// From a config's model (a ModelPlan: the real parameter layout, alignment included) or from a layer
// table file, for models phalanx has no preset of.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/nn/model_plan.hpp"

namespace phalanx::scaling {

struct LayerCost {
  std::string name;
  std::int64_t gradient_offset = 0;    // first element in the flat gradient buffer
  std::int64_t gradient_elements = 0;  // 0: a layer without parameters
  std::int64_t multiply_adds = 0;      // one sample's forward
};

// Multiply-adds per sample, per layer and summed over a model, that a layer table or profile may
// give: 2^50, far from int64's end and from 2^53, where a double would round them.
inline constexpr std::int64_t most_multiply_adds = std::int64_t{1} << 50;

struct LayerCosts {
  std::string model;                   // the preset's name, or what the table calls it
  std::vector<LayerCost> layers;       // forward order
  std::int64_t parameters = 0;         // the model's parameter count
  std::int64_t gradient_elements = 0;  // the flat buffer's length (what the all-reduce sums)

  std::int64_t multiply_adds() const;
};

LayerCosts layer_costs(const nn::ModelPlan& plan, const std::string& model_name);
// A layer table (docs/SCALING.md): {"model": NAME, "layers": [{"name", "parameters", "multiply_adds"}]}
// in forward order; gradients lie back to back. Throws InvalidInput naming the file and the field.
LayerCosts read_layer_table(const std::string& path);

}  // namespace phalanx::scaling
