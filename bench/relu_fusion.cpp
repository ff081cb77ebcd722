// ReLU fusion at the model level: one training step (forward, loss, backward, SGD) of a model
// built with nn::ActivationFusion::Fused against the same model with ActivationFusion::Separate, on the CPU
// backend. Rounds alternate the two, so a machine's changing load hits both alike; prints the
// median step time of each and their ratio.
//   OMP_NUM_THREADS=1 ./phalanx_bench_relu_fusion [fmnist_cnn|resnet20] [rounds] [steps per round]
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "phalanx/core/median.hpp"
#include "phalanx/core/timer.hpp"
#include "training_rounds.hpp"

namespace {

namespace nn = phalanx::nn;

constexpr int batch = 64;

phalanx::bench::TrainingSteps training(const std::string& preset, nn::ActivationFusion fusion) {
  return phalanx::bench::TrainingSteps(phalanx::backend::make_cpu_backend(1), preset, batch, fusion,
                                       [](phalanx::backend::Backend&, phalanx::Tensor& input) {
                                         std::mt19937 generator(3);
                                         std::normal_distribution<float> normal(0.0f, 1.0f);
                                         for (std::int64_t i = 0; i < input.elements(); ++i)
                                           input.data()[i] = normal(generator);
                                       });
}

}  // namespace

int main(int argc, char** argv) {
  const std::string preset = argc > 1 ? argv[1] : "fmnist_cnn";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 20;
  auto fused = training(preset, nn::ActivationFusion::Fused), separate = training(preset, nn::ActivationFusion::Separate);
  const auto times =
      phalanx::bench::alternate_rounds(fused, separate, 3, rounds, steps, phalanx::steady_seconds);
  std::printf("%s, batch %d, 1 thread, %d rounds x %d steps\n", preset.c_str(), batch, rounds, steps);
  std::printf("  separate  %.2f ms/step (median)   activations held by the top level: %zu bytes\n",
              phalanx::median(times.second_ms), separate.activation_bytes());
  std::printf("  fused     %.2f ms/step (median)   activations held by the top level: %zu bytes\n",
              phalanx::median(times.first_ms), fused.activation_bytes());
  std::printf("  separate / fused: %.3f (median of the per-round ratios)\n", phalanx::median(times.ratios));
  return 0;
}
