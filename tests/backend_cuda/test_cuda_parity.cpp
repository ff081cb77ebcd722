// CPU-versus-CUDA parity for every op of the Backend interface (ggml's test-backend-ops idea): one
// table of cases per op family, each case run on both backends with the same seeded inputs and
// compared output by output with a tolerance stated next to it. Geometries cover the fmnist_cnn
// layers, stride 2, padding, no bias, ResNet-like 3x3 64->64 and 1x1 projections, odd batches;
// then a conv/BN/ReLU/pool/linear/loss chain forward and backward, optimizer runs of several
// steps, and dropout masks compared bit for bit.
#include <array>
#include <cstring>

#include "backend/backend_test_support.hpp"
#include "backend_cuda/cuda_test_support.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::testing {
namespace {

using backend::AdamWHyperparameters;
using backend::Backend;
using backend::BatchNormGeometry;
using backend::ConvolutionGeometry;
using backend::LinearGeometry;
using backend::PoolingGeometry;
using backend::PoolingKind;
using backend::SgdHyperparameters;

// Tolerances (scaled_max_difference, see cuda_test_support.hpp).
constexpr double exact = 0.0;             // same arithmetic on both: element-wise ops, dropout, optimizers
constexpr double summation_order = 1e-5;  // same formula, sums in another order (pooling, bias, loss)
constexpr double gemm = 1e-4;             // long fp32 dot products (linear, direct convolution, batch norm)
constexpr double wide_3x3_bound = 2e-3;   // wide 3x3 stride-1 convs: see convolution_tolerance

// ---- element-wise --------------------------------------------------------------------------

std::vector<OpCase> elementwise_cases() {
  std::vector<OpCase> cases;
  constexpr std::int64_t count = 100003;  // not a multiple of any block size
  cases.push_back({"fill", exact, [](Backend& b) {
                     Tensor data = empty_floats(b, count);
                     b.fill(data.data(), count, 0.375f);
                     return Outputs{{"data", as_doubles(download(b, data))}};
                   }});
  for (const int channels : {1, 3}) {
    cases.push_back(
        {"normalize_images_" + std::to_string(channels) + "_channels", exact, [channels](Backend& b) {
           constexpr std::int64_t pixels = 4099;
           Tensor images = upload(b, random_bytes(pixels * channels, 1));
           Tensor mean = upload(b, std::vector<float>{0.2860f, 0.45f, 0.5f});
           Tensor deviation = upload(b, std::vector<float>{0.3530f, 0.22f, 0.27f});
           Tensor output = empty_floats(b, pixels * channels);
           b.normalize_images(images.data_as<std::uint8_t>(), pixels, channels, mean.data(), deviation.data(),
                              output.data());
           return Outputs{{"output", as_doubles(download(b, output))}};
         }});
  }
  // Crop shifts beyond the image, both flips, cutout squares clipped at every edge.
  for (const int channels : {1, 3}) {
    cases.push_back(
        {"augment_normalize_images_" + std::to_string(channels) + "_channels", exact, [channels](Backend& b) {
           const backend::AugmentGeometry geometry{33, 9, 7, channels, 5};
           Tensor images = upload(b, random_bytes(33 * 9 * 7 * channels, 5));
           const std::vector<std::int32_t> draws = random_augment_draws(geometry.batch, 6);
           Tensor draw_tensor = upload(b, draws);
           Tensor mean = upload(b, std::vector<float>{0.2860f, 0.45f, 0.5f});
           Tensor deviation = upload(b, std::vector<float>{0.3530f, 0.22f, 0.27f});
           Tensor output = empty_floats(b, 33 * 9 * 7 * channels);
           b.augment_normalize_images(geometry, images.data_as<std::uint8_t>(),
                                      draw_tensor.data_as<std::int32_t>(), mean.data(), deviation.data(),
                                      output.data());
           return Outputs{{"output", as_doubles(download(b, output))}};
         }});
  }
  // TrivialAugment's and RandAugment's ops between the crop and the cutout, one block per image:
  // images smaller and larger than a block's threads, 1 and 3 channels, 4 random ops each.
  for (const auto& [height, width, channels] :
       {std::array<int, 3>{9, 7, 1}, std::array<int, 3>{9, 7, 3}, std::array<int, 3>{28, 28, 1},
        std::array<int, 3>{20, 23, 3}}) {
    cases.push_back({"augment_operations_normalize_images_" + std::to_string(height) + "x" +
                         std::to_string(width) + "x" + std::to_string(channels),
                     exact, [height, width, channels](Backend& b) {
                       const backend::AugmentGeometry geometry{29, height, width, channels, 5, true};
                       const std::int64_t values = std::int64_t{29} * height * width * channels;
                       Tensor images = upload(b, random_bytes(static_cast<std::size_t>(values), 5));
                       Tensor draw_tensor =
                           upload(b, random_augment_draws(geometry.batch, 7, true, height, width));
                       Tensor mean = upload(b, std::vector<float>{0.2860f, 0.45f, 0.5f});
                       Tensor deviation = upload(b, std::vector<float>{0.3530f, 0.22f, 0.27f});
                       Tensor output = empty_floats(b, values);
                       b.augment_normalize_images(geometry, images.data_as<std::uint8_t>(),
                                                  draw_tensor.data_as<std::int32_t>(), mean.data(),
                                                  deviation.data(), output.data());
                       return Outputs{{"output", as_doubles(download(b, output))}};
                     }});
  }
  cases.push_back(
      {"all_finite", exact, [](Backend& b) {
         std::vector<double> answers;
         for (const std::int64_t position : {std::int64_t{-1}, std::int64_t{0}, count / 2, count - 1}) {
           std::vector<float> values = random_values(count, 7);
           if (position >= 0) values[static_cast<std::size_t>(position)] = position % 2 ? NAN : INFINITY;
           Tensor data = upload(b, values);
           answers.push_back(b.all_finite(count, data.data()) ? 1.0 : 0.0);
         }
         return Outputs{{"answers", answers}};
       }});
  cases.push_back({"relu_forward_and_backward", exact, [](Backend& b) {
                     Tensor input = upload(b, random_values(count, 2));
                     Tensor grad_output = upload(b, random_values(count, 3));
                     Tensor output = empty_floats(b, count), grad_input = empty_floats(b, count);
                     b.relu_forward(count, input.data(), output.data());
                     b.relu_backward(count, output.data(), grad_output.data(), grad_input.data());
                     return Outputs{{"output", as_doubles(download(b, output))},
                                    {"grad_input", as_doubles(download(b, grad_input))}};
                   }});
  cases.push_back({"relu_in_place", exact, [](Backend& b) {
                     Tensor data = upload(b, random_values(count, 4));
                     b.relu_forward(count, data.data(), data.data());
                     return Outputs{{"data", as_doubles(download(b, data))}};
                   }});
  cases.push_back({"add_accumulate_scale", exact, [](Backend& b) {
                     Tensor a = upload(b, random_values(count, 5)), c = upload(b, random_values(count, 6));
                     Tensor sum = empty_floats(b, count);
                     b.add(count, a.data(), c.data(), sum.data());
                     b.accumulate(count, a.data(), c.data());
                     b.scale(count, -1.75f, a.data());
                     return Outputs{{"sum", as_doubles(download(b, sum))},
                                    {"accumulated", as_doubles(download(b, c))},
                                    {"scaled", as_doubles(download(b, a))}};
                   }});
  // Flatten shapes: fmnist_cnn's 7x7x64, an odd one, a single row, and more samples than a grid holds.
  struct TransposeShape {
    std::int64_t batch, rows, columns;
  };
  for (const TransposeShape shape : {TransposeShape{5, 49, 64}, TransposeShape{3, 37, 19},
                                     TransposeShape{2, 1, 100}, TransposeShape{70000, 2, 3}}) {
    cases.push_back(
        {"transpose_samples_" + std::to_string(shape.batch) + "x" + std::to_string(shape.rows) + "x" +
             std::to_string(shape.columns),
         exact, [shape](Backend& b) {
           const std::int64_t total = shape.batch * shape.rows * shape.columns;
           Tensor input = upload(b, random_values(total, 7));
           Tensor output = empty_floats(b, total), back = empty_floats(b, total);
           b.transpose_samples(shape.batch, shape.rows, shape.columns, input.data(), output.data());
           b.transpose_samples(shape.batch, shape.columns, shape.rows, output.data(), back.data());
           return Outputs{{"transposed", as_doubles(download(b, output))},
                          {"transposed_back", as_doubles(download(b, back))}};
         }});
  }
  return cases;
}

// Copies: host round trip, device copy, and a copy between overlapping ranges (memmove semantics).
std::vector<OpCase> copy_cases() {
  std::vector<OpCase> cases;
  cases.push_back({"copies", exact, [](Backend& b) {
                     constexpr std::int64_t count = 10007;
                     const std::vector<float> values = random_values(count, 8);
                     Tensor first = upload(b, values);
                     Tensor second = empty_floats(b, count);
                     b.copy(second.data(), first.data(), count * sizeof(float));
                     // Shift forward and backward by 3 floats within one buffer.
                     b.copy(first.data() + 3, first.data(), (count - 3) * sizeof(float));
                     Tensor third = upload(b, values);
                     b.copy(third.data(), third.data() + 5, (count - 5) * sizeof(float));
                     return Outputs{{"copied", as_doubles(download(b, second))},
                                    {"shifted_up", as_doubles(download(b, first))},
                                    {"shifted_down", as_doubles(download(b, third))}};
                   }});
  return cases;
}

// ---- dropout -------------------------------------------------------------------------------

std::vector<OpCase> dropout_cases() {
  std::vector<OpCase> cases;
  for (const float probability : {0.0f, 0.1f, 0.5f, 1.0f}) {
    cases.push_back({"dropout_p" + std::to_string(probability), exact, [probability](Backend& b) {
                       constexpr std::int64_t count = 40001;  // a partial Philox block at the end
                       Tensor input = upload(b, random_values(count, 9));
                       Tensor grad_output = upload(b, random_values(count, 10));
                       Tensor output = empty_floats(b, count), grad_input = empty_floats(b, count);
                       Tensor mask(b, Shape{count}, DType::UInt8);
                       b.dropout_forward(count, probability, 1234567, 42, input.data(), output.data(),
                                         mask.data_as<std::uint8_t>());
                       b.dropout_backward(count, probability, mask.data_as<std::uint8_t>(),
                                          grad_output.data(), grad_input.data());
                       return Outputs{{"output", as_doubles(download(b, output))},
                                      {"mask", as_doubles(download<std::uint8_t>(b, mask))},
                                      {"grad_input", as_doubles(download(b, grad_input))}};
                     }});
  }
  return cases;
}

// ---- convolution -----------------------------------------------------------------------------

ConvolutionGeometry convolution(int batch, int in_channels, int height, int width, int out_channels,
                                int kernel_height, int kernel_width, int stride, int padding, bool has_bias) {
  ConvolutionGeometry g;
  g.batch = batch;
  g.in_channels = in_channels;
  g.in_height = height;
  g.in_width = width;
  g.out_channels = out_channels;
  g.kernel_height = kernel_height;
  g.kernel_width = kernel_width;
  g.stride = stride;
  g.padding = padding;
  g.has_bias = has_bias;
  return g;
}

ConvolutionGeometry grouped(ConvolutionGeometry g, int groups, int dilation) {
  g.groups = groups;
  g.dilation = dilation;
  return g;
}

// Wide 3x3 stride-1 convolutions keep the looser bound set when the CPU backend (on oneDNN 2.x) ran
// them with Winograd; oneDNN 3 runs them direct, so it can go to `gemm` once a GPU run shows that
// cuDNN's algorithm for these shapes stays within it.
double convolution_tolerance(const ConvolutionGeometry& g) {
  const bool wide_3x3 = g.kernel_height == 3 && g.kernel_width == 3 && g.stride == 1 && g.in_channels >= 32 &&
                        g.out_channels >= 32;
  return wide_3x3 ? wide_3x3_bound : gemm;
}

void add_convolution_cases(std::vector<OpCase>& cases, const std::string& label,
                           const ConvolutionGeometry& g) {
  const double tolerance = convolution_tolerance(g);
  // Weights scaled like PyTorch's default initialisation keep outputs of order one.
  const float weight_bound =
      1.0f / std::sqrt(static_cast<float>(g.group_in_channels() * g.kernel_height * g.kernel_width));
  cases.push_back({"convolution_forward_" + label, tolerance, [g, weight_bound](Backend& b) {
                     Tensor input = upload(b, random_values(g.input_elements(), 11));
                     Tensor weight =
                         upload(b, random_values(g.weight_elements(), 12, -weight_bound, weight_bound));
                     Tensor bias = upload(b, random_values(g.out_channels, 13));
                     Tensor output = empty_floats(b, g.output_elements());
                     b.convolution_forward(g, input.data(), weight.data(), g.has_bias ? bias.data() : nullptr,
                                           output.data());
                     return Outputs{{"output", as_doubles(download(b, output))}};
                   }});
  cases.push_back({"convolution_backward_data_" + label, tolerance, [g, weight_bound](Backend& b) {
                     Tensor grad_output = upload(b, random_values(g.output_elements(), 14));
                     Tensor weight =
                         upload(b, random_values(g.weight_elements(), 12, -weight_bound, weight_bound));
                     Tensor grad_input = empty_floats(b, g.input_elements());
                     b.convolution_backward_data(g, grad_output.data(), weight.data(), grad_input.data());
                     return Outputs{{"grad_input", as_doubles(download(b, grad_input))}};
                   }});
  cases.push_back({"convolution_backward_weights_" + label, tolerance, [g](Backend& b) {
                     Tensor input = upload(b, random_values(g.input_elements(), 11));
                     Tensor grad_output = upload(b, random_values(g.output_elements(), 14));
                     Tensor grad_weight = empty_floats(b, g.weight_elements());
                     Tensor grad_bias = empty_floats(b, g.out_channels);
                     b.convolution_backward_weights(g, input.data(), grad_output.data(), grad_weight.data(),
                                                    g.has_bias ? grad_bias.data() : nullptr);
                     Outputs outputs{{"grad_weight", as_doubles(download(b, grad_weight))}};
                     if (g.has_bias) outputs.push_back({"grad_bias", as_doubles(download(b, grad_bias))});
                     return outputs;
                   }});
}

std::vector<OpCase> convolution_cases() {
  std::vector<OpCase> cases;
  // fmnist_cnn's two layers, at its batch and at an odd one.
  add_convolution_cases(cases, "fmnist_conv1_b64", convolution(64, 1, 28, 28, 32, 3, 3, 1, 1, true));
  add_convolution_cases(cases, "fmnist_conv2_b64", convolution(64, 32, 14, 14, 64, 3, 3, 1, 1, true));
  add_convolution_cases(cases, "fmnist_conv2_b7", convolution(7, 32, 14, 14, 64, 3, 3, 1, 1, true));
  // Stride 2 with padding on an odd size; no padding; no bias.
  add_convolution_cases(cases, "stride2_pad1_odd", convolution(3, 16, 15, 15, 24, 3, 3, 2, 1, true));
  add_convolution_cases(cases, "no_padding_no_bias", convolution(5, 8, 10, 10, 12, 3, 3, 1, 0, false));
  // ResNet: the 3x3 64->64 block conv, a 1x1 stride-2 projection, a 7x7 stride-2 stem.
  add_convolution_cases(cases, "resnet_3x3_64_64", convolution(4, 64, 8, 8, 64, 3, 3, 1, 1, false));
  add_convolution_cases(cases, "resnet_1x1_projection", convolution(4, 64, 8, 8, 128, 1, 1, 2, 0, false));
  add_convolution_cases(cases, "resnet_stem_7x7", convolution(2, 3, 32, 32, 16, 7, 7, 2, 3, false));
  // A non-square kernel checks the weight layout transposes along both kernel axes.
  add_convolution_cases(cases, "kernel_1x3", convolution(3, 6, 9, 11, 10, 1, 3, 1, 1, true));
  // Channel counts that are no multiple of 8 (tensor-core kernels want 8; cuDNN must fall back),
  // on non-square images, with and without bias.
  add_convolution_cases(cases, "odd_channels_3_to_5", convolution(4, 3, 13, 11, 5, 3, 3, 1, 1, true));
  add_convolution_cases(cases, "odd_channels_13_to_7_stride2",
                        convolution(3, 13, 10, 9, 7, 3, 3, 2, 1, false));
  add_convolution_cases(cases, "pointwise_17_to_9", convolution(5, 17, 7, 6, 9, 1, 1, 1, 0, true));
  // A 5x5 kernel with padding 2; a 2x2 stride-2 patchify; a window that fits once (1x1 output).
  add_convolution_cases(cases, "kernel_5x5_pad2", convolution(2, 6, 12, 12, 10, 5, 5, 1, 2, true));
  add_convolution_cases(cases, "patchify_2x2_stride2", convolution(3, 8, 16, 14, 16, 2, 2, 2, 0, true));
  add_convolution_cases(cases, "one_output_pixel", convolution(3, 4, 3, 3, 6, 3, 3, 1, 0, true));
  // ResNet's stride-2 3x3 downsampling conv, where strided backward-data algorithms differ most.
  add_convolution_cases(cases, "resnet_3x3_stride2_64_128",
                        convolution(2, 64, 14, 14, 128, 3, 3, 2, 1, false));
  // Groups and dilation: MobileNet's depthwise 3x3 (stride 1 and 2, where the weights need no
  // transposition), a depthwise layer with channel multiplier 2, ResNeXt's 32-group 3x3, a grouped
  // 1x3 (the per-group transposition along both kernel axes), and dilated layers.
  add_convolution_cases(cases, "depthwise_3x3_32",
                        grouped(convolution(4, 32, 12, 12, 32, 3, 3, 1, 1, false), 32, 1));
  add_convolution_cases(cases, "depthwise_3x3_stride2_24",
                        grouped(convolution(3, 24, 11, 13, 24, 3, 3, 2, 1, true), 24, 1));
  add_convolution_cases(cases, "depthwise_multiplier2_5x5",
                        grouped(convolution(2, 8, 9, 9, 16, 5, 5, 1, 2, true), 8, 1));
  add_convolution_cases(cases, "resnext_3x3_g32_128",
                        grouped(convolution(2, 128, 8, 8, 128, 3, 3, 1, 1, false), 32, 1));
  add_convolution_cases(cases, "grouped_1x3_g3",
                        grouped(convolution(3, 12, 7, 9, 6, 1, 3, 1, 1, true), 3, 1));
  add_convolution_cases(cases, "dilated_3x3_d2",
                        grouped(convolution(3, 16, 12, 12, 8, 3, 3, 1, 2, true), 1, 2));
  add_convolution_cases(cases, "dilated_grouped_stride2_d3",
                        grouped(convolution(2, 12, 15, 14, 12, 3, 3, 2, 3, false), 4, 3));
  return cases;
}

// ---- pooling ---------------------------------------------------------------------------------

PoolingGeometry pooling(PoolingKind kind, int batch, int channels, int height, int width, int kernel,
                        int stride, int padding) {
  PoolingGeometry g;
  g.kind = kind;
  g.batch = batch;
  g.channels = channels;
  g.in_height = height;
  g.in_width = width;
  g.kernel_height = g.kernel_width = kernel;
  g.stride = stride;
  g.padding = padding;
  return g;
}

void add_pooling_cases(std::vector<OpCase>& cases, const std::string& label, const PoolingGeometry& g) {
  const std::int64_t inputs = std::int64_t{g.batch} * g.in_height * g.in_width * g.channels;
  const std::int64_t outputs = std::int64_t{g.batch} * g.out_height() * g.out_width() * g.channels;
  // Distinct values, so no tie lets the backends pick different maxima; the tolerance covers the
  // order in which overlapping windows add their gradients (and average pooling's sums).
  cases.push_back({"pooling_" + label, summation_order, [g, inputs, outputs](Backend& b) {
                     Tensor input = upload(b, shuffled_distinct_values(inputs, 15, 0.001f));
                     Tensor grad_output = upload(b, random_values(outputs, 16));
                     Tensor output = empty_floats(b, outputs), evaluation_output = empty_floats(b, outputs);
                     Tensor grad_input = empty_floats(b, inputs);
                     const std::size_t workspace_bytes = b.pooling_workspace_bytes(g);
                     Tensor workspace;
                     if (workspace_bytes)
                       workspace = Tensor(b, Shape{static_cast<std::int64_t>(workspace_bytes)}, DType::UInt8);
                     void* workspace_data = workspace_bytes ? workspace.data_as<void>() : nullptr;
                     b.pooling_forward(g, input.data(), evaluation_output.data(), nullptr);  // evaluation
                     b.pooling_forward(g, input.data(), output.data(), workspace_data);
                     b.pooling_backward(g, grad_output.data(), workspace_data, grad_input.data());
                     return Outputs{{"output", as_doubles(download(b, output))},
                                    {"evaluation_output", as_doubles(download(b, evaluation_output))},
                                    {"grad_input", as_doubles(download(b, grad_input))}};
                   }});
}

std::vector<OpCase> pooling_cases() {
  std::vector<OpCase> cases;
  add_pooling_cases(cases, "max_2x2_fmnist", pooling(PoolingKind::Max, 5, 32, 28, 28, 2, 2, 0));
  add_pooling_cases(cases, "max_2x2_odd_input", pooling(PoolingKind::Max, 3, 8, 7, 7, 2, 2, 0));
  add_pooling_cases(cases, "max_3x3_stride2_pad1_overlapping",
                    pooling(PoolingKind::Max, 3, 16, 15, 15, 3, 2, 1));
  add_pooling_cases(cases, "average_2x2", pooling(PoolingKind::Average, 3, 8, 12, 12, 2, 2, 0));
  add_pooling_cases(cases, "average_3x3_pad1_counts_padding",
                    pooling(PoolingKind::Average, 2, 8, 9, 9, 3, 1, 1));
  add_pooling_cases(cases, "global_average_7x7", pooling(PoolingKind::Average, 7, 64, 7, 7, 7, 7, 0));
  // A rectangular input's global pool (a 224x160 image through MobileNet ends at 7x5).
  PoolingGeometry rectangular_global = pooling(PoolingKind::Average, 4, 40, 7, 5, 1, 1, 0);
  rectangular_global.kernel_height = 7;
  rectangular_global.kernel_width = 5;
  add_pooling_cases(cases, "global_average_7x5", rectangular_global);
  // Odd channel counts; non-overlapping 3x3 windows that leave a remainder; overlapping stride 1;
  // average pooling with stride 2 and padding (windows straddle the border); a global average over
  // an odd plane.
  add_pooling_cases(cases, "max_3x3_stride2_pad1_5_channels",
                    pooling(PoolingKind::Max, 2, 5, 11, 11, 3, 2, 1));
  add_pooling_cases(cases, "max_3x3_stride3_remainder", pooling(PoolingKind::Max, 3, 3, 11, 11, 3, 3, 0));
  add_pooling_cases(cases, "max_2x2_stride1_overlapping", pooling(PoolingKind::Max, 2, 7, 6, 6, 2, 1, 0));
  add_pooling_cases(cases, "average_3x3_stride2_pad1", pooling(PoolingKind::Average, 3, 13, 9, 9, 3, 2, 1));
  add_pooling_cases(cases, "global_average_5x5_odd_channels",
                    pooling(PoolingKind::Average, 4, 13, 5, 5, 5, 5, 0));
  return cases;
}

// ---- batch normalisation -----------------------------------------------------------------------

void add_batch_norm_cases(std::vector<OpCase>& cases, const std::string& label, const BatchNormGeometry& g) {
  const std::int64_t count = std::int64_t{g.batch} * g.spatial * g.channels;
  const float momentum = 0.1f;
  // Inputs with a mean far from zero check that the statistics do not cancel catastrophically.
  cases.push_back({"batch_norm_training_" + label, gemm, [g, count, momentum](Backend& b) {
                     Tensor input = upload(b, random_values(count, 17, 2.0f, 4.0f));
                     Tensor gamma = upload(b, random_values(g.channels, 18, 0.5f, 1.5f));
                     Tensor beta = upload(b, random_values(g.channels, 19));
                     Tensor running_mean = upload(b, random_values(g.channels, 20));
                     Tensor running_variance = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
                     Tensor output = empty_floats(b, count);
                     Tensor saved_mean = empty_floats(b, g.channels),
                            saved_inverse_std = empty_floats(b, g.channels);
                     b.batch_norm_forward_training(g, input.data(), gamma.data(), beta.data(), output.data(),
                                                   running_mean.data(), running_variance.data(), momentum,
                                                   saved_mean.data(), saved_inverse_std.data());
                     Tensor grad_output = upload(b, random_values(count, 22));
                     Tensor grad_input = empty_floats(b, count);
                     Tensor grad_gamma = empty_floats(b, g.channels), grad_beta = empty_floats(b, g.channels);
                     b.batch_norm_backward(g, input.data(), grad_output.data(), gamma.data(),
                                           saved_mean.data(), saved_inverse_std.data(), grad_input.data(),
                                           grad_gamma.data(), grad_beta.data());
                     return Outputs{{"output", as_doubles(download(b, output))},
                                    {"running_mean", as_doubles(download(b, running_mean))},
                                    {"running_variance", as_doubles(download(b, running_variance))},
                                    {"saved_mean", as_doubles(download(b, saved_mean))},
                                    {"saved_inverse_std", as_doubles(download(b, saved_inverse_std))},
                                    {"grad_input", as_doubles(download(b, grad_input))},
                                    {"grad_gamma", as_doubles(download(b, grad_gamma))},
                                    {"grad_beta", as_doubles(download(b, grad_beta))}};
                   }});
  // In place (output over input, grad_input over grad_output), as the CPU backend allows.
  cases.push_back({"batch_norm_in_place_" + label, gemm, [g, count, momentum](Backend& b) {
                     Tensor input = upload(b, random_values(count, 17, 2.0f, 4.0f));
                     Tensor data = upload(b, random_values(count, 17, 2.0f, 4.0f));
                     Tensor gamma = upload(b, random_values(g.channels, 18, 0.5f, 1.5f));
                     Tensor beta = upload(b, random_values(g.channels, 19));
                     Tensor running_mean = upload(b, random_values(g.channels, 20));
                     Tensor running_variance = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
                     Tensor saved_mean = empty_floats(b, g.channels),
                            saved_inverse_std = empty_floats(b, g.channels);
                     b.batch_norm_forward_training(g, data.data(), gamma.data(), beta.data(), data.data(),
                                                   running_mean.data(), running_variance.data(), momentum,
                                                   saved_mean.data(), saved_inverse_std.data());
                     Tensor gradient = upload(b, random_values(count, 22));
                     Tensor grad_gamma = empty_floats(b, g.channels), grad_beta = empty_floats(b, g.channels);
                     b.batch_norm_backward(g, input.data(), gradient.data(), gamma.data(), saved_mean.data(),
                                           saved_inverse_std.data(), gradient.data(), grad_gamma.data(),
                                           grad_beta.data());
                     return Outputs{{"output", as_doubles(download(b, data))},
                                    {"grad_input", as_doubles(download(b, gradient))},
                                    {"grad_gamma", as_doubles(download(b, grad_gamma))}};
                   }});
  cases.push_back({"batch_norm_inference_" + label, gemm, [g, count](Backend& b) {
                     Tensor input = upload(b, random_values(count, 17, 2.0f, 4.0f));
                     Tensor gamma = upload(b, random_values(g.channels, 18, 0.5f, 1.5f));
                     Tensor beta = upload(b, random_values(g.channels, 19));
                     Tensor running_mean = upload(b, random_values(g.channels, 20, 2.0f, 4.0f));
                     Tensor running_variance = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
                     Tensor output = empty_floats(b, count);
                     b.batch_norm_forward_inference(g, input.data(), gamma.data(), beta.data(),
                                                    running_mean.data(), running_variance.data(),
                                                    output.data());
                     return Outputs{{"output", as_doubles(download(b, output))}};
                   }});
}

// The fused ReLU belongs to the forward only: backward given the fused geometry (its grad_input
// apart and in place over grad_output) returns the plain gradients, as the CPU backend does; a ReLU
// of the gradient would zero about half of grad_input.
void add_batch_norm_fused_geometry_backward_case(std::vector<OpCase>& cases, const std::string& label,
                                                 BatchNormGeometry g) {
  g.activation = backend::FusedActivation::Relu;
  const std::int64_t count = std::int64_t{g.batch} * g.spatial * g.channels;
  cases.push_back({"batch_norm_backward_with_fused_geometry_" + label, gemm, [g, count](Backend& b) {
                     Tensor input = upload(b, random_values(count, 17, 2.0f, 4.0f));
                     Tensor gamma = upload(b, random_values(g.channels, 18, 0.5f, 1.5f));
                     Tensor beta = upload(b, random_values(g.channels, 19));
                     Tensor running_mean = upload(b, random_values(g.channels, 20));
                     Tensor running_variance = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
                     Tensor output = empty_floats(b, count);
                     Tensor saved_mean = empty_floats(b, g.channels),
                            saved_inverse_std = empty_floats(b, g.channels);
                     b.batch_norm_forward_training(g, input.data(), gamma.data(), beta.data(), output.data(),
                                                   running_mean.data(), running_variance.data(), 0.1f,
                                                   saved_mean.data(), saved_inverse_std.data());
                     Tensor grad_output = upload(b, random_values(count, 22));
                     Tensor grad_input = empty_floats(b, count);
                     Tensor grad_gamma = empty_floats(b, g.channels), grad_beta = empty_floats(b, g.channels);
                     b.batch_norm_backward(g, input.data(), grad_output.data(), gamma.data(),
                                           saved_mean.data(), saved_inverse_std.data(), grad_input.data(),
                                           grad_gamma.data(), grad_beta.data());
                     b.batch_norm_backward(g, input.data(), grad_output.data(), gamma.data(),
                                           saved_mean.data(), saved_inverse_std.data(), grad_output.data(),
                                           grad_gamma.data(), grad_beta.data());
                     return Outputs{{"fused_output", as_doubles(download(b, output))},
                                    {"grad_input", as_doubles(download(b, grad_input))},
                                    {"grad_input_in_place", as_doubles(download(b, grad_output))},
                                    {"grad_gamma", as_doubles(download(b, grad_gamma))}};
                   }});
}

std::vector<OpCase> batch_norm_cases() {
  std::vector<OpCase> cases;
  add_batch_norm_cases(cases, "images", BatchNormGeometry{8, 16, 49, 1e-5f});
  add_batch_norm_cases(cases, "after_linear_odd_batch", BatchNormGeometry{7, 32, 1, 1e-5f});
  add_batch_norm_cases(cases, "resnet_64_channels", BatchNormGeometry{2, 64, 64, 1e-3f});
  // Odd channel counts, a large plane per channel (many values per statistic), two values only.
  add_batch_norm_cases(cases, "3_channels_large_plane", BatchNormGeometry{3, 3, 3025, 1e-5f});
  add_batch_norm_cases(cases, "13_channels", BatchNormGeometry{5, 13, 9, 1e-5f});
  add_batch_norm_cases(cases, "two_values_per_channel", BatchNormGeometry{2, 8, 1, 1e-5f});
  add_batch_norm_fused_geometry_backward_case(cases, "images", BatchNormGeometry{8, 16, 49, 1e-5f});
  return cases;
}

// ---- linear ------------------------------------------------------------------------------------

void add_linear_cases(std::vector<OpCase>& cases, const std::string& label, const LinearGeometry& g) {
  const std::int64_t inputs = std::int64_t{g.batch} * g.in_features;
  const std::int64_t outputs = std::int64_t{g.batch} * g.out_features;
  const std::int64_t weights = std::int64_t{g.out_features} * g.in_features;
  const float bound = 1.0f / std::sqrt(static_cast<float>(g.in_features));
  for (const bool with_bias : {true, false}) {
    cases.push_back({"linear_" + label + (with_bias ? "" : "_no_bias"), gemm,
                     [g, inputs, outputs, weights, bound, with_bias](Backend& b) {
                       Tensor input = upload(b, random_values(inputs, 23));
                       Tensor weight = upload(b, random_values(weights, 24, -bound, bound));
                       Tensor bias = upload(b, random_values(g.out_features, 25));
                       Tensor output = empty_floats(b, outputs);
                       b.linear_forward(g, input.data(), weight.data(), with_bias ? bias.data() : nullptr,
                                        output.data());
                       Tensor grad_output = upload(b, random_values(outputs, 26));
                       Tensor grad_input = empty_floats(b, inputs), grad_weight = empty_floats(b, weights);
                       Tensor grad_bias = empty_floats(b, g.out_features);
                       // With a bias: every gradient; without: no input gradient either (a first layer).
                       b.linear_backward(g, input.data(), weight.data(), grad_output.data(),
                                         with_bias ? grad_input.data() : nullptr, grad_weight.data(),
                                         with_bias ? grad_bias.data() : nullptr);
                       Outputs results{{"output", as_doubles(download(b, output))},
                                       {"grad_weight", as_doubles(download(b, grad_weight))}};
                       if (with_bias) {
                         results.push_back({"grad_input", as_doubles(download(b, grad_input))});
                         results.push_back({"grad_bias", as_doubles(download(b, grad_bias))});
                       }
                       return results;
                     }});
  }
}

std::vector<OpCase> linear_cases() {
  std::vector<OpCase> cases;
  add_linear_cases(cases, "fmnist_fc1", LinearGeometry{64, 3136, 128});
  add_linear_cases(cases, "fmnist_fc2_odd_batch", LinearGeometry{7, 128, 10});
  add_linear_cases(cases, "resnet_head", LinearGeometry{5, 512, 1000});
  // Dimensions that are no multiple of 8 (cuBLAS's tensor-core paths want them), and a single output.
  add_linear_cases(cases, "odd_33x17_to_5", LinearGeometry{33, 17, 5});
  add_linear_cases(cases, "one_sample_one_output", LinearGeometry{1, 3, 1});
  return cases;
}

// ---- loss and prediction ---------------------------------------------------------------------

std::vector<OpCase> loss_cases() {
  std::vector<OpCase> cases;
  struct LossShape {
    int batch, classes;
    float smoothing;
    float logit_range = 4.0f;  // logits uniform in [-range, range)
  };
  // 33 and 1000 classes wrap the 32 lanes of a row's warp; one class has loss 0 and gradient 0;
  // 5000 rows run the batch totals over many strides of one block.
  for (const LossShape shape : {LossShape{64, 10, 0.0f}, LossShape{7, 10, 0.1f}, LossShape{33, 1000, 0.1f},
                                LossShape{9, 33, 0.2f}, LossShape{5, 1, 0.1f}, LossShape{5000, 10, 0.1f},
                                // exp of these overflows even in double unless taken about the row maximum
                                LossShape{16, 10, 0.1f, 3e4f}}) {
    const std::string label = std::to_string(shape.batch) + "x" + std::to_string(shape.classes) +
                              (shape.smoothing > 0 ? "_smoothed" : "") +
                              (shape.logit_range > 4.0f ? "_large_logits" : "");
    cases.push_back(
        {"softmax_cross_entropy_" + label, summation_order, [shape](Backend& b) {
           const std::int64_t count = std::int64_t{shape.batch} * shape.classes;
           Tensor logits = upload(b, random_values(count, 27, -shape.logit_range, shape.logit_range));
           Tensor labels = upload(b, random_labels(shape.batch, shape.classes, 28));
           Tensor grad_logits = empty_floats(b, count);
           const auto totals = b.softmax_cross_entropy(shape.batch, shape.classes, logits.data(),
                                                       labels.data_as<std::int32_t>(), shape.smoothing,
                                                       1.0f / shape.batch, grad_logits.data());
           // Evaluation: no gradient wanted.
           const auto evaluation =
               b.softmax_cross_entropy(shape.batch, shape.classes, logits.data(),
                                       labels.data_as<std::int32_t>(), shape.smoothing, 1.0f, nullptr);
           Tensor predicted(b, Shape{shape.batch}, DType::Int32);
           Tensor probabilities = empty_floats(b, count);
           b.predict(shape.batch, shape.classes, logits.data(), predicted.data_as<std::int32_t>(),
                     probabilities.data());
           return Outputs{
               {"loss_sum", {totals.loss_sum, evaluation.loss_sum}},
               {"correct", {static_cast<double>(totals.correct), static_cast<double>(evaluation.correct)}},
               {"grad_logits", as_doubles(download(b, grad_logits))},
               {"predicted_class", as_doubles(download<std::int32_t>(b, predicted))},
               {"probabilities", as_doubles(download(b, probabilities))}};
         }});
  }
  return cases;
}

// ---- optimizers: several steps, each with fresh gradients ---------------------------------------

std::vector<OpCase> optimizer_cases() {
  std::vector<OpCase> cases;
  constexpr std::int64_t count = 10007;
  constexpr int steps = 5;
  struct SgdVariant {
    const char* name;
    float momentum, weight_decay;
    bool nesterov;
  };
  for (const SgdVariant variant :
       {SgdVariant{"plain", 0.0f, 0.0f, false}, SgdVariant{"momentum", 0.9f, 5e-4f, false},
        SgdVariant{"nesterov", 0.9f, 1e-4f, true}}) {
    cases.push_back({std::string("sgd_") + variant.name, exact, [variant](Backend& b) {
                       Tensor parameters = upload(b, random_values(count, 29));
                       Tensor momentum_buffer = upload(b, std::vector<float>(count, 0.0f));
                       SgdHyperparameters hyperparameters;
                       hyperparameters.learning_rate = 0.05f;
                       hyperparameters.momentum = variant.momentum;
                       hyperparameters.weight_decay = variant.weight_decay;
                       hyperparameters.nesterov = variant.nesterov;
                       for (int step = 0; step < steps; ++step) {
                         Tensor gradients = upload(b, random_values(count, 100 + step));
                         b.sgd_step(count, hyperparameters, parameters.data(), gradients.data(),
                                    variant.momentum == 0.0f ? nullptr : momentum_buffer.data());
                       }
                       return Outputs{{"parameters", as_doubles(download(b, parameters))},
                                      {"momentum_buffer", as_doubles(download(b, momentum_buffer))}};
                     }});
  }
  // Early steps (large bias corrections) with decay, and late ones (corrections near 1) without.
  for (const std::int64_t first_step : {std::int64_t{1}, std::int64_t{10000}})
    cases.push_back({"adamw_from_step_" + std::to_string(first_step), exact, [first_step](Backend& b) {
                       Tensor parameters = upload(b, random_values(count, 30));
                       Tensor first_moment = upload(b, std::vector<float>(count, 0.0f));
                       Tensor second_moment = upload(b, std::vector<float>(count, 0.0f));
                       AdamWHyperparameters hyperparameters;
                       hyperparameters.learning_rate = 0.01f;
                       hyperparameters.weight_decay = first_step == 1 ? 0.01f : 0.0f;
                       for (std::int64_t step = first_step; step < first_step + steps; ++step) {
                         hyperparameters.step = step;
                         Tensor gradients = upload(b, random_values(count, 200 + step));
                         b.adamw_step(count, hyperparameters, parameters.data(), gradients.data(),
                                      first_moment.data(), second_moment.data());
                       }
                       return Outputs{{"parameters", as_doubles(download(b, parameters))},
                                      {"first_moment", as_doubles(download(b, first_moment))},
                                      {"second_moment", as_doubles(download(b, second_moment))}};
                     }});
  return cases;
}

// ---- a small network forward and backward ----------------------------------------------------------

// conv 1->8 3x3 -> batch norm -> ReLU -> average pool 2 -> flatten (NHWC -> CHW) -> linear
// 288->10 -> softmax cross-entropy, then backward to every parameter and the input: errors of one
// op that the others amplify show up here. Average rather than max pooling: the backends' conv
// outputs differ by rounding, which could flip the arg-max of a near tie and route a gradient
// elsewhere; max pooling has its own cases above, on distinct values.
OpCase chain_case() {
  return {
      "conv_bn_relu_pool_linear_loss_chain", gemm, [](Backend& b) {
        constexpr int batch = 6, classes = 10;
        const ConvolutionGeometry conv = convolution(batch, 1, 12, 12, 8, 3, 3, 1, 1, true);
        const BatchNormGeometry norm{batch, 8, 144, 1e-5f};
        const PoolingGeometry pool = pooling(PoolingKind::Average, batch, 8, 12, 12, 2, 2, 0);
        const LinearGeometry linear{batch, 8 * 36, classes};
        const std::int64_t image = batch * 144, activations = batch * 144 * 8, pooled = batch * 36 * 8;

        Tensor input = upload(b, random_values(image, 31));
        Tensor conv_weight = upload(b, random_values(72, 32, -0.3f, 0.3f));
        Tensor conv_bias = upload(b, random_values(8, 33));
        Tensor gamma = upload(b, random_values(8, 34, 0.5f, 1.5f));
        Tensor beta = upload(b, random_values(8, 35));
        Tensor running_mean = upload(b, std::vector<float>(8, 0.0f));
        Tensor running_variance = upload(b, std::vector<float>(8, 1.0f));
        Tensor linear_weight = upload(b, random_values(288 * classes, 36, -0.06f, 0.06f));
        Tensor linear_bias = upload(b, random_values(classes, 37));
        Tensor labels = upload(b, random_labels(batch, classes, 38));

        Tensor conv_output = empty_floats(b, activations), normalized = empty_floats(b, activations);
        Tensor rectified = empty_floats(b, activations), pooled_output = empty_floats(b, pooled);
        Tensor flattened = empty_floats(b, pooled), logits = empty_floats(b, batch * classes);
        Tensor saved_mean = empty_floats(b, 8), saved_inverse_std = empty_floats(b, 8);
        b.convolution_forward(conv, input.data(), conv_weight.data(), conv_bias.data(), conv_output.data());
        b.batch_norm_forward_training(norm, conv_output.data(), gamma.data(), beta.data(), normalized.data(),
                                      running_mean.data(), running_variance.data(), 0.1f, saved_mean.data(),
                                      saved_inverse_std.data());
        b.relu_forward(activations, normalized.data(), rectified.data());
        b.pooling_forward(pool, rectified.data(), pooled_output.data(), nullptr);
        b.transpose_samples(batch, 36, 8, pooled_output.data(), flattened.data());
        b.linear_forward(linear, flattened.data(), linear_weight.data(), linear_bias.data(), logits.data());
        Tensor grad_logits = empty_floats(b, batch * classes);
        const auto totals =
            b.softmax_cross_entropy(batch, classes, logits.data(), labels.data_as<std::int32_t>(), 0.05f,
                                    1.0f / batch, grad_logits.data());

        Tensor grad_flattened = empty_floats(b, pooled), grad_pooled = empty_floats(b, pooled);
        Tensor grad_linear_weight = empty_floats(b, 288 * classes),
               grad_linear_bias = empty_floats(b, classes);
        Tensor grad_rectified = empty_floats(b, activations), grad_normalized = empty_floats(b, activations);
        Tensor grad_conv_output = empty_floats(b, activations), grad_input = empty_floats(b, image);
        Tensor grad_gamma = empty_floats(b, 8), grad_beta = empty_floats(b, 8);
        Tensor grad_conv_weight = empty_floats(b, 72), grad_conv_bias = empty_floats(b, 8);
        b.linear_backward(linear, flattened.data(), linear_weight.data(), grad_logits.data(),
                          grad_flattened.data(), grad_linear_weight.data(), grad_linear_bias.data());
        b.transpose_samples(batch, 8, 36, grad_flattened.data(), grad_pooled.data());
        b.pooling_backward(pool, grad_pooled.data(), nullptr, grad_rectified.data());
        b.relu_backward(activations, rectified.data(), grad_rectified.data(), grad_normalized.data());
        b.batch_norm_backward(norm, conv_output.data(), grad_normalized.data(), gamma.data(),
                              saved_mean.data(), saved_inverse_std.data(), grad_conv_output.data(),
                              grad_gamma.data(), grad_beta.data());
        b.convolution_backward_weights(conv, input.data(), grad_conv_output.data(), grad_conv_weight.data(),
                                       grad_conv_bias.data());
        b.convolution_backward_data(conv, grad_conv_output.data(), conv_weight.data(), grad_input.data());
        return Outputs{{"loss_sum", {totals.loss_sum}},
                       {"logits", as_doubles(download(b, logits))},
                       {"running_variance", as_doubles(download(b, running_variance))},
                       {"grad_linear_weight", as_doubles(download(b, grad_linear_weight))},
                       {"grad_linear_bias", as_doubles(download(b, grad_linear_bias))},
                       {"grad_gamma", as_doubles(download(b, grad_gamma))},
                       {"grad_beta", as_doubles(download(b, grad_beta))},
                       {"grad_conv_weight", as_doubles(download(b, grad_conv_weight))},
                       {"grad_conv_bias", as_doubles(download(b, grad_conv_bias))},
                       {"grad_input", as_doubles(download(b, grad_input))}};
      }};
}

// ---- the tests --------------------------------------------------------------------------------

// Ends the shared backends after the last test, while the CUDA runtime is still up.
class ReleaseBackends : public ::testing::Environment {
 public:
  void TearDown() override { TestBackends::release(); }
};
[[maybe_unused]] ::testing::Environment* const release_backends =
    ::testing::AddGlobalTestEnvironment(new ReleaseBackends);

TEST(CudaParity, Elementwise) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(elementwise_cases());
}

