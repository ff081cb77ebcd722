// ReLU fusion at the model level: one training step (forward, loss, backward, SGD) of a model
// built with nn::ReluFusion::Fused against the same model with ReluFusion::Separate, on the CPU
// backend. Rounds alternate the two, so a machine's changing load hits both alike; prints the
// median step time of each and their ratio.
//   OMP_NUM_THREADS=1 ./phalanx_bench_relu_fusion [fmnist_cnn|resnet20] [rounds] [steps per round]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "phalanx/core/median.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/nn/model.hpp"

namespace {

using phalanx::Shape;
using phalanx::Tensor;
namespace nn = phalanx::nn;

// One model and its batch, trained step by step.
class Training {
 public:
  Training(const std::string& preset, nn::ReluFusion fusion)
      : backend_(phalanx::backend::make_cpu_backend(1)),
        sample_(preset == "fmnist_cnn" ? Shape{28, 28, 1} : Shape{32, 32, 3}) {
    phalanx::config::ModelConfig config;
    config.preset = preset;
    model_ = std::make_unique<nn::Model>(config, sample_, classes, *backend_, 7, fusion);
    input_ = Tensor(*backend_, Shape{batch, sample_[0], sample_[1], sample_[2]});
    std::mt19937 generator(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::int64_t i = 0; i < input_.elements(); ++i) input_.data()[i] = normal(generator);
    for (int sample = 0; sample < batch; ++sample) labels_.push_back(sample % classes);
    grad_logits_ = Tensor(*backend_, Shape{batch, classes});
    momentum_ = Tensor(*backend_, Shape{model_->registry().parameter_count()});
    backend_->fill(momentum_.data(), momentum_.elements(), 0.0f);
  }

  void step() {
    auto& registry = model_->registry();
    const Tensor& logits = model_->forward(input_, nn::ForwardContext{nn::Mode::Training, 1, steps_++, 0});
    backend_->softmax_cross_entropy(batch, classes, logits.data(), labels_.data(), 0.0f, 1.0f / batch,
                                    grad_logits_.data());
    model_->backward(input_, grad_logits_, {});
    backend_->sgd_step(registry.parameter_count(), {0.01f, 0.9f, 0.0f, false}, registry.parameters().data(),
                       registry.gradients().data(), momentum_.data());
    backend_->synchronize();
  }

  std::size_t activation_bytes() const { return model_->network().activation_bytes(); }

  static constexpr int batch = 64;
  static constexpr int classes = 10;

 private:
  std::unique_ptr<phalanx::backend::Backend> backend_;
  Shape sample_;
  std::unique_ptr<nn::Model> model_;
  Tensor input_, grad_logits_, momentum_;
  std::vector<std::int32_t> labels_;
  std::int64_t steps_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string preset = argc > 1 ? argv[1] : "fmnist_cnn";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 20;
  Training fused(preset, nn::ReluFusion::Fused), separate(preset, nn::ReluFusion::Separate);
  for (int warm_up = 0; warm_up < 3; ++warm_up) {
    fused.step();
    separate.step();
  }
  std::vector<double> fused_ms, separate_ms, ratios;
  for (int round = 0; round < rounds; ++round) {
    // Alternate which goes first, so neither always runs right after the other's cache traffic.
    for (int turn = 0; turn < 2; ++turn) {
      const bool fused_turn = (turn == 0) == (round % 2 == 0);
      phalanx::Stopwatch clock;
      for (int step = 0; step < steps; ++step) (fused_turn ? fused : separate).step();
      (fused_turn ? fused_ms : separate_ms).push_back(clock.seconds() * 1e3 / steps);
    }
    ratios.push_back(separate_ms.back() / fused_ms.back());
  }
  std::printf("%s, batch %d, 1 thread, %d rounds x %d steps\n", preset.c_str(), Training::batch, rounds,
              steps);
  std::printf("  separate  %.2f ms/step (median)   activations held by the top level: %zu bytes\n",
              phalanx::median(separate_ms), separate.activation_bytes());
  std::printf("  fused     %.2f ms/step (median)   activations held by the top level: %zu bytes\n",
              phalanx::median(fused_ms), fused.activation_bytes());
  std::printf("  separate / fused: %.3f (median of the per-round ratios)\n", phalanx::median(ratios));
  return 0;
}
