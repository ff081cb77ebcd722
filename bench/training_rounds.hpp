// What the model-level benchmarks (relu_fusion.cpp, activation_storage.cpp) share: one model and
// its batch trained step by step on a backend the benchmark set up, and two such trainings timed
// in alternating rounds, so that a machine's changing load hits both alike.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::bench {

// A preset (fmnist_cnn at 28x28x1, anything else at 32x32x3) for 10 classes and one batch with
// labels 0, 1, ..., 9, 0, ..., trained step by step: forward, softmax cross-entropy, backward and
// SGD with momentum 0.9 at learning rate 0.01.
class TrainingSteps {
 public:
  // `fill_input` writes the batch [batch, H, W, C] once, after the model is built.
  TrainingSteps(std::unique_ptr<backend::Backend> backend, const std::string& preset, int batch,
                nn::ActivationFusion fusion, const std::function<void(backend::Backend&, Tensor&)>& fill_input)
      : backend_(std::move(backend)),
        sample_(preset == "fmnist_cnn" ? Shape{28, 28, 1} : Shape{32, 32, 3}),
        batch_(batch) {
    config::ModelConfig config;
    config.preset = preset;
    model_ = std::make_unique<nn::Model>(config, sample_, classes, *backend_, 7, fusion);
    input_ = Tensor(*backend_, Shape{batch_, sample_[0], sample_[1], sample_[2]});
    fill_input(*backend_, input_);
    for (int sample = 0; sample < batch_; ++sample) labels_.push_back(sample % classes);
    grad_logits_ = Tensor(*backend_, Shape{batch_, classes});
    momentum_ = Tensor(*backend_, Shape{model_->registry().parameter_count()});
    backend_->fill(momentum_.data(), momentum_.elements(), 0.0f);
  }

  void step() {
    auto& registry = model_->registry();
    const Tensor& logits = model_->forward(input_, nn::ForwardContext{nn::Mode::Training, 1, steps_++, 0});
    backend_->softmax_cross_entropy(batch_, classes, logits.data(), labels_.data(), 0.0f,
                                    1.0f / static_cast<float>(batch_), grad_logits_.data());
    model_->backward(input_, grad_logits_, {});
    backend_->sgd_step(registry.parameter_count(), {0.01f, 0.9f, 0.0f, false}, registry.parameters().data(),
                       registry.gradients().data(), momentum_.data());
    backend_->synchronize();
  }

  std::size_t activation_bytes() const { return model_->network().activation_bytes(); }

  static constexpr int classes = 10;

 private:
  std::unique_ptr<backend::Backend> backend_;
  Shape sample_;
  int batch_;
  std::unique_ptr<nn::Model> model_;
  Tensor input_, grad_logits_, momentum_;
  std::vector<std::int32_t> labels_;
  std::int64_t steps_ = 0;
};

// Milliseconds per step of two trainings, one entry per round, and second / first per round.
struct RoundTimes {
  std::vector<double> first_ms, second_ms, ratios;
};

// `warm_up` steps of each (the first builds their primitives), then `rounds` rounds of `steps`
// steps of each, timed on the clock `seconds` (wall or CPU time). The first goes first in even
// rounds and second in odd ones, so neither always runs right after the other's cache traffic.
inline RoundTimes alternate_rounds(TrainingSteps& first, TrainingSteps& second, int warm_up, int rounds,
                                   int steps, const std::function<double()>& seconds) {
  for (int step = 0; step < warm_up; ++step) {
    first.step();
    second.step();
  }
  RoundTimes times;
  for (int round = 0; round < rounds; ++round) {
    for (int turn = 0; turn < 2; ++turn) {
      const bool first_turn = (turn == 0) == (round % 2 == 0);
      const double start = seconds();
      for (int step = 0; step < steps; ++step) (first_turn ? first : second).step();
      (first_turn ? times.first_ms : times.second_ms).push_back((seconds() - start) * 1e3 / steps);
    }
    times.ratios.push_back(times.second_ms.back() / times.first_ms.back());
  }
  return times;
}

}  // namespace phalanx::bench