TEST(CudaParity, Copies) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(copy_cases());
}

TEST(CudaParity, Dropout) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(dropout_cases());
}

TEST(CudaParity, Convolution) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(convolution_cases());
}

// bf16/fp16 precision: the same convolution and linear cases against the CPU's fp32, with the
// error of rounding every operand to 8 (bf16) or 11 (fp16) mantissa bits before fp32 accumulation.
std::vector<OpCase> in_precision(std::vector<OpCase> cases, backend::ComputePrecision precision,
                                 double tolerance) {
  for (OpCase& op : cases) {
    op.name += precision == backend::ComputePrecision::BFloat16 ? "_bf16" : "_fp16";
    op.tolerance = tolerance;
    op.run = [run = op.run, precision](Backend& b) {
      if (b.device_kind() == DeviceKind::Cuda) b.set_compute_precision(precision);
      Outputs outputs = run(b);
      if (b.device_kind() == DeviceKind::Cuda) b.set_compute_precision(backend::ComputePrecision::Float32);
      return outputs;
    };
  }
  return cases;
}

TEST(CudaParity, ReducedPrecisionConvolutionAndLinear) {
  PHALANX_SKIP_WITHOUT_CUDA();
  using backend::ComputePrecision;
  expect_parity(in_precision(convolution_cases(), ComputePrecision::BFloat16, 3e-2));
  expect_parity(in_precision(convolution_cases(), ComputePrecision::Float16, 5e-3));
  expect_parity(in_precision(linear_cases(), ComputePrecision::BFloat16, 3e-2));
  expect_parity(in_precision(linear_cases(), ComputePrecision::Float16, 5e-3));
  // And the reduced precision is really in effect: bf16 results are not the fp32 ones, in every
  // direction of a 32- and a 64-channel convolution and in a GEMM. Layers of 1 or 3 input channels
  // may run in fp32 where cuDNN has no bf16 kernel for them (see convolution.hpp): recorded, not
  // required.
  std::vector<OpCase> cases;
  for (OpCase& op : convolution_cases()) cases.push_back(std::move(op));
  cases.push_back(linear_cases().front());
  for (const OpCase& op : cases) {
    const Outputs full = op.run(cuda_backend());
    const Outputs reduced = in_precision({op}, ComputePrecision::BFloat16, 0).front().run(cuda_backend());
    std::size_t worst = 0;
    const double difference = scaled_max_difference(reduced.front().values, full.front().values, worst);
    const bool required = op.name.find("fmnist_conv2_b64") != std::string::npos ||
                          op.name.find("resnet_3x3_64_64") != std::string::npos ||
                          op.name.rfind("linear_", 0) == 0;
    if (required) {
      EXPECT_GT(difference, 1e-5) << op.name << " gave the fp32 result in bf16";
    } else if (difference == 0) {
      RecordProperty(op.name + "_bf16", "ran in fp32 (no bf16 algorithm)");
    }
  }
}

