// Layer costs from a real model plan (the gradient layout the all-reduce sums, the multiply-adds of
// convolutions and linear layers), and the fabric, layer table and profile files refused with the
// file and the field named.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "phalanx/core/error.hpp"
#include "phalanx/scaling/compute_times.hpp"
#include "phalanx/scaling/fabric.hpp"
#include "phalanx/scaling/layer_costs.hpp"
#include "phalanx/scaling/measured_transport.hpp"

namespace phalanx::testing {
namespace {

using namespace phalanx::scaling;

TEST(LayerCosts, ModelPlanGivesEveryGradientOnceAndConvolutionMultiplyAdds) {
  config::ModelConfig model;
  model.preset = "resnet20";
  const nn::ModelPlan plan(model, Shape{32, 32, 3}, 10);
  const LayerCosts costs = layer_costs(plan, "resnet20");
  EXPECT_EQ(costs.parameters, 272474);
  EXPECT_EQ(costs.gradient_elements, plan.registry().parameter_count());
  std::int64_t covered = 0;
  for (const LayerCost& layer : costs.layers) covered += layer.gradient_elements;
  EXPECT_EQ(covered, costs.gradient_elements);
  // conv1: 3x3, 3 -> 16 channels on 32x32: 32*32*16*27 multiply-adds; fc: 64 -> 10.
  ASSERT_FALSE(costs.layers.empty());
  EXPECT_EQ(costs.layers.front().multiply_adds, 32 * 32 * 16 * 27);
  EXPECT_EQ(costs.layers.back().multiply_adds, 640);
  // ResNet-20 is about 41 million multiply-adds per 32x32 image (He et al. 2016).
  EXPECT_NEAR(static_cast<double>(costs.multiply_adds()), 41e6, 1.5e6);
}

class ScalingFiles : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() / ("phalanx-scaling-" + name);
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path.string();
  }
  void TearDown() override {
    for (const auto& path : paths_) std::filesystem::remove(path);
  }
  static std::string refusal(const std::function<void()>& action) {
    try {
      action();
    } catch (const Error& error) {
      EXPECT_EQ(error.exit_status(), 2) << error.what();
      return error.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
  }
  std::vector<std::filesystem::path> paths_;
};

TEST_F(ScalingFiles, FabricFileGivesItsFiguresAndRefusalsNameTheField) {
  const std::string good =
      write("good.json", R"({"intra_node_link": "pcie", "intra_node_gbytes_per_second": 12,
      "network_gbit_per_second_per_gpu": 100, "network_latency_us": 3, "source": "lab"})");
  const Fabric fabric = find_fabric(good);
  EXPECT_EQ(fabric.intra_node_link, IntraNodeLink::Pcie);
  EXPECT_NEAR(fabric.intra_node_bandwidth, 12e9, 1);
  EXPECT_NEAR(fabric.node_network_bandwidth(4), 4 * 12.5e9, 1);
  EXPECT_NEAR(fabric.network_latency, 3e-6, 1e-15);

  const std::string missing = write("missing.json", R"({"intra_node_link": "nvlink"})");
  std::string message = refusal([&] { find_fabric(missing); });
  EXPECT_NE(message.find(missing), std::string::npos) << message;
  EXPECT_NE(message.find("intra_node_gbytes_per_second"), std::string::npos) << message;
  const std::string text =
      write("text.json", R"({"intra_node_link": "nvlink", "intra_node_gbytes_per_second": "fast"})");
  message = refusal([&] { find_fabric(text); });
  EXPECT_NE(message.find("must be a number"), std::string::npos) << message;
  const std::string broken = write("broken.json", "{\"intra_node_link\": ");
  message = refusal([&] { find_fabric(broken); });
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
  message = refusal([&] { find_fabric("no-such-fabric"); });
  EXPECT_NE(message.find("roce-25g"), std::string::npos) << message;
}

TEST_F(ScalingFiles, ProfileNeedsEveryLayerOfTheModel) {
  LayerCosts costs;
  costs.model = "two";
  costs.layers = {{"a", 0, 10, 5}, {"b", 10, 10, 5}};
  const std::string profile = write("profile.json", R"({"batch_size": 16, "optimizer_seconds": 0.005,
      "ranks": [{"rank": 0, "step_seconds": [0.1, 0.12]}, {"rank": 1, "step_seconds": [0.2, 0.3]}],
      "layers": [{"name": "a", "forward_seconds": 0.01, "backward_seconds": 0.02},
                 {"name": "b", "forward_seconds": 0.03, "backward_seconds": 0.04}]})");
  const ComputeTimes times = compute_from_profile(costs, profile, 32);  // twice the profile's batch
  EXPECT_NEAR(times.forward_seconds(), 0.08, 1e-12);
  EXPECT_NEAR(times.backward_seconds(), 0.12, 1e-12);
  EXPECT_NEAR(times.optimizer, 0.01, 1e-12);
  ASSERT_EQ(times.rank_steps.size(), 2u);
  EXPECT_EQ(times.rank_steps[1], (std::vector<double>{0.2, 0.3}));
  const std::string partial = write("partial.json", R"({"batch_size": 16, "optimizer_seconds": 0,
      "ranks": [{"rank": 0, "step_seconds": [0.1]}], "layers": [{"name": "a", "forward_seconds": 0.01}]})");
  std::string message = refusal([&] { compute_from_profile(costs, partial, 32); });
  EXPECT_NE(message.find("layers[0].backward_seconds"), std::string::npos) << message;
  // A profile from before the update and the ranks' steps were measured: take it again.
  const std::string old =
      write("old.json", R"({"batch_size": 16, "optimizer_seconds": 0.001, "layers": []})");
  message = refusal([&] { compute_from_profile(costs, old, 32); });
  EXPECT_NE(message.find("'ranks'"), std::string::npos) << message;
  EXPECT_NE(message.find("old.json"), std::string::npos) << message;
  const std::string negative = write("negative.json", R"({"batch_size": 16, "optimizer_seconds": 0.001,
      "ranks": [{"rank": 0, "step_seconds": [0.1, -1]}], "layers": []})");
  message = refusal([&] { compute_from_profile(costs, negative, 32); });
  EXPECT_NE(message.find("ranks[0].step_seconds"), std::string::npos) << message;
}

