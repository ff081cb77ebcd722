// Google Benchmark timings of the CPU backend's hot ops at the fmnist_cnn shapes, batch 64:
// conv 1->32 3x3 pad 1 on 28x28, conv 32->64 3x3 pad 1 on 14x14, 2x2 max pooling and batch norm
// after each, linear 3136->128 and 128->10, ReLU (alone and fused into the op before it), and
// optimizer steps over all parameters; convolutions and linear layers in fp32 and in bf16 compute
// (train.precision: bf16, argument bf16:1). Run:
// OMP_NUM_THREADS=1 ./phalanx_bench_backend_ops (the second argument of each benchmark is the backend's
// thread count, so 1 and 2 threads run side by side).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "phalanx/backend/backend.hpp"

namespace {

using phalanx::backend::Backend;
using phalanx::backend::BatchNormGeometry;
using phalanx::backend::ConvolutionGeometry;
using phalanx::backend::LinearGeometry;
using phalanx::backend::PoolingGeometry;

constexpr int batch = 64;

// A host buffer owned by the backend, filled with a deterministic pattern of small values.
class Buffer {
 public:
  Buffer(Backend& backend, std::size_t count) : backend_(backend), bytes_(count * sizeof(float)) {
    data_ = static_cast<float*>(backend_.allocate(bytes_));
    for (std::size_t i = 0; i < count; ++i) data_[i] = static_cast<float>(i * 7919 % 17) / 17.0f - 0.5f;
  }
  ~Buffer() { backend_.deallocate(data_, bytes_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  float* data() const { return data_; }

 private:
  Backend& backend_;
  std::size_t bytes_;
  float* data_;
};

// The backend of a convolution or linear benchmark: range(1) threads, bf16 compute when range(2) is 1.
std::unique_ptr<Backend> compute_backend(const benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  if (state.range(2) == 1) backend->set_compute_precision(phalanx::backend::ComputePrecision::BFloat16);
  return backend;
}

ConvolutionGeometry convolution_layer(int layer) {
  ConvolutionGeometry geometry;
  geometry.batch = batch;
  geometry.in_channels = layer == 0 ? 1 : 32;
  geometry.in_height = geometry.in_width = layer == 0 ? 28 : 14;
  geometry.out_channels = layer == 0 ? 32 : 64;
  geometry.kernel_height = geometry.kernel_width = 3;
  geometry.padding = 1;
  return geometry;
}

PoolingGeometry pooling_layer(int layer) {
  PoolingGeometry geometry;
  geometry.batch = batch;
  geometry.channels = layer == 0 ? 32 : 64;
  geometry.in_height = geometry.in_width = layer == 0 ? 28 : 14;
  return geometry;
}

LinearGeometry linear_layer(int layer) {
  return layer == 0 ? LinearGeometry{batch, 3136, 128} : LinearGeometry{batch, 128, 10};
}

std::size_t input_count(const ConvolutionGeometry& geometry) {
  return std::size_t(geometry.batch) * geometry.in_channels * geometry.in_height * geometry.in_width;
}
std::size_t output_count(const ConvolutionGeometry& geometry) {
  return std::size_t(geometry.batch) * geometry.out_channels * geometry.out_height() * geometry.out_width();
}
std::size_t weight_count(const ConvolutionGeometry& geometry) {
  return std::size_t(geometry.out_channels) * geometry.in_channels * geometry.kernel_height *
         geometry.kernel_width;
}

void BM_ConvolutionForward(benchmark::State& state) {
  auto backend = compute_backend(state);
  const ConvolutionGeometry geometry = convolution_layer(static_cast<int>(state.range(0)));
  Buffer input(*backend, input_count(geometry)), weight(*backend, weight_count(geometry)),
      bias(*backend, geometry.out_channels), output(*backend, output_count(geometry));
  for (auto _ : state) {
    backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
    backend->synchronize();
  }
}

void BM_ConvolutionBackwardData(benchmark::State& state) {
  auto backend = compute_backend(state);
  const ConvolutionGeometry geometry = convolution_layer(static_cast<int>(state.range(0)));
  Buffer grad_output(*backend, output_count(geometry)), weight(*backend, weight_count(geometry)),
      grad_input(*backend, input_count(geometry));
  for (auto _ : state) {
    backend->convolution_backward_data(geometry, grad_output.data(), weight.data(), grad_input.data());
    backend->synchronize();
  }
}

void BM_ConvolutionBackwardWeights(benchmark::State& state) {
  auto backend = compute_backend(state);
  const ConvolutionGeometry geometry = convolution_layer(static_cast<int>(state.range(0)));
  Buffer input(*backend, input_count(geometry)), grad_output(*backend, output_count(geometry)),
      grad_weight(*backend, weight_count(geometry)), grad_bias(*backend, geometry.out_channels);
  for (auto _ : state) {
    backend->convolution_backward_weights(geometry, input.data(), grad_output.data(), grad_weight.data(),
                                          grad_bias.data());
    backend->synchronize();
  }
}

// Both directions in one call, as nn::Convolution makes it (the CPU backend runs the two ops above;
// in bf16 it converts grad_output once for both).
void BM_ConvolutionBackward(benchmark::State& state) {
  auto backend = compute_backend(state);
  const ConvolutionGeometry geometry = convolution_layer(static_cast<int>(state.range(0)));
  Buffer input(*backend, input_count(geometry)), grad_output(*backend, output_count(geometry)),
      weight(*backend, weight_count(geometry)), grad_input(*backend, input_count(geometry)),
      grad_weight(*backend, weight_count(geometry)), grad_bias(*backend, geometry.out_channels);
  for (auto _ : state) {
    backend->convolution_backward(geometry, input.data(), grad_output.data(), weight.data(),
                                  grad_input.data(), grad_weight.data(), grad_bias.data());
    backend->synchronize();
  }
}

void BM_MaxPoolingForward(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const PoolingGeometry geometry = pooling_layer(static_cast<int>(state.range(0)));
  const std::size_t in = std::size_t(batch) * geometry.channels * geometry.in_height * geometry.in_width;
  Buffer input(*backend, in), output(*backend, in / 4);
  std::vector<std::uint8_t> workspace(backend->pooling_workspace_bytes(geometry));
  for (auto _ : state) {
    backend->pooling_forward(geometry, input.data(), output.data(), workspace.data());
    backend->synchronize();
  }
}

void BM_MaxPoolingBackward(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const PoolingGeometry geometry = pooling_layer(static_cast<int>(state.range(0)));
  const std::size_t in = std::size_t(batch) * geometry.channels * geometry.in_height * geometry.in_width;
  Buffer input(*backend, in), output(*backend, in / 4), grad_input(*backend, in);
  std::vector<std::uint8_t> workspace(backend->pooling_workspace_bytes(geometry));
  backend->pooling_forward(geometry, input.data(), output.data(), workspace.data());
  for (auto _ : state) {
    backend->pooling_backward(geometry, output.data(), workspace.data(), grad_input.data());
    backend->synchronize();
  }
}

void BM_LinearForward(benchmark::State& state) {
  auto backend = compute_backend(state);
  const LinearGeometry geometry = linear_layer(static_cast<int>(state.range(0)));
  Buffer input(*backend, std::size_t(batch) * geometry.in_features),
      weight(*backend, std::size_t(geometry.out_features) * geometry.in_features),
      bias(*backend, geometry.out_features), output(*backend, std::size_t(batch) * geometry.out_features);
  for (auto _ : state) {
    backend->linear_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
    backend->synchronize();
  }
}

void BM_LinearBackward(benchmark::State& state) {
  auto backend = compute_backend(state);
  const LinearGeometry geometry = linear_layer(static_cast<int>(state.range(0)));
  const std::size_t weights = std::size_t(geometry.out_features) * geometry.in_features;
  Buffer input(*backend, std::size_t(batch) * geometry.in_features), weight(*backend, weights),
      grad_output(*backend, std::size_t(batch) * geometry.out_features),
      grad_input(*backend, std::size_t(batch) * geometry.in_features), grad_weight(*backend, weights),
      grad_bias(*backend, geometry.out_features);
  for (auto _ : state) {
    backend->linear_backward(geometry, input.data(), weight.data(), grad_output.data(), grad_input.data(),
                             grad_weight.data(), grad_bias.data());
    backend->synchronize();
  }
}

BatchNormGeometry batch_norm_layer(int layer) {
  return layer == 0 ? BatchNormGeometry{batch, 32, 28 * 28, 1e-5f}
                    : BatchNormGeometry{batch, 64, 14 * 14, 1e-5f};
}

void BM_BatchNormForwardTraining(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const BatchNormGeometry geometry = batch_norm_layer(static_cast<int>(state.range(0)));
  const std::size_t count = std::size_t(geometry.batch) * geometry.spatial * geometry.channels;
  Buffer input(*backend, count), output(*backend, count), gamma(*backend, geometry.channels),
      beta(*backend, geometry.channels), running_mean(*backend, geometry.channels),
      running_variance(*backend, geometry.channels), saved_mean(*backend, geometry.channels),
      saved_inverse_std(*backend, geometry.channels);
  for (auto _ : state) {
    backend->batch_norm_forward_training(geometry, input.data(), gamma.data(), beta.data(), output.data(),
                                         running_mean.data(), running_variance.data(), 0.1f,
                                         saved_mean.data(), saved_inverse_std.data());
    backend->synchronize();
  }
}

void BM_BatchNormBackward(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const BatchNormGeometry geometry = batch_norm_layer(static_cast<int>(state.range(0)));
  const std::size_t count = std::size_t(geometry.batch) * geometry.spatial * geometry.channels;
  Buffer input(*backend, count), grad_output(*backend, count), grad_input(*backend, count),
      gamma(*backend, geometry.channels), saved_mean(*backend, geometry.channels),
      saved_inverse_std(*backend, geometry.channels), grad_gamma(*backend, geometry.channels),
      grad_beta(*backend, geometry.channels);
  for (auto _ : state) {
    backend->batch_norm_backward(geometry, input.data(), grad_output.data(), gamma.data(), saved_mean.data(),
                                 saved_inverse_std.data(), grad_input.data(), grad_gamma.data(),
                                 grad_beta.data());
    backend->synchronize();
  }
}

// ReLU forward + backward over the first convolution's output (64 x 28 x 28 x 32).
void BM_ReluForwardBackward(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const std::int64_t count = std::int64_t(batch) * 28 * 28 * 32;
  Buffer input(*backend, count), output(*backend, count), grad_output(*backend, count),
      grad_input(*backend, count);
  for (auto _ : state) {
    backend->relu_forward(count, input.data(), output.data());
    backend->relu_backward(count, output.data(), grad_output.data(), grad_input.data());
    backend->synchronize();
  }
}

// A producer and the ReLU after it: {layer, threads, 0} the op then relu_forward in place (what a
// model without fusion runs), {layer, threads, 1} the op with geometry.activation = Relu. Layer 0
// and 1 are the fmnist_cnn convolutions and linear layers; batch norm runs at the convolutions'
// output shapes, and add + ReLU (a residual block's end) over the same counts.
void BM_ConvolutionRelu(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  ConvolutionGeometry geometry = convolution_layer(static_cast<int>(state.range(0)));
  const bool fused = state.range(2) != 0;
  if (fused) geometry.activation = phalanx::backend::FusedActivation::Relu;
  const auto count = static_cast<std::int64_t>(output_count(geometry));
  Buffer input(*backend, input_count(geometry)), weight(*backend, weight_count(geometry)),
      bias(*backend, geometry.out_channels), output(*backend, output_count(geometry));
  for (auto _ : state) {
    backend->convolution_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
    if (!fused) backend->relu_forward(count, output.data(), output.data());
    backend->synchronize();
  }
}

void BM_LinearRelu(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  LinearGeometry geometry = linear_layer(static_cast<int>(state.range(0)));
  const bool fused = state.range(2) != 0;
  if (fused) geometry.activation = phalanx::backend::FusedActivation::Relu;
  const std::int64_t count = std::int64_t{geometry.batch} * geometry.out_features;
  Buffer input(*backend, std::size_t(geometry.batch) * geometry.in_features),
      weight(*backend, std::size_t(geometry.out_features) * geometry.in_features),
      bias(*backend, geometry.out_features), output(*backend, count);
  for (auto _ : state) {
    backend->linear_forward(geometry, input.data(), weight.data(), bias.data(), output.data());
    if (!fused) backend->relu_forward(count, output.data(), output.data());
    backend->synchronize();
  }
}

void BM_BatchNormRelu(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const ConvolutionGeometry convolution = convolution_layer(static_cast<int>(state.range(0)));
  BatchNormGeometry geometry{batch, convolution.out_channels,
                             convolution.out_height() * convolution.out_width()};
  const bool fused = state.range(2) != 0;
  if (fused) geometry.activation = phalanx::backend::FusedActivation::Relu;
  const auto count = static_cast<std::int64_t>(output_count(convolution));
  Buffer input(*backend, count), output(*backend, count), gamma(*backend, geometry.channels),
      beta(*backend, geometry.channels), running_mean(*backend, geometry.channels),
      running_variance(*backend, geometry.channels), saved_mean(*backend, geometry.channels),
      saved_inverse_std(*backend, geometry.channels);
  backend->fill(running_variance.data(), geometry.channels, 1.0f);
  for (auto _ : state) {
    backend->batch_norm_forward_training(geometry, input.data(), gamma.data(), beta.data(), output.data(),
                                         running_mean.data(), running_variance.data(), 0.1f,
                                         saved_mean.data(), saved_inverse_std.data());
    if (!fused) backend->relu_forward(count, output.data(), output.data());
    backend->synchronize();
  }
}

void BM_AddRelu(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const auto count =
      static_cast<std::int64_t>(output_count(convolution_layer(static_cast<int>(state.range(0)))));
  const bool fused = state.range(2) != 0;
  Buffer a(*backend, count), b(*backend, count), output(*backend, count);
  for (auto _ : state) {
    if (fused) {
      backend->add_relu(count, a.data(), b.data(), output.data());
    } else {
      backend->add(count, a.data(), b.data(), output.data());
      backend->relu_forward(count, output.data(), output.data());
    }
    backend->synchronize();
  }
}

// One optimizer step over fmnist_cnn's 421,642 parameters.
constexpr std::int64_t fashion_parameters = 320 + 18496 + 401536 + 1290;

void BM_SgdNesterovStep(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  Buffer parameters(*backend, fashion_parameters), gradients(*backend, fashion_parameters),
      momentum(*backend, fashion_parameters);
  const phalanx::backend::SgdHyperparameters hyperparameters{0.01f, 0.9f, 5e-4f, true};
  for (auto _ : state) {
    backend->sgd_step(fashion_parameters, hyperparameters, parameters.data(), gradients.data(),
                      momentum.data());
    backend->synchronize();
  }
}

void BM_AdamWStep(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  Buffer parameters(*backend, fashion_parameters), gradients(*backend, fashion_parameters),
      first(*backend, fashion_parameters), second(*backend, fashion_parameters);
  backend->fill(second.data(), fashion_parameters, 0.0f);
  phalanx::backend::AdamWHyperparameters hyperparameters;
  for (auto _ : state) {
    backend->adamw_step(fashion_parameters, hyperparameters, parameters.data(), gradients.data(),
                        first.data(), second.data());
    backend->synchronize();
  }
}

// AdamW where a third of the parameters get zero gradients, as a dead ReLU unit's weights do (a
// third of fc1's moments in the main job by its fourth epoch): their first moments decay by beta1
// each step. They start at 1e-30 and reach the subnormal range after 173 steps, so the 100 timed
// steps that follow 180 untimed ones are the steps where an unflushed moment would be subnormal.
void BM_AdamWStepDeadUnits(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  Buffer parameters(*backend, fashion_parameters), gradients(*backend, fashion_parameters),
      first(*backend, fashion_parameters), second(*backend, fashion_parameters);
  for (std::int64_t i = 0; i < fashion_parameters; ++i) {
    const bool dead = i % 3 == 0;
    gradients.data()[i] = dead ? 0.0f : gradients.data()[i] * 1e-3f;
    first.data()[i] = dead ? 1e-30f : gradients.data()[i];
    second.data()[i] = dead ? 1e-12f : gradients.data()[i] * gradients.data()[i];
  }
  phalanx::backend::AdamWHyperparameters hyperparameters;
  hyperparameters.learning_rate = 1e-3f;
  for (int warm_up = 0; warm_up < 180; ++warm_up) {
    hyperparameters.step += 1;
    backend->adamw_step(fashion_parameters, hyperparameters, parameters.data(), gradients.data(),
                        first.data(), second.data());
  }
  backend->synchronize();
  for (auto _ : state) {
    hyperparameters.step += 1;
    backend->adamw_step(fashion_parameters, hyperparameters, parameters.data(), gradients.data(),
                        first.data(), second.data());
    backend->synchronize();
  }
}

// Dynamic loss scaling's extra work per step: the finite check and the unscaling pass over all
// gradients, against the AdamW step they precede.
void BM_LossScaleCheckAndUnscale(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  Buffer gradients(*backend, fashion_parameters);
  for (auto _ : state) {
    benchmark::DoNotOptimize(backend->all_finite(fashion_parameters, gradients.data()));
    backend->scale(fashion_parameters, 1.0f, gradients.data());
    backend->synchronize();
  }
}

// Input of a batch of 64 3x32x32 images: plain normalisation against the fused augment + normalise
// op a GPU rank runs (here on the CPU backend, its reference implementation).
void BM_InputNormalize(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const std::int64_t pixels = std::int64_t{batch} * 32 * 32;
  std::vector<std::uint8_t> images(static_cast<std::size_t>(pixels * 3), 77);
  Buffer output(*backend, static_cast<std::size_t>(pixels * 3));
  const float mean[3] = {0.49f, 0.48f, 0.45f}, deviation[3] = {0.25f, 0.24f, 0.26f};
  const bool augment = state.range(0) != 0;
  std::vector<std::int32_t> draws;
  for (int sample = 0; sample < batch; ++sample) {
    draws.insert(draws.end(), {sample % 9 - 4, 4 - sample % 9, sample % 2, sample % 32 - 8, 31 - sample % 32,
                               sample % 16, sample % 8, sample % 2 ? 0 : 10, 12});  // half erase a 10 x 12
    draws.resize(draws.size() + phalanx::backend::augment_draw_words - 9, 0);       // no auto-augment ops
  }
  const phalanx::backend::AugmentGeometry geometry{batch, 32, 32, 3, 16};
  for (auto _ : state) {
    if (augment)
      backend->augment_normalize_images(geometry, images.data(), draws.data(), mean, deviation,
                                        output.data());
    else
      backend->normalize_images(images.data(), pixels, 3, mean, deviation, output.data());
    backend->synchronize();
  }
}

// A training step's loss as the trainer takes it: {0, threads} the synchronous call that returns
// the totals, {1, threads} the deferred call and the take a CPU rank makes every step (the totals
// kept in host memory); the difference is the deferred path's cost on CPU ranks.
void BM_TrainingLoss(benchmark::State& state) {
  auto backend = phalanx::backend::make_cpu_backend(static_cast<int>(state.range(1)));
  const int classes = 10;
  Buffer logits(*backend, std::size_t(batch) * classes), grad_logits(*backend, std::size_t(batch) * classes);
  std::vector<std::int32_t> labels(batch);
  for (int sample = 0; sample < batch; ++sample) labels[sample] = sample % classes;
  const bool deferred = state.range(0) != 0;
  double loss_sum = 0;
  for (auto _ : state) {
    if (deferred) {
      backend->softmax_cross_entropy_deferred(batch, classes, logits.data(), labels.data(), 0.1f,
                                              1.0f / batch, grad_logits.data());
      for (const auto& totals : backend->take_deferred_loss_totals()) loss_sum += totals.loss_sum;
    } else {
      loss_sum += backend
                      ->softmax_cross_entropy(batch, classes, logits.data(), labels.data(), 0.1f,
                                              1.0f / batch, grad_logits.data())
                      .loss_sum;
    }
  }
  benchmark::DoNotOptimize(loss_sum);
}

// Arguments: {layer (0 first, 1 second), threads}.
void layers_and_threads(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"layer", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
  for (int threads : {1, 2})
    for (int layer : {0, 1}) benchmark->Args({layer, threads});
}

// Arguments: {layer, threads, bf16 (0 fp32, 1 bf16 compute)}.
void layers_threads_and_precision(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"layer", "threads", "bf16"})->Unit(benchmark::kMillisecond)->UseRealTime();
  for (int threads : {1, 2})
    for (int layer : {0, 1})
      for (int bf16 : {0, 1}) benchmark->Args({layer, threads, bf16});
}

// Arguments: {unused, threads} for ops without layers.
// Both layers, 1 thread, plain then fused.
void layers_and_fusion(benchmark::internal::Benchmark* benchmark) {
  for (const int layer : {0, 1})
    for (const int fused : {0, 1}) benchmark->Args({layer, 1, fused});
  benchmark->ArgNames({"layer", "threads", "fused"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

void threads_only(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
  for (int threads : {1, 2}) benchmark->Args({0, threads});
}

BENCHMARK(BM_ConvolutionForward)->Apply(layers_threads_and_precision);
BENCHMARK(BM_ConvolutionBackwardData)->Apply(layers_threads_and_precision);
BENCHMARK(BM_ConvolutionBackwardWeights)->Apply(layers_threads_and_precision);
BENCHMARK(BM_ConvolutionBackward)->Apply(layers_threads_and_precision);
BENCHMARK(BM_MaxPoolingForward)->Apply(layers_and_threads);
BENCHMARK(BM_MaxPoolingBackward)->Apply(layers_and_threads);
BENCHMARK(BM_LinearForward)->Apply(layers_threads_and_precision);
BENCHMARK(BM_LinearBackward)->Apply(layers_threads_and_precision);
BENCHMARK(BM_BatchNormForwardTraining)->Apply(layers_and_threads);
BENCHMARK(BM_BatchNormBackward)->Apply(layers_and_threads);
BENCHMARK(BM_ReluForwardBackward)->Apply(threads_only);
BENCHMARK(BM_ConvolutionRelu)->Apply(layers_and_fusion);
BENCHMARK(BM_LinearRelu)->Apply(layers_and_fusion);
BENCHMARK(BM_BatchNormRelu)->Apply(layers_and_fusion);
BENCHMARK(BM_AddRelu)->Apply(layers_and_fusion);
BENCHMARK(BM_SgdNesterovStep)->Apply(threads_only);
BENCHMARK(BM_AdamWStep)->Apply(threads_only);
BENCHMARK(BM_AdamWStepDeadUnits)->Apply(threads_only)->Iterations(100);
BENCHMARK(BM_TrainingLoss)
    ->ArgNames({"deferred", "threads"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Args({0, 1})
    ->Args({1, 1});
BENCHMARK(BM_LossScaleCheckAndUnscale)->Apply(threads_only);
// Arguments: {augment (0: plain normalisation, 1: crop+flip+cutout+erasing fused), threads}.
BENCHMARK(BM_InputNormalize)
    ->ArgNames({"augment", "threads"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 2})
    ->Args({1, 2});

}  // namespace

BENCHMARK_MAIN();