// The whole conv/BN/ReLU/pool/linear/loss chain with bf16/fp16 convolution and linear layers: the
// rounding of each op's operands passes through batch norm and the loss into every gradient, so
// the bounds are looser than for one op (a layout or scaling bug still shows as an error of order 1).
TEST(CudaParity, ReducedPrecisionNetworkForwardAndBackward) {
  PHALANX_SKIP_WITHOUT_CUDA();
  using backend::ComputePrecision;
  expect_parity(in_precision(std::vector<OpCase>{chain_case()}, ComputePrecision::BFloat16, 6e-2));
  expect_parity(in_precision(std::vector<OpCase>{chain_case()}, ComputePrecision::Float16, 1e-2));
}

// The CPU backend computes in fp32 or bf16 (oneDNN); fp16 needs a GPU rank.
TEST(CudaDevice, CpuBackendTakesBf16AndRefusesFp16) {
  EXPECT_NO_THROW(cpu_backend().set_compute_precision(backend::ComputePrecision::BFloat16));
  EXPECT_THROW(cpu_backend().set_compute_precision(backend::ComputePrecision::Float16), Error);
  EXPECT_NO_THROW(cpu_backend().set_compute_precision(backend::ComputePrecision::Float32));
}

TEST(CudaParity, Pooling) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(pooling_cases());
}

