// The presets built to match torchvision's models (mobilenet_v2, mobilenet_v3_small,
// efficientnet_b0, resnext50_32x4d, and the ResNets before them): every parameter and buffer name
// and shape against what torchvision itself declares (tests/nn/data/torchvision_parameters.txt,
// written by tests/nn/torchvision_parameters.py), the parameter counts torchvision states, other
// class counts and image sizes, and the stochastic depth EfficientNet-B0 gives each block.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "phalanx/nn/model_plan.hpp"

namespace phalanx::nn {
namespace {

struct Declared {
  std::map<std::string, std::string> parameters, buffers;  // name -> dims joined by 'x'
};

std::string dims_text(const Shape& shape) {
  std::string text;
  for (std::size_t axis = 0; axis < shape.rank(); ++axis)
    text += (axis ? "x" : "") + std::to_string(shape[axis]);
  return text;
}

std::map<std::string, Declared> torchvision_declarations() {
  std::ifstream file(std::string(PHALANX_SOURCE_DIR) + "/tests/nn/data/torchvision_parameters.txt");
  EXPECT_TRUE(file) << "tests/nn/data/torchvision_parameters.txt is missing";
  std::map<std::string, Declared> models;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string model, kind, name, dims;
    fields >> model >> kind >> name >> dims;
    (kind == "parameter" ? models[model].parameters : models[model].buffers)[name] = dims;
  }
  return models;
}

Declared phalanx_declarations(const ModelPlan& plan) {
  Declared declared;
  for (const auto& info : plan.registry().parameters_info())
    declared.parameters[info.name] = dims_text(info.shape);
  for (const auto& info : plan.registry().buffers_info()) declared.buffers[info.name] = dims_text(info.shape);
  return declared;
}

ModelPlan plan_of(const std::string& preset, Shape sample, int classes) {
  config::ModelConfig config;
  config.preset = preset;
  return ModelPlan(config, sample, classes);
}

void expect_same(const std::map<std::string, std::string>& phalanx,
                 const std::map<std::string, std::string>& torch, const std::string& what) {
  for (const auto& [name, dims] : torch) {
    const auto found = phalanx.find(name);
    if (found == phalanx.end()) {
      ADD_FAILURE() << what << ": torchvision has " << name << " [" << dims << "], phalanx has not";
      continue;
    }
    EXPECT_EQ(found->second, dims) << what << ": " << name;
  }
  for (const auto& [name, dims] : phalanx)
    if (!torch.count(name))
      ADD_FAILURE() << what << ": phalanx has " << name << " [" << dims << "], torchvision has not";
}

class TorchvisionPreset : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchvisionPreset, DeclaresTorchvisionsNamesAndShapes) {
  const std::string preset = GetParam();
  const auto models = torchvision_declarations();
  ASSERT_TRUE(models.count(preset)) << preset << " is not in the torchvision file";
  const Declared torch = models.at(preset);
  ASSERT_FALSE(torch.parameters.empty());
  const ModelPlan plan = plan_of(preset, Shape{224, 224, 3}, 1000);
  const Declared ours = phalanx_declarations(plan);
  expect_same(ours.parameters, torch.parameters, preset + " parameters");
  expect_same(ours.buffers, torch.buffers, preset + " buffers");
}

INSTANTIATE_TEST_SUITE_P(Presets, TorchvisionPreset,
                         ::testing::Values("mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
                                           "resnext50_32x4d", "resnet50", "resnet18"));

TEST(TorchvisionPresetCount, ParameterCountsAreTorchvisions) {
  // sum(p.numel() for p in torchvision.models.<name>().parameters()), torchvision 0.29.
  const std::pair<const char*, std::int64_t> expected[] = {{"mobilenet_v2", 3504872},
                                                           {"mobilenet_v3_small", 2542856},
                                                           {"efficientnet_b0", 5288548},
                                                           {"resnext50_32x4d", 25028904}};
  for (const auto& [preset, count] : expected)
    EXPECT_EQ(plan_of(preset, Shape{64, 64, 3}, 1000).size().parameters, count) << preset;
}

TEST(TorchvisionPresetShapes, OtherClassCountsImageSizesAndChannels) {
  // Ten classes on 32x32 grey images: the first conv takes one channel, the last linear gives ten;
  // the mobile networks take any square size (stride-2 convs of padded 1x1 inputs stay 1x1; global
  // average pooling takes square inputs only).
  for (const char* preset : {"mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0"}) {
    for (const Shape& sample : {Shape{32, 32, 1}, Shape{7, 7, 3}}) {
      const ModelPlan plan = plan_of(preset, sample, 10);
      const Declared ours = phalanx_declarations(plan);
      const std::string stem = std::string(preset) == "mobilenet_v3_small" ? "16x" : "32x";
      EXPECT_EQ(ours.parameters.at("features/0/0/weight"), stem + std::to_string(sample[2]) + "x3x3")
          << preset;
      const std::string last = std::string(preset) == "mobilenet_v3_small" ? "classifier/3" : "classifier/1";
      EXPECT_EQ(ours.parameters.at(last + "/bias"), "10") << preset;
    }
  }
  const ModelPlan resnext = plan_of("resnext50_32x4d", Shape{32, 32, 3}, 10);
  EXPECT_EQ(phalanx_declarations(resnext).parameters.at("fc/weight"), "10x2048");
}

TEST(TorchvisionPresetShapes, EfficientNetB0StochasticDepthGrowsWithTheBlockIndex) {
  const auto layers = preset_layers("efficientnet_b0", Shape{224, 224, 3}, 1000);
  std::map<std::string, float> probabilities;
  for (const auto& layer : layers)
    if (layer.type == "residual") probabilities[layer.name] = layer.stochastic_depth;
  // torchvision: 0.2 * block index / 16 on the blocks with a residual sum; the first block of each
  // stage changes shape and has none.
  EXPECT_FALSE(probabilities.count("features/1/0"));
  EXPECT_FALSE(probabilities.count("features/2/0"));
  EXPECT_FLOAT_EQ(probabilities.at("features/2/1"), static_cast<float>(0.2 * 2 / 16));
  EXPECT_FLOAT_EQ(probabilities.at("features/6/3"), static_cast<float>(0.2 * 14 / 16));
  EXPECT_EQ(probabilities.size(), 16u - 7u);
}

}  // namespace
}  // namespace phalanx::nn
