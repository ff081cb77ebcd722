// Conversion of explicit layer lists (model.layers and the main/shortcut paths of residual
// blocks, nested to any depth). Each layer accepts only the keys of its type, so a key meant
// for another type ("out_features" on a conv) is reported instead of silently ignored.
#include <algorithm>
#include <map>

#include "conversion.hpp"
#include "schema.hpp"

namespace phalanx::config {
namespace {

// At most this many layers in one model, counting those inside residual blocks. YAML aliases let
// a few lines name a block that repeats itself a billion times (an "alias bomb"); without a bound
// it would be built layer by layer until memory ran out.
constexpr std::size_t largest_layer_count = 10000;

// Residual blocks nest at most this deep. A YAML alias may name the block it sits in
// (`&b {type: residual, main: [*b]}`): that block contains itself forever, and reading it would
// recurse until the stack overflowed before the layer count stopped it.
constexpr int deepest_nesting = 64;

struct LayerBudget {
  std::size_t used = 0;
  int depth = 0;
};

std::vector<LayerSpec> read_layers(const Reader& reader, const YAML::Node& list, const std::string& key,
                                   LayerBudget& budget);

bool applies(const std::string& type, const std::string& key) {
  const std::vector<std::string>& keys = schema::layer_keys(type);
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// A field that the type needs and has no sensible default for (out_channels, out_features).
int required_int(const Reader& reader, const YAML::Node& layer, const std::string& key,
                 const std::string& field, const std::string& type) {
  const YAML::Node value = layer[field];
  if (!value.IsDefined()) {
    reader.fail(key + "." + field, key + "." + field + " is required for a " + type + " layer", layer);
  }
  return reader.int_value(value, key + "." + field, 1);
}

// Other names of the activations (Keras, TensorFlow, papers), which no edit distance connects to
// the torch.nn names phalanx uses.
const std::map<std::string, std::string>& activation_synonyms() {
  static const std::map<std::string, std::string> synonyms = {
      {"swish", "silu"},           {"hard_swish", "hardswish"},
      {"hswish", "hardswish"},     {"hard_sigmoid", "hardsigmoid"},
      {"hsigmoid", "hardsigmoid"}, {"logistic", "sigmoid"}};
  return synonyms;
}

LayerSpec read_layer(const Reader& reader, const YAML::Node& layer, const std::string& key, LayerBudget& budget) {
  if (++budget.used > largest_layer_count) {
    reader.fail(key, key + ": the model has more than " + std::to_string(largest_layer_count) +
                         " layers (counting those inside residual blocks; a YAML alias repeats all it names)",
                layer);
  }
  if (!layer.IsMap()) {
    reader.fail(key, key + ": expected a layer (a mapping with a 'type'), got " + describe(layer), layer);
  }
  const YAML::Node type_node = layer["type"];
  if (!type_node.IsDefined()) {
    reader.fail(key + ".type", key + ".type is required (one of: " + join(schema::layer_types(), ", ") + ")",
                layer);
  }
  if (type_node.IsScalar()) {
    const auto synonym = activation_synonyms().find(type_node.Scalar());
    if (synonym != activation_synonyms().end())
      reader.fail(
          key + ".type",
          key + ".type: unknown value '" + synonym->first + "' (did you mean '" + synonym->second + "'?)",
          type_node);
  }
  LayerSpec spec;
  spec.type = reader.choice(type_node, key + ".type", schema::layer_types());
  for (auto entry = layer.begin(); entry != layer.end(); ++entry) {
    const YAML::Node field = entry->first;  // a copy: the iterator hands out a temporary
    if (!field.IsScalar()) continue;        // check_keys below reports it
    const std::vector<std::string>& every_field = schema::all_layer_keys();
    const bool known = std::find(every_field.begin(), every_field.end(), field.Scalar()) != every_field.end();
    if (known && !applies(spec.type, field.Scalar())) {
      const std::string dotted = key + "." + field.Scalar();
      reader.fail(dotted,
                  "'" + dotted + "' does not apply to a " + spec.type +
                      " layer (it takes: " + join(schema::layer_keys(spec.type), ", ") + ")",
                  field);
    }
  }
  reader.check_keys(layer, key, schema::layer_keys(spec.type));

  if (const YAML::Node value = layer["name"]; value.IsDefined()) {
    spec.name = reader.text(value, key + ".name");
    // Names become HDF5 group names in checkpoints, where '/' would nest groups.
    if (spec.name.find('/') != std::string::npos) {
      reader.fail(key + ".name", key + ".name must not contain '/' (got '" + spec.name + "')", value);
    }
  }
  if (spec.type == "conv" || spec.type == "inverted_residual")
    spec.out_channels = required_int(reader, layer, key, "out_channels", spec.type);
  if (spec.type == "squeeze_excitation")
    spec.squeeze_channels = required_int(reader, layer, key, "squeeze_channels", spec.type);
  // torchvision's MobileNetV2 blocks use ReLU6; a squeeze-and-excitation's fc1 ReLU and its scale a sigmoid.
  if (spec.type == "inverted_residual") spec.activation = "relu6";
  if (const YAML::Node value = layer["activation"]; value.IsDefined()) {
    spec.activation = reader.choice(value, key + ".activation", schema::activation_types());
  }
  if (const YAML::Node value = layer["scale_activation"]; value.IsDefined()) {
    spec.scale_activation = reader.choice(value, key + ".scale_activation", schema::activation_types());
  }
  if (const YAML::Node value = layer["stochastic_depth"]; value.IsDefined()) {
    spec.stochastic_depth = reader.real32(value, key + ".stochastic_depth", Bound{0.0, true}, Bound{1.0, false});
  }
  if (const YAML::Node value = layer["expand_ratio"]; value.IsDefined()) {
    spec.expand_ratio = reader.real32(value, key + ".expand_ratio", Bound{1.0, true}, std::nullopt);
  }
  if (const YAML::Node value = layer["squeeze_excitation"]; value.IsDefined()) {
    spec.squeeze_excitation =
        reader.real32(value, key + ".squeeze_excitation", Bound{0.0, true}, Bound{1.0, true});
  }
  if (spec.type == "linear") spec.out_features = required_int(reader, layer, key, "out_features", spec.type);
  // PyTorch's pools default the stride to the kernel; 0 says exactly that (see LayerSpec).
  if (schema::is_pool(spec.type)) spec.stride = 0;
  if (const YAML::Node value = layer["kernel"]; value.IsDefined()) {
    spec.kernel = reader.int_value(value, key + ".kernel", 1);
  }
  if (const YAML::Node value = layer["stride"]; value.IsDefined()) {
    spec.stride = reader.int_value(value, key + ".stride", schema::is_pool(spec.type) ? 0 : 1);
  }
  if (const YAML::Node value = layer["padding"]; value.IsDefined()) {
    spec.padding = reader.int_value(value, key + ".padding", 0);
  }
  // Whether the channels divide by `groups` and the dilated kernel fits is known only once the
  // layer meets its input (nn::Convolution::configure).
  if (const YAML::Node value = layer["groups"]; value.IsDefined()) {
    spec.groups = reader.int_value(value, key + ".groups", 1);
  }
  if (const YAML::Node value = layer["dilation"]; value.IsDefined()) {
    spec.dilation = reader.int_value(value, key + ".dilation", 1);
  }
  if (const YAML::Node value = layer["bias"]; value.IsDefined())
    spec.bias = reader.boolean(value, key + ".bias");
  if (const YAML::Node value = layer["probability"]; value.IsDefined()) {
    spec.probability = reader.real32(value, key + ".probability", Bound{0.0, true}, Bound{1.0, false});
  }
  if (const YAML::Node value = layer["approximate"]; value.IsDefined()) {
    spec.approximate = reader.choice(value, key + ".approximate", {"none", "tanh"});
  }
  if (spec.type == "residual") {
    if (++budget.depth > deepest_nesting) {
      reader.fail(key, key + ": residual blocks nested more than " + std::to_string(deepest_nesting) +
                           " deep (does a YAML alias name the block it is in?)",
                  layer);
    }
    spec.main = read_layers(reader, layer["main"], key + ".main", budget);
    if (spec.main.empty()) {
      reader.fail(key + ".main", key + ".main: a residual layer needs a non-empty 'main' list of layers",
                  layer);
    }
    spec.shortcut = read_layers(reader, layer["shortcut"], key + ".shortcut", budget);
    if (const YAML::Node value = layer["relu_after"]; value.IsDefined()) {
      spec.relu_after = reader.boolean(value, key + ".relu_after");
    }
    --budget.depth;
  }
  return spec;
}

std::vector<LayerSpec> read_layers(const Reader& reader, const YAML::Node& list, const std::string& key,
                                   LayerBudget& budget) {
  if (!list.IsDefined() || list.IsNull()) return {};
  if (!list.IsSequence()) reader.fail(key, key + ": expected a list of layers, got " + describe(list), list);
  std::vector<LayerSpec> layers;
  // Two layers of one list with the same name would write the same checkpoint parameters.
  std::map<std::string, std::string> named;
  for (std::size_t index = 0; index < list.size(); ++index) {
    const std::string entry_key = key + "[" + std::to_string(index) + "]";
    LayerSpec layer = read_layer(reader, list[index], entry_key, budget);
    if (!layer.name.empty()) {
      const auto [previous, inserted] = named.emplace(layer.name, entry_key);
      if (!inserted) {
        reader.fail(entry_key + ".name",
                    entry_key + ".name: duplicate layer name '" + layer.name + "' (also used by " +
                        previous->second + ")",
                    list[index]["name"]);
      }
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

}  // namespace

std::vector<LayerSpec> read_layer_list(const Reader& reader, const YAML::Node& list, const std::string& key) {
  LayerBudget budget;
  return read_layers(reader, list, key, budget);
}

}  // namespace phalanx::config