TEST(CudaParity, BatchNorm) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(batch_norm_cases());
}

TEST(CudaParity, Linear) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(linear_cases());
}

TEST(CudaParity, LossAndPrediction) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(loss_cases());
}

TEST(CudaParity, OptimizerSteps) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(optimizer_cases());
}

TEST(CudaParity, NetworkForwardAndBackward) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(chain_case());
}

// Identical outputs, bit for bit, from two runs of `op` on the CUDA backend.
void expect_same_bits_twice(const OpCase& op, const Outputs& first) {
  const Outputs second = op.run(cuda_backend());
  ASSERT_EQ(first.size(), second.size());
  for (std::size_t output = 0; output < first.size(); ++output) {
    std::size_t worst = 0;
    EXPECT_EQ(scaled_max_difference(second[output].values, first[output].values, worst), 0.0)
        << op.name << ": output '" << first[output].name << "' changed between runs, first at index "
        << worst;
  }
}

// The same inputs give the same bits on every step: deterministic convolution algorithms, fixed
// summation orders in the column sums, loss totals and pooling backward. The first run also
// searches the algorithms; the second reuses them.
TEST(CudaDeterminism, NetworkForwardAndBackwardTwiceGiveTheSameBits) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const OpCase chain = chain_case();
  expect_same_bits_twice(chain, chain.run(cuda_backend()));
}

