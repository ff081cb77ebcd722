// The augmentation ops against torchvision's functional ops on the same images and parameters
// (erase, pad + crop + hflip, resized_crop, resize + center_crop):
// golden/augmentation.json, written by make_augmentation_golden.py (which says how), holds each
// case's image, parameters and torchvision's output, so these tests need no PyTorch.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phalanx/data/augmentation.hpp"
#include "phalanx/data/resized_crop.hpp"

namespace phalanx::data {
namespace {

using Json = nlohmann::json;

Json read_golden() {
  const std::string path = std::string(PHALANX_SOURCE_DIR) + "/tests/data/golden/augmentation.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return Json::parse(in);
}

// Runs one golden case through phalanx's op; returns the output image.
std::vector<std::uint8_t> run_case(const Json& test) {
  const int height = test["height"], width = test["width"], channels = test["channels"];
  const auto source = test["image"].get<std::vector<std::uint8_t>>();
  const int output_height = test["expected_height"], output_width = test["expected_width"];
  std::vector<std::uint8_t> output(static_cast<std::size_t>(output_height * output_width * channels), 0xAB);
  const Json& params = test["params"];
  const std::string op = test["op"];
  if (op == "resized_crop" || op == "resize_center_crop") {
    ResampleWindow window;
    if (op == "resized_crop") {
      window.top = params["top"];
      window.left = params["left"];
      window.height = params["height"];
      window.width = params["width"];
      window.resized_height = output_height;
      window.resized_width = output_width;
    } else {
      window = center_crop_window(height, width, params["resize"], output_height, output_width);
    }
    resample_bilinear(window, source.data(), height, width, channels, output.data(), output_height,
                      output_width);
    return output;
  }
  AugmentDraws draws;
  if (op == "erase") {
    draws.erase_top = params["top"];
    draws.erase_left = params["left"];
    draws.erase_height = params["height"];
    draws.erase_width = params["width"];
  } else if (op == "crop_flip") {
    // torchvision crops the padded image at (top, left); phalanx shifts the unpadded one.
    const int padding = params["padding"];
    draws.shift_y = params["top"].get<int>() - padding;
    draws.shift_x = params["left"].get<int>() - padding;
    draws.flip = params["flip"].get<bool>() ? 1 : 0;
  } else {
    ADD_FAILURE() << "unknown op " << op;
    return output;
  }
  apply_augment_draws(draws, 0, source.data(), output.data(), height, width, channels);
  return output;
}

TEST(AugmentationGolden, OpsMatchTorchvisionsFunctionalOps) {
  const Json golden = read_golden();
  int cases = 0;
  std::map<std::string, int> cases_of;
  for (const Json& test : golden["cases"]) {
    SCOPED_TRACE(test["op"].get<std::string>() + " " + test["params"].dump());
    const auto expected = test["expected"].get<std::vector<std::uint8_t>>();
    const auto output = run_case(test);
    ASSERT_EQ(output.size(), expected.size());
    const int tolerance = test["tolerance"];
    std::size_t differing = 0;
    for (std::size_t index = 0; index < output.size(); ++index) {
      ASSERT_LE(std::abs(int{output[index]} - int{expected[index]}), tolerance) << "byte " << index;
      differing += output[index] != expected[index];
    }
    // Off by one only at exact halves of the bilinear sum (phalanx computes it exactly and rounds
    // halves to even; torchvision's float weights land a half just above or below): a few percent.
    EXPECT_LE(differing * 20, output.size()) << differing << " of " << output.size() << " bytes differ";
    ++cases;
    ++cases_of[test["op"].get<std::string>()];
  }
  EXPECT_GE(cases, 30) << "the golden file lost its cases";
  for (const char* op : {"erase", "crop_flip", "resized_crop", "resize_center_crop"})
    EXPECT_GE(cases_of[op], 4) << op;
}

}  // namespace
}  // namespace phalanx::data
