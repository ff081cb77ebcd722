// Layer costs from a real model plan (the gradient layout the all-reduce sums, the multiply-adds of
// convolutions and linear layers), and the fabric, layer table and profile files refused with the
// file and the field named.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

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
    for (const auto& path : paths_) std::filesystem::remove_all(path);
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
  EXPECT_EQ(fabric.gpu_compute_capability, 9.0);  // not given: a current GPU
  const std::string pascal =
      write("pascal.json", R"({"intra_node_link": "pcie", "intra_node_gbytes_per_second": 12,
      "gpu_compute_capability": 6.1})");
  EXPECT_EQ(find_fabric(pascal).gpu_compute_capability, 6.1);
  EXPECT_EQ(find_fabric("roce-25g").gpu_compute_capability, 6.0);
  EXPECT_EQ(find_fabric("ib-4x100g").gpu_compute_capability, 7.0);
  EXPECT_EQ(find_fabric("ib-4x100g").network_interfaces(8), 4);
  EXPECT_EQ(find_fabric("ndr-400g").network_interfaces(8), 8);  // one per GPU
  EXPECT_EQ(fabric.network_interfaces(4), 4);                   // good.json's figure is per GPU
  const std::string nics =
      write("nics.json", R"({"intra_node_link": "pcie", "intra_node_gbytes_per_second": 12,
      "network_gbit_per_second_per_node": 200, "network_interfaces_per_node": 2})");
  EXPECT_EQ(find_fabric(nics).network_interfaces(8), 2);
  const std::string nics_per_gpu =
      write("nics-per-gpu.json", R"({"intra_node_link": "pcie", "intra_node_gbytes_per_second": 12,
      "network_gbit_per_second_per_gpu": 200, "network_interfaces_per_node": 2})");
  std::string refused = refusal([&] { find_fabric(nics_per_gpu); });
  EXPECT_NE(refused.find("'network_interfaces_per_node'"), std::string::npos) << refused;

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
  EXPECT_NEAR(times.optimizer, 0.005, 1e-12);  // the update follows the parameters, not the batch
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
  // A name twice: which times are the layer's is anyone's guess.
  const std::string twice = write("twice.json", R"({"batch_size": 16, "optimizer_seconds": 0,
      "ranks": [{"rank": 0, "step_seconds": [0.1]}],
      "layers": [{"name": "a", "forward_seconds": 0.01, "backward_seconds": 0.02},
                 {"name": "b", "forward_seconds": 0.03, "backward_seconds": 0.04},
                 {"name": "a", "forward_seconds": 100, "backward_seconds": 100}]})");
  message = refusal([&] { compute_from_profile(costs, twice, 32); });
  EXPECT_NE(message.find("twice.json: field 'layers[2].name' repeats 'a'"), std::string::npos) << message;
  // Taken at another image size: the layers' multiply-adds differ from the model's here.
  const std::string other_shape = write("other_shape.json", R"({"batch_size": 16, "optimizer_seconds": 0,
      "ranks": [{"rank": 0, "step_seconds": [0.1]}],
      "layers": [{"name": "a", "forward_seconds": 0.01, "backward_seconds": 0.02, "multiply_adds": 5},
                 {"name": "b", "forward_seconds": 0.03, "backward_seconds": 0.04, "multiply_adds": 80}]})");
  message = refusal([&] { compute_from_profile(costs, other_shape, 32); });
  EXPECT_NE(
      message.find("other_shape.json: field 'layers[1].multiply_adds' is 80, but layer 'b' of model two "
                   "has 5 per image here"),
      std::string::npos)
      << message;
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

// A number no double holds, a figure out of its bounds (a denormal bandwidth, a latency of 1e308 us),
// and a path that is not a regular file: each refused with exit 2 naming the file (and the field),
// not an internal error, a hang on a FIFO, or a prediction of inf.
TEST_F(ScalingFiles, FabricFiguresOutOfBoundsAndFilesThatAreNotRegularAreRefused) {
  const std::string overflow = write("overflow.json", R"({"intra_node_link": "pcie",
      "intra_node_gbytes_per_second": 12, "network_gbit_per_second_per_node": 1e400})");
  std::string message = refusal([&] { find_fabric(overflow); });
  EXPECT_NE(message.find(overflow), std::string::npos) << message;
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
  const auto fabric_with = [&](const std::string& field, const std::string& value) {
    std::map<std::string, std::string> fields{{"intra_node_gbytes_per_second", "12"},
                                              {"network_gbit_per_second_per_node", "100"}};
    fields[field] = value;
    std::string text = R"({"intra_node_link": "pcie")";
    for (const auto& [name, figure] : fields) text += ", \"" + name + "\": " + figure;
    return write("bounds.json", text + "}");
  };
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, std::string>>{{"intra_node_gbytes_per_second", "1e-320"},
                                                        {"intra_node_gbytes_per_second", "1e300"},
                                                        {"network_gbit_per_second_per_node", "1e-300"},
                                                        {"network_latency_us", "1e308"},
                                                        {"gpu_compute_capability", "0"},
                                                        {"gpu_compute_capability", "\"8.0\""},
                                                        {"network_interfaces_per_node", "0"},
                                                        {"network_interfaces_per_node", "2.5"},
                                                        {"network_interfaces_per_node", "1025"}}) {
    const std::string path = fabric_with(field, value);
    message = refusal([&] { find_fabric(path); });
    EXPECT_NE(message.find(path), std::string::npos) << field << " " << value << ": " << message;
    EXPECT_NE(message.find("'" + field + "'"), std::string::npos) << field << " " << value << ": " << message;
  }
  const auto directory = std::filesystem::temp_directory_path() / "phalanx-scaling-directory.json";
  std::filesystem::create_directories(directory);
  paths_.push_back(directory);
  message = refusal([&] { find_fabric(directory.string()); });
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
  const auto fifo = std::filesystem::temp_directory_path() / "phalanx-scaling-fifo.json";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  paths_.push_back(fifo);
  message = refusal([&] { read_layer_table(fifo.string()); });  // would block reading with no writer
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
}