// train.deterministic: false. Every convolution direction searches again and may take an algorithm
// that sums with atomics; its results stay within the fp32 tolerances of the CPU backend, and so do
// those of the switch back (a search among the deterministic ones again).
TEST(CudaDeterminism, FastestAlgorithmOfAnyKindStaysWithinTheTolerances) {
  PHALANX_SKIP_WITHOUT_CUDA();
  struct DeterministicAgain {
    ~DeterministicAgain() { cuda_backend().set_deterministic(true); }
  } deterministic_again;
  cuda_backend().set_deterministic(false);
  expect_parity(convolution_cases());
  cuda_backend().set_deterministic(true);
  expect_parity(convolution_cases());
}

// Plans and algorithm choices are cached per precision: an fp32 call after bf16 and fp16 calls of
// the same shapes must give the fp32 bits of before, not run a reduced-precision plan.
TEST(CudaDeterminism, PrecisionSwitchKeepsCachedPlansApart) {
  PHALANX_SKIP_WITHOUT_CUDA();
  using backend::ComputePrecision;
  std::vector<OpCase> cases = convolution_cases();
  for (OpCase& op : linear_cases()) cases.push_back(std::move(op));
  for (const OpCase& op : cases) {
    const Outputs full = op.run(cuda_backend());
    for (const ComputePrecision precision : {ComputePrecision::BFloat16, ComputePrecision::Float16})
      in_precision({op}, precision, 0).front().run(cuda_backend());
    expect_same_bits_twice(op, full);
  }
}

