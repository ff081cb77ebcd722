// TrivialAugmentWide's and RandAugment's ops and magnitude tables against torchvision's on the same
// images and magnitudes: golden/autoaugment.json, written by make_autoaugment_golden.py (which says
// how), holds torchvision's tables and each case's image, op, signed magnitude and _apply_op's
// output, so these tests need no PyTorch.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phalanx/core/augment_operations.hpp"
#include "phalanx/data/auto_augment.hpp"

namespace phalanx::data {
namespace {

using Json = nlohmann::json;

const char* const operation_names[augment_operation_count] = {
    "Identity", "ShearX",   "ShearY",    "TranslateX", "TranslateY", "Rotate",       "Brightness",
    "Color",    "Contrast", "Sharpness", "Posterize",  "Solarize",   "AutoContrast", "Equalize"};

AugmentOperation operation_named(const std::string& name) {
  for (int index = 0; index < augment_operation_count; ++index)
    if (name == operation_names[index]) return static_cast<AugmentOperation>(index);
  throw std::runtime_error("unknown op " + name);
}

Json read_golden() {
  const std::string path = std::string(PHALANX_SOURCE_DIR) + "/tests/data/golden/autoaugment.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return Json::parse(in);
}

std::vector<std::uint8_t> from_hex(const std::string& text) {
  std::vector<std::uint8_t> bytes(text.size() / 2);
  for (std::size_t index = 0; index < bytes.size(); ++index)
    bytes[index] = static_cast<std::uint8_t>(std::stoi(text.substr(2 * index, 2), nullptr, 16));
  return bytes;
}

// Bit-exact: the tables are float32 values and phalanx computes them in float32 as torch.linspace.
TEST(AutoAugmentGolden, MagnitudeTablesAreTorchvisions) {
  const Json golden = read_golden();
  int tables = 0;
  for (const Json& table : golden["tables"]) {
    const auto policy = table["policy"] == "trivial_augment_wide" ? AutoAugmentPolicy::TrivialAugmentWide
                                                                  : AutoAugmentPolicy::RandAugment;
    const int bins = table["bins"], height = table["height"], width = table["width"];
    for (int index = 0; index < augment_operation_count; ++index) {
      const Json& op = table["ops"][operation_names[index]];
      const auto operation = static_cast<AugmentOperation>(index);
      SCOPED_TRACE(table["policy"].get<std::string>() + " " + operation_names[index] + " bins " +
                   std::to_string(bins));
      EXPECT_EQ(augment_magnitude_signed(operation), op["signed"].get<bool>());
      const auto magnitudes = op["magnitudes"].get<std::vector<double>>();
      if (magnitudes.empty()) {
        EXPECT_EQ(augment_magnitude(policy, operation, 0, bins, height, width), 0.0);
        continue;
      }
      ASSERT_EQ(static_cast<int>(magnitudes.size()), bins);
      for (int bin = 0; bin < bins; ++bin)
        EXPECT_EQ(augment_magnitude(policy, operation, bin, bins, height, width), magnitudes[bin])
            << "bin " << bin;
    }
    ++tables;
  }
  EXPECT_EQ(tables, 4);
}

// Tolerance per op, as the number of pixels that may differ from torchvision's (0: exact):
//   The photometric ops (Brightness, Color, Contrast, Sharpness, Posterize, Solarize, AutoContrast,
//   Equalize) and Identity: 0. phalanx repeats torchvision's float32 arithmetic in its order.
//   TranslateX/Y: 0. An integer shift lands on pixel centres, far from any rounding boundary.
//   ShearX/Y and Rotate: up to 2 pixels per image. The source position is rounded to the nearest
//   pixel; phalanx evaluates it as p0 * u + p1 * v + p2 in float, torchvision as a float32 bmm on
//   the normalised grid followed by grid_sample's unnormalisation, so where the exact position is
//   within float error of a half the two roundings may pick neighbouring pixels.
int allowed_differing_pixels(AugmentOperation operation) {
  switch (operation) {
    case AugmentOperation::ShearX:
    case AugmentOperation::ShearY:
    case AugmentOperation::Rotate: return 2;
    default: return 0;
  }
}

TEST(AutoAugmentGolden, OpsMatchTorchvisionsApplyOp) {
  const Json golden = read_golden();
  std::vector<std::vector<std::uint8_t>> images;
  for (const Json& image : golden["images"]) images.push_back(from_hex(image["bytes"]));
  std::map<std::string, int> cases_of;
  int differing_total = 0;
  for (const Json& test : golden["cases"]) {
    const auto image_index = test["image"].get<std::size_t>();
    const Json& image = golden["images"][image_index];
    const int height = image["height"], width = image["width"], channels = image["channels"];
    const AugmentOperation operation = operation_named(test["op"]);
    const double magnitude = test["magnitude"];
    SCOPED_TRACE(test["op"].get<std::string>() + " magnitude " + std::to_string(magnitude) + " on image " +
                 std::to_string(image_index));
    const auto& source = images[image_index];
    const auto expected = from_hex(test["expected"]);
    std::vector<std::uint8_t> output(source.size(), 0xAB);
    apply_augment_operation(resolve_augment_operation(operation, magnitude, height, width), source.data(),
                            output.data(), height, width, channels);
    ASSERT_EQ(output.size(), expected.size());
    int differing_pixels = 0;
    for (std::size_t pixel = 0; pixel < output.size() / static_cast<std::size_t>(channels); ++pixel) {
      bool differs = false;
      for (int channel = 0; channel < channels; ++channel)
        differs |= output[pixel * channels + channel] != expected[pixel * channels + channel];
      differing_pixels += differs;
    }
    EXPECT_LE(differing_pixels, allowed_differing_pixels(operation));
    differing_total += differing_pixels;
    ++cases_of[test["op"].get<std::string>()];
  }
  for (const char* name : operation_names)
    EXPECT_GE(cases_of[name], 5) << name << ": the golden file lost its cases";
  RecordProperty("differing_pixels", differing_total);
}

}  // namespace
}  // namespace phalanx::data
