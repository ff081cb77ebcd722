// DevicePreset: a published GPU's peak arithmetic rates (datasheets) and, where a paper reports one,
// its measured single-device training throughput on a reference model. A prediction without a
// profile or a measured images/s takes its compute time from these: the reference throughput scaled
// by the models' multiply-adds, or the peak at the utilisation the V100 reference reaches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace phalanx::scaling {

struct DevicePreset {
  std::string name;
  double peak_fp32 = 0;  // FLOP/s, dense
  // A published single-device training throughput: images/s of `reference_model` (forward
  // multiply-adds per image `reference_multiply_adds`) at `reference_batch`, in fp32; 0: none.
  double reference_images_per_second = 0;
  std::string reference_model;
  std::int64_t reference_multiply_adds = 0;
  int reference_batch = 0;
  std::string source;
};

std::vector<std::string> device_preset_names();
// Throws InvalidInput listing the presets for an unknown name.
const DevicePreset& device_preset(const std::string& name);

// One device's fp32 training images/s for a model of `multiply_adds` per image: the device's own
// reference scaled by multiply-adds where it has one; else its fp32 peak at the share of peak the
// V100 reference reaches (3 x 2 x multiply-adds of training arithmetic per image). `how` says which,
// for the printout. Only fp32: the share of peak 16-bit tensor cores reach differs too much between
// generations and models for one reference to carry over (a bf16 job takes --images-per-second or a
// profile).
double device_images_per_second(const DevicePreset& device, std::int64_t multiply_adds, std::string* how);

}  // namespace phalanx::scaling