// The masks are a pure function of (seed, stream, index): compared byte for byte over a million
// elements and several seeds, streams and probabilities, with a mask length that ends mid-block.
TEST(CudaParity, DropoutMasksIdenticalToCpu) {
  PHALANX_SKIP_WITHOUT_CUDA();
  constexpr std::int64_t count = (1 << 20) + 3;
  const std::vector<float> values = random_values(count, 39);
  for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{20240611}, ~std::uint64_t{0}})
    for (const std::uint64_t stream : {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{1} << 40})
      for (const float probability : {0.25f, 0.5f, 0.9f}) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed << " stream " << stream << " p " << probability);
        std::vector<std::vector<std::uint8_t>> masks;
        for (Backend* b : {&cpu_backend(), &cuda_backend()}) {
          Tensor input = upload(*b, values);
          Tensor output = empty_floats(*b, count);
          Tensor mask(*b, Shape{count}, DType::UInt8);
          b->dropout_forward(count, probability, seed, stream, input.data(), output.data(),
                             mask.data_as<std::uint8_t>());
          masks.push_back(download<std::uint8_t>(*b, mask));
        }
        ASSERT_EQ(masks[0].size(), masks[1].size());
        EXPECT_EQ(std::memcmp(masks[0].data(), masks[1].data(), masks[0].size()), 0);
        // Not all kept or all dropped: the comparison means something.
        const auto kept = std::count(masks[1].begin(), masks[1].end(), std::uint8_t{1});
        EXPECT_GT(kept, 0);
        EXPECT_LT(kept, count);
      }
}

