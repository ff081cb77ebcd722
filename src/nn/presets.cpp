// Model presets: the layer lists of well-known networks, named as their usual PyTorch modules
// name their parameters, so checkpoints load into the equivalent torch.nn model.
#include "layer_specs.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/nn/model.hpp"
#include "preset_families.hpp"

namespace phalanx::nn {
namespace {

// torchvision-style BasicBlock, with a 1x1 conv + BN projection shortcut when the shape changes,
// named `shortcut` in the CIFAR ResNets and `downsample` as torchvision's ImageNet ResNets name it.
config::LayerSpec basic_block(const std::string& name, int in_channels, int out_channels, int stride,
                              const std::string& shortcut_name = "shortcut") {
  config::LayerSpec block = layer_spec("residual", name);
  block.main = {conv_spec(name + "/conv1", out_channels, 3, stride, 1, false),
                layer_spec("batch_norm", name + "/bn1"), layer_spec("relu", name + "/relu1"),
                conv_spec(name + "/conv2", out_channels, 3, 1, 1, false),
                layer_spec("batch_norm", name + "/bn2")};
  if (stride != 1 || in_channels != out_channels)
    block.shortcut = {conv_spec(name + "/" + shortcut_name + "/0", out_channels, 1, stride, 0, false),
                      layer_spec("batch_norm", name + "/" + shortcut_name + "/1")};
  block.relu_after = true;
  return block;
}

// torchvision's Bottleneck (ResNet v1.5: the stride sits on the 3x3 conv), expansion 4, with the
// 1x1 conv + BN projection named `downsample` as torchvision names it. `planes` sets the output
// (4 x planes); the 3x3 conv has `groups` groups of `width_per_group * planes / 64` channels each
// (ResNet: 1 group of 64 per 64 planes; ResNeXt-50 32x4d: 32 groups of 4).
config::LayerSpec bottleneck_block(const std::string& name, int in_channels, int planes, int stride,
                                   int groups = 1, int width_per_group = 64) {
  const int out_channels = planes * 4;
  const int width = planes * width_per_group / 64 * groups;
  config::LayerSpec block = layer_spec("residual", name);
  block.main = {conv_spec(name + "/conv1", width, 1, 1, 0, false),
                layer_spec("batch_norm", name + "/bn1"),
                layer_spec("relu", name + "/relu1"),
                conv_spec(name + "/conv2", width, 3, stride, 1, false, groups),
                layer_spec("batch_norm", name + "/bn2"),
                layer_spec("relu", name + "/relu2"),
                conv_spec(name + "/conv3", out_channels, 1, 1, 0, false),
                layer_spec("batch_norm", name + "/bn3")};
  if (stride != 1 || in_channels != out_channels)
    block.shortcut = {conv_spec(name + "/downsample/0", out_channels, 1, stride, 0, false),
                      layer_spec("batch_norm", name + "/downsample/1")};
  block.relu_after = true;
  return block;
}

// The stem of torchvision's ImageNet ResNets: 7x7/2 conv, BN, ReLU, 3x3/2 max pool.
std::vector<config::LayerSpec> imagenet_stem() {
  config::LayerSpec pool = max_pool_spec("maxpool", 3);
  pool.stride = 2;
  pool.padding = 1;
  return {conv_spec("conv1", 64, 7, 2, 3, false), layer_spec("batch_norm", "bn1"), layer_spec("relu", "relu"),
          pool};
}

}  // namespace

std::vector<config::LayerSpec> preset_layers(const std::string& preset, const Shape& sample_shape,
                                             int classes) {
  const auto height = sample_shape[0], width = sample_shape[1], channels = sample_shape[2];
  if (preset == "fmnist_cnn") {
    // Exactly the network users compare with PyTorch, so its input is fixed at 28x28x1.
    PHALANX_REQUIRE_INPUT(height == 28 && width == 28 && channels == 1,
                          "model.preset fmnist_cnn takes 28x28x1 images, but the data has ", height, "x",
                          width, "x", channels, " (use an explicit model.layers list for other shapes)");
    return {conv_spec("conv1", 32, 3, 1, 1, true),
            layer_spec("relu", "relu1"),
            max_pool_spec("pool1", 2),
            conv_spec("conv2", 64, 3, 1, 1, true),
            layer_spec("relu", "relu2"),
            max_pool_spec("pool2", 2),
            layer_spec("flatten", "flatten"),
            linear_spec("fc1", 128),
            layer_spec("relu", "relu3"),
            linear_spec("fc2", classes)};
  }
  if (preset == "lenet5") {
    // LeNet-5 on 28x28 (padding 2 gives the original 32x32 field) or 32x32 inputs.
    PHALANX_REQUIRE_INPUT(height == width && (height == 28 || height == 32),
                          "model.preset lenet5 takes 28x28 or 32x32 images, but the data has ", height, "x",
                          width);
    return {conv_spec("conv1", 6, 5, 1, height == 28 ? 2 : 0, true),
            layer_spec("relu", "relu1"),
            max_pool_spec("pool1", 2),
            conv_spec("conv2", 16, 5, 1, 0, true),
            layer_spec("relu", "relu2"),
            max_pool_spec("pool2", 2),
            layer_spec("flatten", "flatten"),
            linear_spec("fc1", 120),
            layer_spec("relu", "relu3"),
            linear_spec("fc2", 84),
            layer_spec("relu", "relu4"),
            linear_spec("fc3", classes)};
  }
  if (preset == "resnet20") {
    // He et al. 2016, CIFAR variant: 3 stages of 3 basic blocks (16, 32, 64 channels).
    PHALANX_REQUIRE_INPUT(height >= 8 && width >= 8,
                          "model.preset resnet20 needs images of at least 8x8, the data has ", height, "x",
                          width);
    std::vector<config::LayerSpec> layers = {conv_spec("conv1", 16, 3, 1, 1, false),
                                             layer_spec("batch_norm", "bn1"), layer_spec("relu", "relu")};
    int in_channels = 16;
    const int stage_channels[3] = {16, 32, 64};
    for (int stage = 0; stage < 3; ++stage) {
      for (int block = 0; block < 3; ++block) {
        const int stride = (stage > 0 && block == 0) ? 2 : 1;
        layers.push_back(basic_block("layer" + std::to_string(stage + 1) + "/" + std::to_string(block),
                                     in_channels, stage_channels[stage], stride));
        in_channels = stage_channels[stage];
      }
    }
    layers.push_back(layer_spec("global_avg_pool", "avgpool"));
    layers.push_back(linear_spec("fc", classes));
    return layers;
  }
  if (preset == "resnet18") {
    // torchvision's resnet18 (ImageNet stem: 7x7/2 conv, 3x3/2 max pool; 2, 2, 2, 2 basic blocks),
    // 11.7M parameters at 1000 classes; parameter names match its state_dict.
    PHALANX_REQUIRE_INPUT(height >= 32 && width >= 32,
                          "model.preset resnet18 needs images of at least 32x32, the data has ", height, "x",
                          width);
    std::vector<config::LayerSpec> layers = imagenet_stem();
    int in_channels = 64;
    const int stage_channels[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      for (int block = 0; block < 2; ++block) {
        const int stride = (stage > 0 && block == 0) ? 2 : 1;
        layers.push_back(basic_block("layer" + std::to_string(stage + 1) + "/" + std::to_string(block),
                                     in_channels, stage_channels[stage], stride, "downsample"));
        in_channels = stage_channels[stage];
      }
    }
    layers.push_back(layer_spec("global_avg_pool", "avgpool"));
    layers.push_back(linear_spec("fc", classes));
    return layers;
  }
  if (preset == "resnet50" || preset == "resnext50_32x4d") {
    // torchvision's resnet50 (ImageNet stem: 7x7/2 conv, 3x3/2 max pool; 3, 4, 6, 3 bottlenecks),
    // 25.6M parameters at 1000 classes, and resnext50_32x4d (its 3x3 convs in 32 groups of 4
    // channels per 64 planes), 25.0M; parameter names match their state_dicts.
    PHALANX_REQUIRE_INPUT(height >= 32 && width >= 32, "model.preset ", preset,
                          " needs images of at least 32x32, the data has ", height, "x", width);
    const bool grouped = preset == "resnext50_32x4d";
    std::vector<config::LayerSpec> layers = imagenet_stem();
    int in_channels = 64;
    const int stage_widths[4] = {64, 128, 256, 512};
    const int stage_blocks[4] = {3, 4, 6, 3};
    for (int stage = 0; stage < 4; ++stage) {
      for (int block = 0; block < stage_blocks[stage]; ++block) {
        const int stride = (stage > 0 && block == 0) ? 2 : 1;
        layers.push_back(bottleneck_block("layer" + std::to_string(stage + 1) + "/" + std::to_string(block),
                                          in_channels, stage_widths[stage], stride, grouped ? 32 : 1,
                                          grouped ? 4 : 64));
        in_channels = stage_widths[stage] * 4;
      }
    }
    layers.push_back(layer_spec("global_avg_pool", "avgpool"));
    layers.push_back(linear_spec("fc", classes));
    return layers;
  }
  // torchvision's mobile and efficient networks take any image size and channel count.
  if (preset == "mobilenet_v2") return mobilenet_v2_layers(classes);
  if (preset == "mobilenet_v3_small") return mobilenet_v3_small_layers(classes);
  if (preset == "efficientnet_b0") return efficientnet_b0_layers(classes);
  throw_input_error(
      "model.preset: unknown preset '" + preset +
      "' (known: fmnist_cnn, lenet5, resnet20, resnet18, resnet50, resnext50_32x4d, mobilenet_v2, "
      "mobilenet_v3_small, efficientnet_b0)");
}

}  // namespace phalanx::nn
