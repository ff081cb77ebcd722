// Weights from a safetensors file or a phalanx checkpoint into a model: every parameter and
// batch-norm buffer taken by name (torch's a.b.c = a/b/c) with num_batches_tracked ignored; a
// missing or extra tensor or another shape refused naming the file, the tensor and both shapes,
// with the model left as it was; the classifier head, and only it, re-initialised when only the
// class count differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/pretrained_weights.hpp"
#include "phalanx/train/safetensors.hpp"
#include "phalanx/train/weights_import.hpp"
#include "support/test_support.hpp"

namespace phalanx::train {
namespace {

using phalanx::testing::ScratchDirectory;

// conv/weight [2,1,3,3], bn/{weight,bias} [2] + running stats, fc/{weight [classes,2], bias}.
struct SmallModel {
  std::unique_ptr<backend::Backend> backend = backend::make_cpu_backend(1);
  nn::ParameterRegistry registry;
  explicit SmallModel(int classes) {
    registry.declare_parameter("conv/weight", Shape{2, 1, 3, 3}, nn::Initializer::KaimingUniformWeight, 9);
    registry.declare_parameter("bn/weight", Shape{2}, nn::Initializer::Ones, 2);
    registry.declare_parameter("bn/bias", Shape{2}, nn::Initializer::Zeros, 2);
    registry.declare_buffer("bn/running_mean", Shape{2}, nn::Initializer::Zeros);
    registry.declare_buffer("bn/running_var", Shape{2}, nn::Initializer::Ones);
    registry.declare_parameter("fc/weight", Shape{classes, 2}, nn::Initializer::KaimingUniformWeight, 2);
    registry.declare_parameter("fc/bias", Shape{classes}, nn::Initializer::FanInUniformBias, 2);
    registry.allocate(*backend, 5);
  }
  std::vector<float> parameters() {
    std::vector<float> values(static_cast<std::size_t>(registry.parameter_count()));
    backend->copy_to_host(values.data(), registry.parameters().data(), values.size() * sizeof(float));
    return values;
  }
  std::vector<float> value(const std::string& name) {
    for (const auto& [infos, tensor] : {std::pair{&registry.parameters_info(), &registry.parameters()},
                                        std::pair{&registry.buffers_info(), &registry.buffers()}})
      for (const auto& info : *infos)
        if (info.name == name) {
          std::vector<float> values(static_cast<std::size_t>(info.count));
          backend->copy_to_host(values.data(), tensor->data() + info.offset, values.size() * sizeof(float));
          return values;
        }
    ADD_FAILURE() << "no tensor " << name;
    return {};
  }
};

// torch's state_dict of SmallModel(classes): value k of tensor t is 100 t + k.
std::vector<SafetensorsTensor> state_dict(int classes) {
  std::vector<SafetensorsTensor> tensors = {{"conv.weight", Shape{2, 1, 3, 3}, {}},
                                            {"bn.weight", Shape{2}, {}},
                                            {"bn.bias", Shape{2}, {}},
                                            {"bn.running_mean", Shape{2}, {}},
                                            {"bn.running_var", Shape{2}, {}},
                                            {"fc.weight", Shape{classes, 2}, {}},
                                            {"fc.bias", Shape{classes}, {}}};
  for (std::size_t tensor = 0; tensor < tensors.size(); ++tensor)
    for (std::int64_t index = 0; index < tensors[tensor].shape.elements(); ++index)
      tensors[tensor].values.push_back(100.0f * static_cast<float>(tensor) + static_cast<float>(index));
  return tensors;
}

struct PretrainedWeightsTest : ::testing::Test {
  ScratchDirectory scratch{"pretrained_weights"};
  std::string path = scratch.file("weights.safetensors");
};

TEST_F(PretrainedWeightsTest, EveryTensorIsTakenByNameAndTheCounterIgnored) {
  SmallModel model(3);
  std::vector<SafetensorsTensor> tensors = state_dict(3);
  // torch's counter is an I64 scalar; written here as F32 it is still left out by name.
  tensors.push_back({"bn.num_batches_tracked", Shape{}, {7.0f}});
  write_safetensors(path, tensors);
  const StoredWeights weights = read_stored_weights(path);
  EXPECT_EQ(weights.tensors.size(), 7u);
  EXPECT_EQ(weights.tensors.at("bn/running_var").stored_name, "bn.running_var");
  EXPECT_TRUE(assign_weights(weights, *model.backend, model.registry, HeadMismatch::Refuse).empty());
  for (const SafetensorsTensor& tensor : state_dict(3)) {
    std::string name = tensor.name;
    std::replace(name.begin(), name.end(), '.', '/');
    EXPECT_EQ(model.value(name), tensor.values) << name;
  }
  // A phalanx checkpoint of the model gives the same tensors back.
  const std::string checkpoint = scratch.file("model.h5");
  write_checkpoint(checkpoint, *model.backend, model.registry, nullptr, TrainingPosition{}, 1, 0,
                   "name: x\n");
  SmallModel other(3);
  assign_weights(read_stored_weights(checkpoint), *other.backend, other.registry, HeadMismatch::Refuse);
  EXPECT_EQ(other.parameters(), model.parameters());
  EXPECT_EQ(other.value("bn/running_mean"), model.value("bn/running_mean"));
}

TEST_F(PretrainedWeightsTest, MissingExtraOrMisshapenTensorsAreRefusedAndTheModelUntouched) {
  const auto expect_refused = [&](std::vector<SafetensorsTensor> tensors, const std::string& expected) {
    write_safetensors(path, tensors);
    SmallModel model(3);
    const std::vector<float> before = model.parameters();
    EXPECT_INPUT_ERROR(assign_weights(read_stored_weights(path), *model.backend, model.registry,
                                      HeadMismatch::Reinitialise, classifier_head(model.registry, 3)),
                       path + ": " + expected);
    EXPECT_EQ(model.parameters(), before);
  };
  std::vector<SafetensorsTensor> missing = state_dict(3);
  missing.erase(missing.begin() + 3);
  expect_refused(missing, "the model's tensor 'bn.running_mean' (shape [2]) is not in the file");
  std::vector<SafetensorsTensor> extra = state_dict(3);
  extra.push_back({"fc2.weight", Shape{1}, {1.0f}});
  expect_refused(extra, "tensor 'fc2.weight' (shape [1]) is not in the model");
  std::vector<SafetensorsTensor> misshapen = state_dict(3);
  misshapen[0] = {"conv.weight", Shape{2, 1, 5, 5}, std::vector<float>(50, 0.0f)};
  expect_refused(misshapen,
                 "tensor 'conv.weight' has shape [2, 1, 5, 5] in the file but [2, 1, 3, 3] in the model");
  // The head's other dimension is no class count: refused even where the head may be re-initialised.
  std::vector<SafetensorsTensor> wider = state_dict(3);
  wider[5] = {"fc.weight", Shape{3, 4}, std::vector<float>(12, 0.0f)};
  expect_refused(wider, "tensor 'fc.weight' has shape [3, 4] in the file but [3, 2] in the model");
}

TEST_F(PretrainedWeightsTest, OnlyTheHeadIsReinitialisedForAnotherClassCount) {
  write_safetensors(path, state_dict(5));
  SmallModel model(3);
  const std::vector<std::string> head = classifier_head(model.registry, 3);
  EXPECT_EQ(head, (std::vector<std::string>{"fc/weight", "fc/bias"}));
  const std::vector<float> fresh_weight = model.value("fc/weight");
  const StoredWeights weights = read_stored_weights(path);
  EXPECT_INPUT_ERROR(assign_weights(weights, *model.backend, model.registry, HeadMismatch::Refuse),
                     "tensor 'fc.weight' has shape [5, 2] in the file but [3, 2] in the model");
  EXPECT_EQ(assign_weights(weights, *model.backend, model.registry, HeadMismatch::Reinitialise, head), head);
  EXPECT_EQ(model.value("fc/weight"), fresh_weight);
  EXPECT_EQ(model.value("conv/weight"), state_dict(5)[0].values);
  EXPECT_EQ(model.value("bn/running_var"), state_dict(5)[4].values);
  // Not a head: the last layer's weight does not have the class count first.
  EXPECT_TRUE(classifier_head(model.registry, 4).empty());
}

TEST_F(PretrainedWeightsTest, TwoSpellingsOfOneNameAreRefused) {
  write_safetensors(path, {{"fc.weight", Shape{1}, {1.0f}}, {"fc/weight", Shape{1}, {2.0f}}});
  EXPECT_INPUT_ERROR(read_stored_weights(path), "are both 'fc/weight' to phalanx");
}

// A --data path or --preset that is not UTF-8 is refused before anything is read, the message
// quoting the text up to the bad byte (what follows would make the message itself invalid).
TEST(WeightsImport, TextThatIsNotUtf8IsRefusedQuotingItUpToTheBadByte) {
  ImportRequest request;
  request.weights = "absent.safetensors";
  request.output = "absent.h5";
  request.preset = "resnet20";
  request.data = "/data/caf\xC3\xA9-\xE9t\xE9.h5";
  EXPECT_INPUT_ERROR(import_weights(request), "--data '/data/caf\xC3\xA9-...': not UTF-8 text (byte 12)");
  request.data.clear();
  request.preset = "\xFFnet";
  EXPECT_INPUT_ERROR(import_weights(request), "--preset '...': not UTF-8 text (byte 0)");
}

}  // namespace
}  // namespace phalanx::train
