// Device presets: the V100's published ResNet-50 throughput is taken as is for ResNet-50 and scaled
// by multiply-adds for other models; devices without a reference run at the V100's share of peak.
#include <gtest/gtest.h>

#include "phalanx/core/error.hpp"
#include "phalanx/scaling/device_preset.hpp"

namespace phalanx::testing {
namespace {

using namespace phalanx::scaling;

TEST(DevicePreset, ReferenceThroughputScalesByMultiplyAdds) {
  const DevicePreset& v100 = device_preset("v100");
  std::string how;
  EXPECT_NEAR(device_images_per_second(v100, v100.reference_multiply_adds, &how), 329, 1e-9);
  EXPECT_NE(how.find("scaled by multiply-adds"), std::string::npos) << how;
  EXPECT_NEAR(device_images_per_second(v100, 2 * v100.reference_multiply_adds, nullptr), 329 / 2.0, 1e-9);
}

TEST(DevicePreset, WithoutAReferenceThePeakRunsAtTheV100sShare) {
  const DevicePreset& v100 = device_preset("v100");
  const DevicePreset& h100 = device_preset("h100");
  // The V100 reference: 329 x 6 x 4.09 GFLOP per second of its 15.7 TFLOPS.
  const double share = 329 * 6.0 * v100.reference_multiply_adds / 15.7e12;
  const std::int64_t multiply_adds = 1'000'000'000;
  EXPECT_NEAR(device_images_per_second(h100, multiply_adds, nullptr), share * 67e12 / 6e9, 1e-6);
  try {
    device_preset("k80");
    FAIL() << "an unknown device was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("h200"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace phalanx::testing