// A label outside [0, classes) is an error naming the sample, as on the CPU.
TEST(CudaParity, LossRejectsOutOfRangeLabel) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& b = cuda_backend();
  Tensor logits = upload(b, random_values(4 * 3, 40));
  Tensor labels = upload(b, std::vector<std::int32_t>{0, 2, 3, 1});
  try {
    b.softmax_cross_entropy(4, 3, logits.data(), labels.data_as<std::int32_t>(), 0.0f, 1.0f, nullptr);
    FAIL() << "an out-of-range label was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("sample 2"), std::string::npos) << error.what();
  }
}

// ---- element counts past 2^31 -------------------------------------------------------------------

// A few device values at `positions` of a float tensor.
std::vector<float> values_at(Backend& b, const Tensor& tensor, const std::vector<std::int64_t>& positions) {
  std::vector<float> values(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i)
    b.copy_to_host(&values[i], tensor.data() + positions[i], sizeof(float));
  return values;
}

void set_values_at(Backend& b, Tensor& tensor, const std::vector<std::int64_t>& positions, float value) {
  for (const std::int64_t position : positions)
    b.copy_from_host(tensor.data() + position, &value, sizeof(float));
}

// Kernels index in 64 bits: a 32-bit index would wrap past element 2^31 and leave the tail
// unwritten (or write over the head). Checked on the device alone, since a CPU run of 2^31
// elements would take minutes: NaN sentinels placed past 2^31 must be overwritten with the value
// each op gives there, and the head must be untouched by the tail. Shapes: a 131073x16x16x64
// activation (2^31 + 16384 floats, 8.6 GB), as a batch of 64-channel planes and as one
// 16384x131073 matrix.
TEST(CudaLargeTensor, KernelsIndexPast32Bits) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& b = cuda_backend();
  const PoolingGeometry pool = pooling(PoolingKind::Average, 131073, 64, 16, 16, 2, 2, 0);
  const std::int64_t count = std::int64_t{pool.batch} * pool.in_height * pool.in_width * pool.channels;
  ASSERT_GT(count, std::int64_t{1} << 31);
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  const auto memory = b.device_memory();
  const std::size_t needed = 2 * bytes + static_cast<std::size_t>(count) + (std::size_t{2} << 30);
  if (!memory || memory->free_bytes < needed)
    GTEST_SKIP() << "needs " << needed << " bytes of free device memory, "
                 << (memory ? memory->free_bytes : 0) << " are free";
  Tensor data = empty_floats(b, count), other = empty_floats(b, count);
  const std::int64_t wrap = std::int64_t{1} << 31;
  const std::vector<std::int64_t> tail{wrap - 1, wrap, wrap + 1, count - 2, count - 1};
  const std::vector<std::int64_t> head{0, 1, count - wrap, count - wrap + 1};

  // Element-wise: data = relu(2 * (1.5 + -0.25)) + 2.5 = 5.
  set_values_at(b, data, tail, NAN);
  set_values_at(b, other, tail, NAN);
  b.fill(data.data(), count, 1.5f);
  b.fill(other.data(), count, -0.25f);
  b.accumulate(count, data.data(), other.data());
  b.scale(count, 2.0f, other.data());
  b.relu_forward(count, other.data(), data.data());
  b.add(count, data.data(), other.data(), data.data());
  for (const float value : values_at(b, data, tail)) EXPECT_EQ(value, 5.0f);
  for (const float value : values_at(b, data, head)) EXPECT_EQ(value, 5.0f);
  EXPECT_TRUE(b.all_finite(count, data.data()));
  set_values_at(b, data, {count - 1}, INFINITY);
  EXPECT_FALSE(b.all_finite(count, data.data()));

  // Dropout: the mask past 2^31 is Philox's, element by element.
  {
    Tensor mask(b, Shape{count}, DType::UInt8);
    constexpr float probability = 0.5f;
    constexpr std::uint64_t seed = 99, stream = 3;
    b.fill(data.data(), count, 2.0f);
    b.dropout_forward(count, probability, seed, stream, data.data(), other.data(),
                      mask.data_as<std::uint8_t>());
    const std::vector<float> outputs = values_at(b, other, tail);
    for (std::size_t i = 0; i < tail.size(); ++i) {
      const auto words = philox4x32(seed, stream, static_cast<std::uint64_t>(tail[i] / 4));
      const bool keep = (words[tail[i] % 4] >> 8) >= (1u << 23);
      EXPECT_EQ(outputs[i], keep ? 4.0f : 0.0f) << "element " << tail[i];
    }
  }

  // Average pooling 2x2 over ones: outputs 1, and backward of ones gives 1/4 to every input.
  {
    const std::int64_t outputs =
        std::int64_t{pool.batch} * pool.out_height() * pool.out_width() * pool.channels;
    b.fill(data.data(), count, 1.0f);
    set_values_at(b, other, {outputs - 1}, NAN);
    b.pooling_forward(pool, data.data(), other.data(), nullptr);
    for (const float value : values_at(b, other, {0, outputs - 1})) EXPECT_EQ(value, 1.0f);
    float* grad_output = other.data() + outputs;
    b.fill(grad_output, outputs, 1.0f);
    set_values_at(b, data, tail, NAN);
    b.pooling_backward(pool, grad_output, nullptr, data.data());
    for (const float value : values_at(b, data, tail)) EXPECT_EQ(value, 0.25f);
    for (const float value : values_at(b, data, head)) EXPECT_EQ(value, 0.25f);
  }

  // Transpose of one 16384x131073 matrix: marked entries land where [r, c] -> [c, r] puts them.
  {
    const std::int64_t rows = 16384, columns = 131073;
    ASSERT_EQ(rows * columns, count);
    struct Entry {
      std::int64_t row, column;
    };
    const std::vector<Entry> entries{
        {rows - 1, columns - 1}, {0, columns - 1}, {rows - 1, 0}, {5, 131070}, {16382, 131072}};
    b.fill(data.data(), count, 0.0f);
    for (std::size_t i = 0; i < entries.size(); ++i)
      set_values_at(b, data, {entries[i].row * columns + entries[i].column}, static_cast<float>(i + 1));
    b.transpose_samples(1, rows, columns, data.data(), other.data());
    for (std::size_t i = 0; i < entries.size(); ++i)
      EXPECT_EQ(values_at(b, other, {entries[i].column * rows + entries[i].row}).front(),
                static_cast<float>(i + 1))
          << "entry [" << entries[i].row << ", " << entries[i].column << "]";
  }
}

}  // namespace
}  // namespace phalanx::testing
