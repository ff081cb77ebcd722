// Published GPUs for the scaling model: datasheet peaks and the single-device throughputs papers
// report, turned into one device's images/s for any model by its multiply-adds.
#include "phalanx/scaling/device_preset.hpp"

#include <cstdio>

#include "phalanx/core/error.hpp"

namespace phalanx::scaling {
namespace {

constexpr double tera = 1e12;
// ResNet-50's forward multiply-adds per 224x224 image (torchvision; bench/layer_tables/resnet50.json).
constexpr std::int64_t resnet50_multiply_adds = 4'089'184'256;

const std::vector<DevicePreset>& presets() {
  static const std::vector<DevicePreset> all = {
      {"p100", 10.6 * tera, 0, "", 0, 0, "NVIDIA Tesla P100 SXM2 datasheet: 10.6 TFLOPS fp32"},
      {"v100", 15.7 * tera, 329, "resnet50", resnet50_multiply_adds, 32,
       "NVIDIA Tesla V100 SXM2 datasheet: 15.7 TFLOPS fp32; ResNet-50 at 329 images/s, fp32, batch 32, one "
       "GPU without DDP (PyTorch DDP benchmark README)"},
      {"a100", 19.5 * tera, 0, "", 0, 0, "NVIDIA A100 SXM datasheet: 19.5 TFLOPS fp32"},
      {"h100", 67 * tera, 0, "", 0, 0, "NVIDIA H100 SXM datasheet: 67 TFLOPS fp32"},
      {"h200", 67 * tera, 0, "", 0, 0, "NVIDIA H200 SXM datasheet: 67 TFLOPS fp32"},
  };
  return all;
}

// The share of its fp32 peak the V100 reaches in the reference run: training arithmetic is about
// three forward passes (forward, input gradients, weight gradients), 2 FLOP per multiply-add.
double reference_utilisation() {
  const DevicePreset& v100 = presets()[1];
  return v100.reference_images_per_second * 6.0 * static_cast<double>(v100.reference_multiply_adds) /
         v100.peak_fp32;
}

}  // namespace

std::vector<std::string> device_preset_names() {
  std::vector<std::string> names;
  for (const DevicePreset& device : presets()) names.push_back(device.name);
  return names;
}

const DevicePreset& device_preset(const std::string& name) {
  for (const DevicePreset& device : presets())
    if (device.name == name) return device;
  std::string known;
  for (const std::string& preset : device_preset_names()) known += (known.empty() ? "" : ", ") + preset;
  PHALANX_REQUIRE_INPUT(false, "--device: unknown device '", name, "' (known: ", known, ")");
  return presets().front();
}

double device_images_per_second(const DevicePreset& device, std::int64_t multiply_adds, std::string* how) {
  PHALANX_REQUIRE_INPUT(multiply_adds > 0, "the model has no multiply-adds to time");
  char text[200];
  if (device.reference_images_per_second > 0) {
    const double rate = device.reference_images_per_second *
                        static_cast<double>(device.reference_multiply_adds) / multiply_adds;
    std::snprintf(text, sizeof text, "%s: %s at %g images/s, scaled by multiply-adds", device.name.c_str(),
                  device.reference_model.c_str(), device.reference_images_per_second);
    if (how) *how = text;
    return rate;
  }
  const double utilisation = reference_utilisation();
  std::snprintf(text, sizeof text,
                "%s: %.0f%% of its fp32 peak (%g TFLOPS), the share the V100 reference reaches",
                device.name.c_str(), 100 * utilisation, device.peak_fp32 / tera);
  if (how) *how = text;
  return utilisation * device.peak_fp32 / (6.0 * static_cast<double>(multiply_adds));
}

}  // namespace phalanx::scaling