// A transport's progress stages are read per timed size; a profile from before them has none (its
// all-reduces then start at backward's end), and one with them on some sizes only is refused.
TEST_F(ScalingFiles, TransportStagesAreOnEveryTimedSizeOrNone) {
  const std::string staged = write("staged.json", R"({"transports": [{"name": "network", "ranks": 2,
      "latency_seconds": 0, "seconds_per_byte": 1e-8, "measured": [
        {"bytes": 1000, "seconds": 1e-4, "stages": [1e-5, 9e-5], "seconds_in_calls": [0, 1e-6]},
        {"bytes": 2000, "seconds": 2e-4, "stages": [2e-4], "seconds_in_calls": [0]}]}]})");
  const MeasuredTransport transport = read_measured_transport(staged, "network");
  ASSERT_EQ(transport.progress.size(), 2u);
  EXPECT_EQ(transport.progress[0].stages, (std::vector<double>{1e-5, 9e-5}));
  EXPECT_EQ(transport.progress[0].seconds_in_calls, (std::vector<double>{0, 1e-6}));
  const std::string plain = write("plain.json", R"({"transports": [{"name": "network", "ranks": 2,
      "latency_seconds": 0, "seconds_per_byte": 1e-8, "measured": [{"bytes": 1000, "seconds": 1e-4}]}]})");
  EXPECT_TRUE(read_measured_transport(plain, "network").progress.empty());
  const std::string partial = write("partial-stages.json", R"({"transports": [{"name": "network", "ranks": 2,
      "latency_seconds": 0, "seconds_per_byte": 1e-8, "measured": [
        {"bytes": 1000, "seconds": 1e-4, "stages": [1e-4], "seconds_in_calls": [0]},
        {"bytes": 2000, "seconds": 2e-4}]}]})");
  std::string message = refusal([&] { read_measured_transport(partial, "network"); });
  EXPECT_NE(message.find("partial-stages.json"), std::string::npos) << message;
  EXPECT_NE(message.find("transports[0].measured[1].stages"), std::string::npos) << message;
  const std::string uneven = write("uneven.json", R"({"transports": [{"name": "network", "ranks": 2,
      "latency_seconds": 0, "seconds_per_byte": 1e-8, "measured": [
        {"bytes": 1000, "seconds": 1e-4, "stages": [1e-5, 9e-5], "seconds_in_calls": [0]}]}]})");
  message = refusal([&] { read_measured_transport(uneven, "network"); });
  EXPECT_NE(message.find("transports[0].measured[0].seconds_in_calls"), std::string::npos) << message;
  const std::string negative = write("negative-stage.json", R"({"transports": [{"name": "network", "ranks": 2,
      "latency_seconds": 0, "seconds_per_byte": 1e-8, "measured": [
        {"bytes": 1000, "seconds": 1e-4, "stages": [-1e-5], "seconds_in_calls": [0]}]}]})");
  message = refusal([&] { read_measured_transport(negative, "network"); });
  EXPECT_NE(message.find("transports[0].measured[0].stages[0]"), std::string::npos) << message;
  const std::string nothing = write("zero-stages.json", R"({"transports": [{"name": "network", "ranks": 2,
      "latency_seconds": 0, "seconds_per_byte": 1e-8, "measured": [
        {"bytes": 1000, "seconds": 1e-4, "stages": [0, 0], "seconds_in_calls": [0, 0]}]}]})");
  message = refusal([&] { read_measured_transport(nothing, "network"); });
  EXPECT_NE(message.find("transports[0].measured[0].stages"), std::string::npos) << message;
  const std::string alone = write("calls-alone.json", R"({"transports": [{"name": "network", "ranks": 2,
      "latency_seconds": 0, "seconds_per_byte": 1e-8, "measured": [
        {"bytes": 1000, "seconds": 1e-4, "seconds_in_calls": [0]}]}]})");
  message = refusal([&] { read_measured_transport(alone, "network"); });
  EXPECT_NE(message.find("transports[0].measured[0].stages"), std::string::npos) << message;
}

TEST_F(ScalingFiles, LayerTableLaysGradientsBackToBack) {
  const std::string table = write("table.json", R"({"model": "m", "layers": [
      {"name": "conv", "parameters": 100, "multiply_adds": 5000},
      {"name": "relu", "parameters": 0, "multiply_adds": 0},
      {"name": "fc", "parameters": 50, "multiply_adds": 50}]})");
  const LayerCosts costs = read_layer_table(table);
  ASSERT_EQ(costs.layers.size(), 3u);
  EXPECT_EQ(costs.layers[2].gradient_offset, 100);
  EXPECT_EQ(costs.gradient_elements, 150);
  const std::string bad = write(
      "bad-table.json", R"({"model": "m", "layers": [{"name": "x", "parameters": -1, "multiply_adds": 1}]})");
  const std::string message = refusal([&] { read_layer_table(bad); });
  EXPECT_NE(message.find("layers[0].parameters"), std::string::npos) << message;
}

}  // namespace
}  // namespace phalanx::testing
