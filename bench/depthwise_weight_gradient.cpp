// The CPU backend's own depthwise weight gradient against oneDNN's, side by side in one run, at the
// depthwise layers of mobilenet_v2 and efficientnet_b0 on 32x32 images (batch 64): median ms per
// call over alternating rounds (a loaded machine slows both alike), and the ratio.
//   OMP_NUM_THREADS=2 ./phalanx_bench_depthwise_weight_gradient [rounds] [calls per round]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "activations.hpp"
#include "convolution.hpp"
#include "depthwise_weight_gradient.hpp"
#include "dnnl_context.hpp"
#include "phalanx/core/random.hpp"

using phalanx::backend::ConvolutionGeometry;
namespace cpu = phalanx::backend::cpu;

namespace {

struct Layer {
  std::string name;
  int channels, size, kernel, stride;
};

ConvolutionGeometry depthwise(const Layer& layer, int batch) {
  ConvolutionGeometry geometry =
      phalanx::backend::square_convolution(batch, layer.channels, layer.size, layer.channels, layer.kernel,
                                           layer.stride, layer.kernel / 2, false);
  geometry.groups = layer.channels;
  return geometry;
}

std::vector<float> random_values(std::size_t count, std::uint64_t stream) {
  phalanx::RandomStream random(7, stream);
  std::vector<float> values(count);
  for (float& value : values) value = random.next_uniform(-1.0f, 1.0f);
  return values;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <typename Call>
double milliseconds(const Call& call, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int index = 0; index < calls; ++index) call();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 5;
  const int batch = 64;
  // mobilenet_v2 (32x32 input: the stem halves it to 16x16) and efficientnet_b0's 5x5 layers.
  const std::vector<Layer> layers = {
      {"mobilenet_v2 features.1 32ch 16x16", 32, 16, 3, 1},   {"mobilenet_v2 96ch 16x16 s2", 96, 16, 3, 2},
      {"mobilenet_v2 144ch 8x8", 144, 8, 3, 1},               {"mobilenet_v2 192ch 4x4", 192, 4, 3, 1},
      {"mobilenet_v2 384ch 2x2", 384, 2, 3, 1},               {"mobilenet_v2 960ch 1x1", 960, 1, 3, 1},
      {"efficientnet_b0 240ch 4x4 5x5 s2", 240, 4, 5, 2},     {"efficientnet_b0 672ch 2x2 5x5", 672, 2, 5, 1}};
  cpu::DnnlContext context;
  cpu::Activations activations(context);
  cpu::Convolutions convolutions(context, activations);
  std::printf("%-38s %10s %10s %7s   %s\n", "layer (batch 64)", "own ms", "oneDNN ms", "ratio",
              "oneDNN's kernel (the backend runs the own loop where it is not a _dw one)");
  double own_total = 0.0, onednn_total = 0.0;
  std::vector<float> workspace;  // kept between calls, as the backend keeps it
  for (const Layer& layer : layers) {
    const ConvolutionGeometry geometry = depthwise(layer, batch);
    const auto input = random_values(static_cast<std::size_t>(geometry.input_elements()), 1);
    const auto grad_output = random_values(static_cast<std::size_t>(geometry.output_elements()), 2);
    std::vector<float> own(static_cast<std::size_t>(geometry.weight_elements()));
    std::vector<float> onednn(own.size());
    const auto run_own = [&] {
      cpu::depthwise_weight_gradient(geometry, input.data(), grad_output.data(), own.data(), nullptr, workspace);
    };
    const auto run_onednn = [&] {
      convolutions.backward_weights(geometry, input.data(), grad_output.data(), onednn.data(), nullptr);
    };
    run_own();
    run_onednn();  // primitive creation and first touch outside the timing
    float largest_difference = 0.0f;
    for (std::size_t index = 0; index < own.size(); ++index)
      largest_difference = std::max(largest_difference, std::abs(own[index] - onednn[index]));
    std::vector<double> own_times, onednn_times;
    for (int round = 0; round < rounds; ++round) {
      own_times.push_back(milliseconds(run_own, calls));
      onednn_times.push_back(milliseconds(run_onednn, calls));
    }
    const double own_median = median(own_times), onednn_median = median(onednn_times);
    own_total += own_median;
    onednn_total += onednn_median;
    std::printf("%-38s %10.3f %10.3f %6.2fx   %s (largest difference %.2g)\n", layer.name.c_str(), own_median,
                onednn_median, onednn_median / own_median,
                convolutions.backward_weights_implementation(geometry).c_str(),
                static_cast<double>(largest_difference));
  }
  std::printf("%-38s %10.3f %10.3f %6.2fx\n", "sum", own_total, onednn_total, onednn_total / own_total);
  return 0;
}