// Counts are whole numbers in range: 2.5 parameters is not truncated, 1e17 or 1e19 is no model (an
// internal check or bad_alloc before), and multiply-adds summing past the bound are refused at the
// layer that passes it, not wrapped to a negative total.
TEST_F(ScalingFiles, LayerTableCountsAreWholeNumbersInRange) {
  int written = 0;  // each table its own file: the cases are all written before any is read
  const auto table = [&](const std::string& layers) {
    return write("counts-" + std::to_string(written++) + ".json",
                 R"({"model": "m", "layers": [)" + layers + "]}");
  };
  for (const auto& [layers, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"name": "a", "parameters": 2.5, "multiply_adds": 1000})", "layers[0].parameters"},
           {R"({"name": "a", "parameters": 1000, "multiply_adds": 1000.7})", "layers[0].multiply_adds"},
           {R"({"name": "a", "parameters": 1e17, "multiply_adds": 1000})", "layers[0].parameters"},
           {R"({"name": "a", "parameters": 1e19, "multiply_adds": 1000})", "layers[0].parameters"},
           {R"({"name": "a", "parameters": 1000, "multiply_adds": 9e18})", "layers[0].multiply_adds"},
           {R"({"name": "a", "parameters": 1000, "multiply_adds": 1125899906842624},
               {"name": "b", "parameters": 1000, "multiply_adds": 1125899906842624})",
            "layers[1].multiply_adds"},
           {R"({"name": "a", "parameters": 1099511627776, "multiply_adds": 1},
               {"name": "b", "parameters": 1, "multiply_adds": 1})",
            "layers[1].parameters"}}) {
    const std::string path = table(layers);
    const std::string message = refusal([&] { read_layer_table(path); });
    EXPECT_NE(message.find(path), std::string::npos) << layers << ": " << message;
    EXPECT_NE(message.find("'" + field + "'"), std::string::npos) << layers << ": " << message;
  }
  // A whole number written as a float is one.
  const LayerCosts costs =
      read_layer_table(table(R"({"name": "a", "parameters": 1e6, "multiply_adds": 2e9})"));
  EXPECT_EQ(costs.gradient_elements, 1000000);
  EXPECT_EQ(costs.multiply_adds(), 2000000000);
}

// A profile's batch is a whole number >= 1 (1e-310 divided the times into nan), its layers must
// have some compute (all zero printed inf images/s), a step that divides is at least a nanosecond,
// and a transport's ranks are a whole count of two or more (2.7 was cut to 2, 1e10 wrapped).
TEST_F(ScalingFiles, ProfileFiguresAndTransportRanksAreInRange) {
  LayerCosts costs;
  costs.model = "two";
  costs.layers = {{"a", 0, 10, 5}, {"b", 10, 10, 5}};
  int written = 0;  // each profile its own file: the cases are all written before any is read
  const auto profile = [&](const std::string& batch, const std::string& seconds, const std::string& step) {
    return write("figures-" + std::to_string(written++) + ".json", R"({"batch_size": )" + batch +
                                                                       R"(, "optimizer_seconds": 0,
        "ranks": [{"step_seconds": [)" + step + R"(]}],
        "layers": [{"name": "a", "forward_seconds": )" + seconds + R"(, "backward_seconds": )" +
                                                                       seconds + R"(},
                   {"name": "b", "forward_seconds": 0, "backward_seconds": 0}]})");
  };
  EXPECT_NEAR(compute_from_profile(costs, profile("16", "0.01", "0.1"), 16).backward_seconds(), 0.01, 1e-15);
  for (const auto& [path, field] : std::vector<std::pair<std::string, std::string>>{
           {profile("1e-310", "0.01", "0.1"), "'batch_size'"},
           {profile("2.5", "0.01", "0.1"), "'batch_size'"},
           {profile("0", "0.01", "0.1"), "'batch_size'"},
           {profile("16", "0", "0.1"), "forward_seconds"},
           {profile("16", "1e300", "0.1"), "layers[0].forward_seconds"},
           {profile("16", "0.01", "1e-320"), "ranks[0].step_seconds[0]"}}) {
    const std::string message = refusal([&] { compute_from_profile(costs, path, 16); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(field), std::string::npos) << message;
  }
  for (const std::string ranks : {"2.7", "1e10", "0.5", "1"}) {
    const std::string path =
        write("transport-ranks.json",
              R"({"transports": [{"name": "network", "ranks": )" + ranks + R"(, "latency_seconds": 0,
        "seconds_per_byte": 1e-8, "measured": [{"bytes": 1000, "seconds": 1e-4}]}]})");
    const std::string message = refusal([&] { read_measured_transport(path, "network"); });
    EXPECT_NE(message.find(path), std::string::npos) << ranks << ": " << message;
    EXPECT_NE(message.find("'transports[0].ranks'"), std::string::npos) << ranks << ": " << message;
  }
  const std::string slow = write("slow.json", R"({"transports": [{"name": "network", "ranks": 2,
      "latency_seconds": 0, "seconds_per_byte": 1e-320, "measured": [{"bytes": 1000, "seconds": 1e-4}]}]})");
  const std::string message = refusal([&] { read_measured_transport(slow, "network"); });
  EXPECT_NE(message.find("'transports[0].seconds_per_byte'"), std::string::npos) << message;
}

}  // namespace
}  // namespace phalanx::testing
