// bf16/fp16 activations on the CUDA backend (Backend::set_activation_precision): every op family
// runs with compute = activations = bf16 or fp16, its activation operands uploaded as 2-byte
// elements and its activation results downloaded and widened, against the CPU backend in fp32 on
// the same inputs rounded to that type on the host, its results rounded the same way. Where the
// GPU's arithmetic is one rounding of the fp32 value the CPU computes (element-wise ops, moves,
// max pooling, normalisation) the two must be equal; where sums run in another order
// (convolutions, GEMMs, batch norm, average pooling, the loss) they agree within about a unit in
// the last place of the storage type. Then the setter's rules, the buffers that stay fp32, and
// a short resnet20 training with bf16 activations against fp32 ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend_test_support.hpp"
#include "backend_cuda/cuda_test_support.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::testing {
namespace {

using backend::Backend;
using backend::BatchNormGeometry;
using backend::ComputePrecision;
using backend::ConvolutionGeometry;
using backend::FusedActivation;
using backend::LinearGeometry;
using backend::PoolingGeometry;
using backend::PoolingKind;

constexpr ComputePrecision reduced_precisions[] = {ComputePrecision::BFloat16, ComputePrecision::Float16};

// ---- tolerances: the largest |cuda - cpu| of an output relative to its largest finite |cpu| ----

// Equal values (NaN matches NaN, 0 matches -0): the GPU rounds the fp32 value the CPU computes,
// once, to the storage type, and the CPU's result is rounded the same way on the host.
constexpr double equal_values = 0.0;
// fp32 results (batch-norm statistics and gamma/beta gradients, loss totals, probabilities) from
// identical rounded inputs, summed in another order: the fp32 parity tests hold them to 1e-4 or
// better; ten times that, as the 2-byte operands may go through other kernels than the fp32 path.
constexpr double fp32_sums = 1e-3;
// Results of fp32 sums in another order, stored in 2 bytes (or, for weight gradients, possibly
// rounded through them by the library): the sums differ by ~1e-6 of their scale, which can leave
// the two roundings one unit in the last place apart, at most 2^-7 of the value in bf16 (8
// significant bits) and 2^-10 in fp16 (11); two units would take an fp32 error of a whole unit.
// A wrong index, layout or element size gives differences of order one.
double stored_sums(ComputePrecision precision) {
  return precision == ComputePrecision::BFloat16 ? 1e-2 : 2e-3;
}

// ---- how a run holds activations ---------------------------------------------------------------

// The CPU reference: fp32 values already rounded to the storage precision on the host, and its
// results rounded the same way when read. The CUDA backend (compute = activations = that
// precision): 2-byte elements at the start of fp32-sized buffers, as the layers allocate them.
class Activations {
 public:
  Activations(Backend& backend, ComputePrecision precision) : backend_(backend), precision_(precision) {}

  Backend& backend() const { return backend_; }
  ComputePrecision precision() const { return precision_; }

  // `values` rounded to the storage precision, as this run holds activations.
  Tensor upload(const std::vector<float>& values) const {
    Tensor tensor = empty_floats(backend_, static_cast<std::int64_t>(values.size()));
    if (packed()) {
      std::vector<std::uint16_t> bits(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) bits[i] = storage_bits(values[i], precision_);
      backend_.copy_from_host(tensor.data_as<void>(), bits.data(), bits.size() * sizeof(std::uint16_t));
    } else {
      const std::vector<float> rounded = rounded_to_storage(values, precision_);
      backend_.copy_from_host(tensor.data_as<void>(), rounded.data(), rounded.size() * sizeof(float));
    }
    return tensor;
  }
  // A buffer of `count` activations, every one NaN: an element an op fails to write stays NaN and
  // cannot match the reference.
  Tensor unwritten(std::int64_t count) const {
    return upload(std::vector<float>(static_cast<std::size_t>(count), NAN));
  }
  // The first `count` activations of `tensor` (all of them by default), widened.
  std::vector<double> download(const Tensor& tensor, std::int64_t count = -1) const {
    if (count < 0) count = tensor.elements();
    std::vector<double> values(static_cast<std::size_t>(count));
    if (packed()) {
      std::vector<std::uint16_t> bits(values.size());
      backend_.copy_to_host(bits.data(), tensor.data_as<void>(), bits.size() * sizeof(std::uint16_t));
      for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = float_from_storage_bits(bits[i], precision_);
    } else {
      std::vector<float> floats(values.size());
      backend_.copy_to_host(floats.data(), tensor.data_as<void>(), floats.size() * sizeof(float));
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = rounded_to_storage(floats[i], precision_);
    }
    return values;
  }

 private:
  bool packed() const { return backend_.device_kind() == DeviceKind::Cuda; }

  Backend& backend_;
  ComputePrecision precision_;
};

// The CUDA backend's compute and activation precision for one scope, both back to fp32 at its end
// (activations first: the compute precision changes only under fp32 activations), also when a
// check fails or an op throws, so that the other tests of the program find the backend in fp32.
class ReducedActivations {
 public:
  ReducedActivations(Backend& backend, ComputePrecision precision) : backend_(backend) {
    backend_.set_compute_precision(precision);
    try {
      backend_.set_activation_precision(precision);
    } catch (...) {
      backend_.set_compute_precision(ComputePrecision::Float32);
      throw;
    }
  }
  ~ReducedActivations() {
    try {
      backend_.set_activation_precision(ComputePrecision::Float32);
      backend_.set_compute_precision(ComputePrecision::Float32);
    } catch (const std::exception& error) {
      ADD_FAILURE() << "could not return the CUDA backend to fp32: " << error.what();
    }
  }
  ReducedActivations(const ReducedActivations&) = delete;
  ReducedActivations& operator=(const ReducedActivations&) = delete;

 private:
  Backend& backend_;
};

// ---- cases and their comparison ---------------------------------------------------------------

struct CheckedOutput {
  std::string name;
  std::vector<double> values;
  double tolerance;  // bound on relative_difference
};
using CheckedOutputs = std::vector<CheckedOutput>;

struct StorageCase {
  std::string name;
  std::function<CheckedOutputs(const Activations&)> run;
};

// max |actual - expected| / max finite |expected|. Values that are not finite must be matched
// exactly (a NaN by any NaN); a mismatch there, or in length, is infinite. `worst`: its index.
double relative_difference(const std::vector<double>& actual, const std::vector<double>& expected,
                           std::size_t& worst) {
  worst = 0;
  if (actual.size() != expected.size()) return INFINITY;
  double largest_difference = 0, scale = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (!std::isfinite(expected[i]) || !std::isfinite(actual[i])) {
      const bool same = (std::isnan(expected[i]) && std::isnan(actual[i])) || expected[i] == actual[i];
      if (!same) {
        worst = i;
        return INFINITY;
      }
      continue;
    }
    const double difference = std::fabs(actual[i] - expected[i]);
    if (difference > largest_difference) {
      largest_difference = difference;
      worst = i;
    }
    scale = std::max(scale, std::fabs(expected[i]));
  }
  if (largest_difference == 0) return 0;
  return largest_difference / std::max(scale, 1e-30);
}

// Runs `op` on the CPU reference and on the CUDA backend with compute = activations = `precision`.
void expect_storage_parity(const StorageCase& op, ComputePrecision precision) {
  const std::string label = op.name + "_" + precision_name(precision);
  SCOPED_TRACE(label);
  const CheckedOutputs expected = op.run(Activations(cpu_backend(), precision));
  CheckedOutputs actual;
  {
    const ReducedActivations reduced(cuda_backend(), precision);
    actual = op.run(Activations(cuda_backend(), precision));
  }
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t output = 0; output < expected.size(); ++output) {
    std::size_t worst = 0;
    const double difference = relative_difference(actual[output].values, expected[output].values, worst);
    const bool in_range = worst < expected[output].values.size() && worst < actual[output].values.size();
    EXPECT_LE(difference, expected[output].tolerance)
        << label << ": output '" << expected[output].name << "' (" << expected[output].values.size()
        << " values) differs by " << difference << " of its scale; worst at index " << worst << ": cuda "
        << (in_range ? actual[output].values[worst] : NAN) << " vs cpu "
        << (in_range ? expected[output].values[worst] : NAN);
  }
}

void expect_storage_parity(const std::vector<StorageCase>& cases) {
  for (const ComputePrecision precision : reduced_precisions)
    for (const StorageCase& op : cases) expect_storage_parity(op, precision);
}

// ---- inputs ---------------------------------------------------------------------------------------

// Parameters of a convolution or GEMM given already rounded to the storage type: the GPU's cast of
// them to its compute precision is then exact, and both backends multiply the same numbers.
Tensor upload_operand(const Activations& a, const std::vector<float>& values) {
  return upload(a.backend(), rounded_to_storage(values, a.precision()));
}

// Values distinct within every (sample, channel) plane of an NHWC tensor and exact in bf16 and
// fp16: the 1792 numbers of 8 significant bits in +-[0.5, 64), in random order per plane. Max
// pooling then meets no tie, where the backends could pick different inputs.
std::vector<float> distinct_plane_values(const PoolingGeometry& g, std::uint64_t stream) {
  std::vector<float> pool;
  for (int exponent = -1; exponent < 6; ++exponent)
    for (int significand = 128; significand < 256; ++significand)
      for (const float sign : {1.0f, -1.0f})
        pool.push_back(sign * std::ldexp(static_cast<float>(significand), exponent - 7));
  const std::size_t plane = static_cast<std::size_t>(g.in_height) * g.in_width;
  EXPECT_LE(plane, pool.size());
  RandomStream random(20240611, stream);
  std::vector<float> values(static_cast<std::size_t>(g.batch) * plane * g.channels);
  for (int sample = 0; sample < g.batch; ++sample)
    for (int channel = 0; channel < g.channels; ++channel) {
      for (std::size_t i = 0; i < plane; ++i)
        std::swap(pool[i], pool[i + random.next_below(pool.size() - i)]);
      for (std::size_t position = 0; position < plane; ++position)
        values[(static_cast<std::size_t>(sample) * plane + position) * g.channels + channel] = pool[position];
    }
  return values;
}

// Logits whose rows are each a permutation of (k - classes/2) / 4, k < classes: exact in both
// formats and without ties, so the arg-max (accuracy, predictions) is the same on both backends.
std::vector<float> distinct_row_logits(int batch, int classes, std::uint64_t stream) {
  RandomStream random(20240611, stream);
  std::vector<float> logits;
  std::vector<float> row(static_cast<std::size_t>(classes));
  for (int sample = 0; sample < batch; ++sample) {
    for (int k = 0; k < classes; ++k) row[k] = static_cast<float>(k - classes / 2) / 4.0f;
    for (std::size_t i = row.size(); i > 1; --i) std::swap(row[i - 1], row[random.next_below(i)]);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  return logits;
}

// ---- element-wise, dropout, transpose, input normalisation --------------------------------------

constexpr std::int64_t elements = 100003;  // odd: a lone 2-byte element at the end

std::vector<StorageCase> elementwise_cases() {
  std::vector<StorageCase> cases;
  cases.push_back({"relu_forward_backward_in_place", [](const Activations& a) {
                     Backend& b = a.backend();
                     std::vector<float> values = random_values(elements, 2);
                     values[5] = NAN;  // kept NaN (torch.relu's rule)
                     values[17] = INFINITY;
                     values[29] = -INFINITY;
                     values[31] = -0.0f;
                     Tensor input = a.upload(values), grad_output = a.upload(random_values(elements, 3));
                     Tensor output = a.unwritten(elements), grad_input = a.unwritten(elements);
                     Tensor in_place = a.upload(values);
                     b.relu_forward(elements, input.data(), output.data());
                     b.relu_backward(elements, output.data(), grad_output.data(), grad_input.data());
                     b.relu_forward(elements, in_place.data(), in_place.data());
                     return CheckedOutputs{{"output", a.download(output), equal_values},
                                           {"grad_input", a.download(grad_input), equal_values},
                                           {"in_place", a.download(in_place), equal_values}};
                   }});
  cases.push_back({"add_add_relu_accumulate", [](const Activations& a) {
                     Backend& b = a.backend();
                     std::vector<float> first = random_values(elements, 5);
                     first[11] = NAN;  // add_relu keeps it
                     Tensor left = a.upload(first), right = a.upload(random_values(elements, 6));
                     Tensor sum = a.unwritten(elements), rectified = a.unwritten(elements);
                     b.add(elements, left.data(), right.data(), sum.data());
                     b.add_relu(elements, left.data(), right.data(), rectified.data());
                     // destination += source, as backward sums a residual block's two gradients.
                     b.accumulate(elements, left.data(), right.data());
                     return CheckedOutputs{{"sum", a.download(sum), equal_values},
                                           {"sum_relu", a.download(rectified), equal_values},
                                           {"accumulated", a.download(right), equal_values}};
                   }});
  for (const float probability : {0.1f, 0.5f}) {
    cases.push_back({"dropout_p" + std::to_string(probability), [probability](const Activations& a) {
                       Backend& b = a.backend();
                       Tensor input = a.upload(random_values(elements, 9));
                       Tensor grad_output = a.upload(random_values(elements, 10));
                       Tensor output = a.unwritten(elements), grad_input = a.unwritten(elements);
                       Tensor mask(b, Shape{elements}, DType::UInt8);
                       b.dropout_forward(elements, probability, 1234567, 42, input.data(), output.data(),
                                         mask.data_as<std::uint8_t>());
                       b.dropout_backward(elements, probability, mask.data_as<std::uint8_t>(),
                                          grad_output.data(), grad_input.data());
                       // One multiplication by 1/(1-p) in fp32, rounded once.
                       return CheckedOutputs{
                           {"output", a.download(output), equal_values},
                           {"mask", as_doubles(download<std::uint8_t>(b, mask)), equal_values},
                           {"grad_input", a.download(grad_input), equal_values}};
                     }});
  }
  struct TransposeShape {
    std::int64_t batch, rows, columns;
  };
  for (const TransposeShape shape : {TransposeShape{5, 49, 64}, TransposeShape{3, 37, 19}}) {
    cases.push_back(
        {"transpose_samples_" + std::to_string(shape.batch) + "x" + std::to_string(shape.rows) + "x" +
             std::to_string(shape.columns),
         [shape](const Activations& a) {
           Backend& b = a.backend();
           const std::int64_t total = shape.batch * shape.rows * shape.columns;
           Tensor input = a.upload(random_values(total, 7));
           Tensor output = a.unwritten(total), back = a.unwritten(total);
           b.transpose_samples(shape.batch, shape.rows, shape.columns, input.data(), output.data());
           b.transpose_samples(shape.batch, shape.columns, shape.rows, output.data(), back.data());
           return CheckedOutputs{{"transposed", a.download(output), equal_values},
                                 {"transposed_back", a.download(back), equal_values}};
         }});
  }
  // The input batch: the fp32 value of (x / 255 - mean) / std, rounded once.
  for (const int channels : {1, 3}) {
    cases.push_back(
        {"normalize_images_" + std::to_string(channels) + "_channels", [channels](const Activations& a) {
           Backend& b = a.backend();
           constexpr std::int64_t pixels = 4099;
           Tensor images = upload(b, random_bytes(pixels * channels, 1));
           Tensor mean = upload(b, std::vector<float>{0.2860f, 0.45f, 0.5f});
           Tensor deviation = upload(b, std::vector<float>{0.3530f, 0.22f, 0.27f});
           Tensor output = a.unwritten(pixels * channels);
           b.normalize_images(images.data_as<std::uint8_t>(), pixels, channels, mean.data(), deviation.data(),
                              output.data());
           return CheckedOutputs{{"output", a.download(output), equal_values}};
         }});
    cases.push_back({"augment_normalize_images_" + std::to_string(channels) + "_channels",
                     [channels](const Activations& a) {
                       Backend& b = a.backend();
                       const backend::AugmentGeometry geometry{33, 9, 7, channels, 5};
                       const std::int64_t count = std::int64_t{33} * 9 * 7 * channels;
                       Tensor images = upload(b, random_bytes(static_cast<std::size_t>(count), 5));
                       const std::vector<std::int32_t> draws = random_augment_draws(geometry.batch, 6);
                       Tensor draw_tensor = upload(b, draws);
                       Tensor mean = upload(b, std::vector<float>{0.2860f, 0.45f, 0.5f});
                       Tensor deviation = upload(b, std::vector<float>{0.3530f, 0.22f, 0.27f});
                       Tensor output = a.unwritten(count);
                       b.augment_normalize_images(geometry, images.data_as<std::uint8_t>(),
                                                  draw_tensor.data_as<std::int32_t>(), mean.data(),
                                                  deviation.data(), output.data());
                       return CheckedOutputs{{"output", a.download(output), equal_values}};
                     }});
  }
  return cases;
}

// ---- convolution ---------------------------------------------------------------------------------

ConvolutionGeometry convolution(int batch, int in_channels, int size, int out_channels, int kernel,
                                int stride, int padding, bool has_bias, FusedActivation activation) {
  ConvolutionGeometry g =
      square_convolution(batch, in_channels, size, out_channels, kernel, stride, padding, has_bias);
  g.activation = activation;
  return g;
}

ConvolutionGeometry with_groups(ConvolutionGeometry g, int groups, int dilation) {
  g.groups = groups;
  g.dilation = dilation;
  return g;
}

// Forward (bias and fused ReLU as the geometry says), the combined backward (grad_input skipped for
// a first layer, as the model does), and the two directions called alone.
StorageCase convolution_case(const std::string& label, const ConvolutionGeometry& g, bool first_layer) {
  return {
      "convolution_" + label, [g, first_layer](const Activations& a) {
        Backend& b = a.backend();
        const double tolerance = stored_sums(a.precision());
        const std::int64_t inputs = g.input_elements();
        const std::int64_t outputs = g.output_elements();
        const std::int64_t weights = g.weight_elements();
        // PyTorch's default initialisation bound keeps outputs of order one.
        const float bound =
            1.0f / std::sqrt(static_cast<float>(g.group_in_channels() * g.kernel_height * g.kernel_width));
        Tensor input = a.upload(random_values(inputs, 11));
        Tensor weight = upload_operand(a, random_values(weights, 12, -bound, bound));
        Tensor bias = upload_operand(a, random_values(g.out_channels, 13));
        Tensor output = a.unwritten(outputs);
        b.convolution_forward(g, input.data(), weight.data(), g.has_bias ? bias.data() : nullptr,
                              output.data());

        Tensor grad_output = a.upload(random_values(outputs, 14));
        Tensor grad_input = a.unwritten(inputs);
        Tensor grad_weight = empty_floats(b, weights), grad_bias = empty_floats(b, g.out_channels);
        b.convolution_backward(g, input.data(), grad_output.data(), weight.data(),
                               first_layer ? nullptr : grad_input.data(), grad_weight.data(),
                               g.has_bias ? grad_bias.data() : nullptr);
        Tensor grad_input_alone = a.unwritten(inputs);
        Tensor grad_weight_alone = empty_floats(b, weights),
               grad_bias_alone = empty_floats(b, g.out_channels);
        b.convolution_backward_data(g, grad_output.data(), weight.data(), grad_input_alone.data());
        b.convolution_backward_weights(g, input.data(), grad_output.data(), grad_weight_alone.data(),
                                       g.has_bias ? grad_bias_alone.data() : nullptr);

        CheckedOutputs checked{{"output", a.download(output), tolerance},
                               {"grad_weight", as_doubles(download(b, grad_weight)), tolerance},
                               {"grad_input_alone", a.download(grad_input_alone), tolerance},
                               {"grad_weight_alone", as_doubles(download(b, grad_weight_alone)), tolerance}};
        if (!first_layer) checked.push_back({"grad_input", a.download(grad_input), tolerance});
        if (g.has_bias) {
          checked.push_back({"grad_bias", as_doubles(download(b, grad_bias)), tolerance});
          checked.push_back({"grad_bias_alone", as_doubles(download(b, grad_bias_alone)), tolerance});
        }
        return checked;
      }};
}

// No 3x3 stride-1 case has 32 or more channels on both sides: those shapes carry a looser bound
// (test_cuda_parity.cpp, convolution_tolerance), which is not what these cases measure.
std::vector<StorageCase> convolution_cases() {
  using enum FusedActivation;
  return {
      convolution_case("first_layer_3_to_16_bias_relu", convolution(4, 3, 16, 16, 3, 1, 1, true, Relu), true),
      // fmnist_cnn's first layer (1 channel) and ResNet-50's (3 channels, 7x7 stride 2): the shapes
      // where cuDNN may have no bf16/fp16 NHWC algorithm and the direction falls back to fp32.
      convolution_case("first_layer_1_to_32_bias_relu", convolution(4, 1, 28, 32, 3, 1, 1, true, Relu), true),
      convolution_case("first_layer_3_to_64_7x7_stride2", convolution(2, 3, 32, 64, 7, 2, 3, false, None),
                       true),
      convolution_case("stride2_pad1_16_to_24_bias_relu", convolution(3, 16, 15, 24, 3, 2, 1, true, Relu),
                       false),
      convolution_case("3x3_16_to_32_no_bias", convolution(4, 16, 12, 32, 3, 1, 1, false, None), false),
      convolution_case("odd_channels_13_to_7_stride2", convolution(3, 13, 10, 7, 3, 2, 1, false, None),
                       false),
      convolution_case("1x1_stride2_projection_32_to_64", convolution(4, 32, 8, 64, 1, 2, 0, false, None),
                       false),
      convolution_case("1x1_64_to_32_bias_relu", convolution(2, 64, 7, 32, 1, 1, 0, true, Relu), false),
      // MobileNet's depthwise layers and a grouped dilated one (groups and dilation set below).
      convolution_case("depthwise_3x3_16_bias_relu",
                       with_groups(convolution(4, 16, 12, 16, 3, 1, 1, true, Relu), 16, 1), false),
      convolution_case("depthwise_3x3_stride2_24",
                       with_groups(convolution(3, 24, 11, 24, 3, 2, 1, false, None), 24, 1), false),
      convolution_case("grouped_dilated_12_to_12_g4_d2",
                       with_groups(convolution(2, 12, 10, 12, 3, 1, 2, true, None), 4, 2), false),
  };
}

// ---- pooling -------------------------------------------------------------------------------------

PoolingGeometry pooling(PoolingKind kind, int batch, int channels, int size, int kernel, int stride,
                        int padding) {
  PoolingGeometry g;
  g.kind = kind;
  g.batch = batch;
  g.channels = channels;
  g.in_height = g.in_width = size;
  g.kernel_height = g.kernel_width = kernel;
  g.stride = stride;
  g.padding = padding;
  return g;
}

StorageCase pooling_case(const std::string& label, const PoolingGeometry& g) {
  return {"pooling_" + label, [g](const Activations& a) {
            Backend& b = a.backend();
            const std::int64_t inputs = std::int64_t{g.batch} * g.in_height * g.in_width * g.channels;
            const std::int64_t outputs = std::int64_t{g.batch} * g.out_height() * g.out_width() * g.channels;
            const bool max = g.kind == PoolingKind::Max;
            Tensor input = a.upload(max ? distinct_plane_values(g, 15) : random_values(inputs, 15));
            Tensor grad_output = a.upload(random_values(outputs, 16));
            Tensor output = a.unwritten(outputs), evaluation_output = a.unwritten(outputs);
            Tensor grad_input = a.unwritten(inputs);
            const std::size_t workspace_bytes = b.pooling_workspace_bytes(g);
            Tensor workspace;
            if (workspace_bytes)
              workspace = Tensor(b, Shape{static_cast<std::int64_t>(workspace_bytes)}, DType::UInt8);
            void* workspace_data = workspace_bytes ? workspace.data_as<void>() : nullptr;
            b.pooling_forward(g, input.data(), evaluation_output.data(), nullptr);
            b.pooling_forward(g, input.data(), output.data(), workspace_data);
            b.pooling_backward(g, grad_output.data(), workspace_data, grad_input.data());
            // Max pooling picks one input: equal. Its gradient is one grad_output value per input
            // when windows do not overlap, else a sum of several; averages are sums.
            const double sums = stored_sums(a.precision());
            const bool single_gradient = max && g.stride >= g.kernel_height && g.stride >= g.kernel_width;
            return CheckedOutputs{
                {"output", a.download(output), max ? equal_values : sums},
                {"evaluation_output", a.download(evaluation_output), max ? equal_values : sums},
                {"grad_input", a.download(grad_input), single_gradient ? equal_values : sums}};
          }};
}

std::vector<StorageCase> pooling_cases() {
  return {
      pooling_case("max_2x2", pooling(PoolingKind::Max, 5, 16, 28, 2, 2, 0)),
      pooling_case("max_3x3_stride2_pad1_overlapping", pooling(PoolingKind::Max, 3, 16, 15, 3, 2, 1)),
      pooling_case("max_3x3_stride2_pad1_5_channels", pooling(PoolingKind::Max, 2, 5, 11, 3, 2, 1)),
      pooling_case("average_2x2", pooling(PoolingKind::Average, 3, 8, 12, 2, 2, 0)),
      pooling_case("average_3x3_stride2_pad1_13_channels", pooling(PoolingKind::Average, 3, 13, 9, 3, 2, 1)),
      pooling_case("global_average_7x7", pooling(PoolingKind::Average, 7, 64, 7, 7, 7, 0)),
  };
}

// ---- batch normalisation -----------------------------------------------------------------------

// Training forward (plain and with the fused ReLU), backward, inference. Inputs with a mean far from
// zero check that the statistics do not cancel. Statistics and gamma/beta gradients stay fp32.
StorageCase batch_norm_case(const std::string& label, const BatchNormGeometry& g) {
  return {"batch_norm_" + label, [g](const Activations& a) {
            Backend& b = a.backend();
            const double stored = stored_sums(a.precision());
            const std::int64_t count = std::int64_t{g.batch} * g.spatial * g.channels;
            const float momentum = 0.1f;
            Tensor input = a.upload(random_values(count, 17, 2.0f, 4.0f));
            Tensor gamma = upload(b, random_values(g.channels, 18, 0.5f, 1.5f));
            Tensor beta = upload(b, random_values(g.channels, 19));
            Tensor running_mean = upload(b, random_values(g.channels, 20));
            Tensor running_variance = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
            Tensor saved_mean = empty_floats(b, g.channels), saved_inverse_std = empty_floats(b, g.channels);
            Tensor output = a.unwritten(count);
            b.batch_norm_forward_training(g, input.data(), gamma.data(), beta.data(), output.data(),
                                          running_mean.data(), running_variance.data(), momentum,
                                          saved_mean.data(), saved_inverse_std.data());
            BatchNormGeometry fused = g;
            fused.activation = FusedActivation::Relu;
            Tensor fused_running_mean = upload(b, random_values(g.channels, 20));
            Tensor fused_running_variance = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
            Tensor fused_saved_mean = empty_floats(b, g.channels),
                   fused_saved_inverse_std = empty_floats(b, g.channels);
            Tensor fused_output = a.unwritten(count);
            b.batch_norm_forward_training(fused, input.data(), gamma.data(), beta.data(), fused_output.data(),
                                          fused_running_mean.data(), fused_running_variance.data(), momentum,
                                          fused_saved_mean.data(), fused_saved_inverse_std.data());

            Tensor grad_output = a.upload(random_values(count, 22));
            Tensor grad_input = a.unwritten(count);
            Tensor grad_gamma = empty_floats(b, g.channels), grad_beta = empty_floats(b, g.channels);
            b.batch_norm_backward(g, input.data(), grad_output.data(), gamma.data(), saved_mean.data(),
                                  saved_inverse_std.data(), grad_input.data(), grad_gamma.data(),
                                  grad_beta.data());

            Tensor inference_mean = upload(b, random_values(g.channels, 23, 2.0f, 4.0f));
            Tensor inference_variance = upload(b, random_values(g.channels, 24, 0.5f, 1.5f));
            Tensor inference_output = a.unwritten(count);
            b.batch_norm_forward_inference(g, input.data(), gamma.data(), beta.data(), inference_mean.data(),
                                           inference_variance.data(), inference_output.data());
            Tensor fused_inference_output = a.unwritten(count);
            b.batch_norm_forward_inference(fused, input.data(), gamma.data(), beta.data(),
                                           inference_mean.data(), inference_variance.data(),
                                           fused_inference_output.data());
            // The fused ReLU is the forward's only: backward given the fused geometry is the plain one.
            Tensor fused_geometry_grad_input = a.unwritten(count);
            Tensor fused_grad_gamma = empty_floats(b, g.channels);
            Tensor fused_grad_beta = empty_floats(b, g.channels);
            b.batch_norm_backward(fused, input.data(), grad_output.data(), gamma.data(), saved_mean.data(),
                                  saved_inverse_std.data(), fused_geometry_grad_input.data(),
                                  fused_grad_gamma.data(), fused_grad_beta.data());
            return CheckedOutputs{
                {"output", a.download(output), stored},
                {"running_mean", as_doubles(download(b, running_mean)), fp32_sums},
                {"running_variance", as_doubles(download(b, running_variance)), fp32_sums},
                {"saved_mean", as_doubles(download(b, saved_mean)), fp32_sums},
                {"saved_inverse_std", as_doubles(download(b, saved_inverse_std)), fp32_sums},
                {"fused_relu_output", a.download(fused_output), stored},
                {"fused_relu_running_variance", as_doubles(download(b, fused_running_variance)), fp32_sums},
                {"grad_input", a.download(grad_input), stored},
                {"grad_gamma", as_doubles(download(b, grad_gamma)), fp32_sums},
                {"grad_beta", as_doubles(download(b, grad_beta)), fp32_sums},
                {"inference_output", a.download(inference_output), stored},
                {"fused_relu_inference_output", a.download(fused_inference_output), stored},
                {"fused_geometry_grad_input", a.download(fused_geometry_grad_input), stored}};
          }};
}

// In place, as the Backend allows: training forward (plain and with the fused ReLU) with the output
// over its input, inference likewise, backward with grad_input over grad_output and over the
// input. A kernel that read a value another thread had already overwritten, or statistics taken
// after the normalised values were written, would differ from the CPU by order one.
StorageCase batch_norm_in_place_case(const std::string& label, const BatchNormGeometry& g) {
  return {
      "batch_norm_in_place_" + label, [g](const Activations& a) {
        Backend& b = a.backend();
        const double stored = stored_sums(a.precision());
        const std::int64_t count = std::int64_t{g.batch} * g.spatial * g.channels;
        const std::vector<float> input_values = random_values(count, 17, 2.0f, 4.0f);
        Tensor gamma = upload(b, random_values(g.channels, 18, 0.5f, 1.5f));
        Tensor beta = upload(b, random_values(g.channels, 19));
        Tensor running_mean = upload(b, random_values(g.channels, 20));
        Tensor running_variance = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
        Tensor saved_mean = empty_floats(b, g.channels), saved_inverse_std = empty_floats(b, g.channels);
        BatchNormGeometry fused = g;
        fused.activation = FusedActivation::Relu;
        Tensor data = a.upload(input_values), fused_data = a.upload(input_values);
        b.batch_norm_forward_training(g, data.data(), gamma.data(), beta.data(), data.data(),
                                      running_mean.data(), running_variance.data(), 0.1f, saved_mean.data(),
                                      saved_inverse_std.data());
        Tensor fused_running_mean = upload(b, random_values(g.channels, 20));
        Tensor fused_running_variance = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
        Tensor fused_saved_mean = empty_floats(b, g.channels);
        Tensor fused_saved_inverse_std = empty_floats(b, g.channels);
        b.batch_norm_forward_training(fused, fused_data.data(), gamma.data(), beta.data(), fused_data.data(),
                                      fused_running_mean.data(), fused_running_variance.data(), 0.1f,
                                      fused_saved_mean.data(), fused_saved_inverse_std.data());

        Tensor input = a.upload(input_values);
        Tensor gradient = a.upload(random_values(count, 22));
        Tensor grad_gamma = empty_floats(b, g.channels), grad_beta = empty_floats(b, g.channels);
        b.batch_norm_backward(g, input.data(), gradient.data(), gamma.data(), saved_mean.data(),
                              saved_inverse_std.data(), gradient.data(), grad_gamma.data(), grad_beta.data());
        Tensor over_input = a.upload(input_values);
        Tensor grad_output = a.upload(random_values(count, 22));
        Tensor over_input_grad_gamma = empty_floats(b, g.channels);
        Tensor over_input_grad_beta = empty_floats(b, g.channels);
        b.batch_norm_backward(g, over_input.data(), grad_output.data(), gamma.data(), saved_mean.data(),
                              saved_inverse_std.data(), over_input.data(), over_input_grad_gamma.data(),
                              over_input_grad_beta.data());

        Tensor inference_mean = upload(b, random_values(g.channels, 23, 2.0f, 4.0f));
        Tensor inference_variance = upload(b, random_values(g.channels, 24, 0.5f, 1.5f));
        Tensor inference_data = a.upload(input_values);
        b.batch_norm_forward_inference(fused, inference_data.data(), gamma.data(), beta.data(),
                                       inference_mean.data(), inference_variance.data(),
                                       inference_data.data());
        const double sums = fp32_sums;
        return CheckedOutputs{
            {"output", a.download(data), stored},
            {"saved_inverse_std", as_doubles(download(b, saved_inverse_std)), sums},
            {"running_variance", as_doubles(download(b, running_variance)), sums},
            {"fused_relu_output", a.download(fused_data), stored},
            {"fused_relu_saved_mean", as_doubles(download(b, fused_saved_mean)), sums},
            {"grad_input_over_grad_output", a.download(gradient), stored},
            {"grad_gamma", as_doubles(download(b, grad_gamma)), sums},
            {"grad_input_over_input", a.download(over_input), stored},
            {"grad_gamma_grad_input_over_input", as_doubles(download(b, over_input_grad_gamma)), sums},
            {"fused_relu_inference_output", a.download(inference_data), stored}};
      }};
}

// An empty batch: backward's gamma and beta gradients are sums over no values, zero on both backends
// (the buffers hold 7 before, so a backend that writes nothing fails). No activation is touched.
StorageCase batch_norm_empty_backward_case() {
  return {"batch_norm_backward_empty_batch", [](const Activations& a) {
            Backend& b = a.backend();
            const BatchNormGeometry g{0, 16, 49, 1e-5f};
            Tensor gamma = upload(b, random_values(g.channels, 18, 0.5f, 1.5f));
            Tensor saved_mean = upload(b, random_values(g.channels, 20));
            Tensor saved_inverse_std = upload(b, random_values(g.channels, 21, 0.5f, 1.5f));
            Tensor grad_gamma = upload(b, std::vector<float>(g.channels, 7.0f));
            Tensor grad_beta = upload(b, std::vector<float>(g.channels, 7.0f));
            b.batch_norm_backward(g, nullptr, nullptr, gamma.data(), saved_mean.data(),
                                  saved_inverse_std.data(), nullptr, grad_gamma.data(), grad_beta.data());
            return CheckedOutputs{{"grad_gamma", as_doubles(download(b, grad_gamma)), equal_values},
                                  {"grad_beta", as_doubles(download(b, grad_beta)), equal_values}};
          }};
}

std::vector<StorageCase> batch_norm_cases() {
  return {batch_norm_case("images_16_channels", BatchNormGeometry{8, 16, 49, 1e-5f}),
          batch_norm_case("after_linear_odd_batch", BatchNormGeometry{7, 32, 1, 1e-5f}),
          batch_norm_case("3_channels_large_plane", BatchNormGeometry{3, 3, 3025, 1e-5f}),
          batch_norm_case("resnet_64_channels", BatchNormGeometry{2, 64, 64, 1e-3f}),
          // 40 channels: a second block of 32 channels with 24 inactive; 300 rows: two chunks, the
          // last of 44 rows.
          batch_norm_case("40_channels_two_chunks", BatchNormGeometry{6, 40, 50, 1e-5f}),
          // 513 rows: three chunks, the last a single row (its deviation sums are zero).
          batch_norm_case("one_row_last_chunk", BatchNormGeometry{27, 5, 19, 1e-5f}),
          // 300,000 rows: more than 1024 chunks of 256 would take, so 1024 chunks of 293 rows (not a
          // multiple of the 8 thread rows), the last of 268.
          batch_norm_case("1024_chunks_of_293_rows", BatchNormGeometry{2, 3, 150000, 1e-5f}),
          // ResNet-50's widest layer: 64 blocks of 32 channels, a single chunk of 28 rows.
          batch_norm_case("2048_channels", BatchNormGeometry{4, 2048, 7, 1e-5f}),
          batch_norm_in_place_case("images_16_channels", BatchNormGeometry{8, 16, 49, 1e-5f}),
          batch_norm_in_place_case("40_channels_two_chunks", BatchNormGeometry{6, 40, 50, 1e-5f}),
          batch_norm_empty_backward_case()};
}

// ---- linear ------------------------------------------------------------------------------------

StorageCase linear_case(const std::string& label, const LinearGeometry& g, bool with_bias, bool first_layer) {
  return {"linear_" + label, [g, with_bias, first_layer](const Activations& a) {
            Backend& b = a.backend();
            const double tolerance = stored_sums(a.precision());
            const std::int64_t inputs = std::int64_t{g.batch} * g.in_features;
            const std::int64_t outputs = std::int64_t{g.batch} * g.out_features;
            const std::int64_t weights = std::int64_t{g.out_features} * g.in_features;
            const float bound = 1.0f / std::sqrt(static_cast<float>(g.in_features));
            Tensor input = a.upload(random_values(inputs, 25));
            Tensor weight = upload_operand(a, random_values(weights, 26, -bound, bound));
            Tensor bias = upload_operand(a, random_values(g.out_features, 27));
            Tensor output = a.unwritten(outputs);
            b.linear_forward(g, input.data(), weight.data(), with_bias ? bias.data() : nullptr,
                             output.data());
            Tensor grad_output = a.upload(random_values(outputs, 28));
            Tensor grad_input = a.unwritten(inputs);
            Tensor grad_weight = empty_floats(b, weights), grad_bias = empty_floats(b, g.out_features);
            b.linear_backward(g, input.data(), weight.data(), grad_output.data(),
                              first_layer ? nullptr : grad_input.data(), grad_weight.data(),
                              with_bias ? grad_bias.data() : nullptr);
            CheckedOutputs checked{{"output", a.download(output), tolerance},
                                   {"grad_weight", as_doubles(download(b, grad_weight)), tolerance}};
            if (!first_layer) checked.push_back({"grad_input", a.download(grad_input), tolerance});
            if (with_bias) checked.push_back({"grad_bias", as_doubles(download(b, grad_bias)), tolerance});
            return checked;
          }};
}

std::vector<StorageCase> linear_cases() {
  using enum FusedActivation;
  return {linear_case("fc_relu_64x288_to_128", LinearGeometry{64, 288, 128, Relu}, true, false),
          linear_case("head_64x128_to_10", LinearGeometry{64, 128, 10, None}, true, false),
          linear_case("odd_7x33_to_5_first_layer_no_bias", LinearGeometry{7, 33, 5, None}, false, true),
          linear_case("odd_9x17_to_3_relu", LinearGeometry{9, 17, 3, Relu}, true, false)};
}

// ---- loss and prediction -------------------------------------------------------------------------

// softmax_cross_entropy (training and evaluation), its deferred form over two calls, and predict.
// Loss totals and probabilities are fp32 (or double) results of identical logits; the accuracy
// counts and predicted classes are arg-maxes of tie-free rows: equal.
StorageCase loss_case(int batch, int classes, float smoothing) {
  const std::string label =
      std::to_string(batch) + "x" + std::to_string(classes) + (smoothing > 0 ? "_smoothed" : "");
  return {"softmax_cross_entropy_" + label, [batch, classes, smoothing](const Activations& a) {
            Backend& b = a.backend();
            const double stored = stored_sums(a.precision());
            const std::int64_t count = std::int64_t{batch} * classes;
            Tensor logits = a.upload(distinct_row_logits(batch, classes, 29));
            Tensor labels = upload(b, random_labels(batch, classes, 30));
            Tensor grad_logits = a.unwritten(count);
            const auto totals =
                b.softmax_cross_entropy(batch, classes, logits.data(), labels.data_as<std::int32_t>(),
                                        smoothing, 1.0f / batch, grad_logits.data());
            const auto evaluation = b.softmax_cross_entropy(
                batch, classes, logits.data(), labels.data_as<std::int32_t>(), smoothing, 1.0f, nullptr);
            Tensor deferred_first = a.unwritten(count), deferred_second = a.unwritten(count);
            b.softmax_cross_entropy_deferred(batch, classes, logits.data(), labels.data_as<std::int32_t>(),
                                             smoothing, 1.0f / batch, deferred_first.data());
            b.softmax_cross_entropy_deferred(batch, classes, logits.data(), labels.data_as<std::int32_t>(),
                                             smoothing, 0.5f, deferred_second.data());
            const std::vector<backend::LossTotals> deferred = b.take_deferred_loss_totals();
            EXPECT_EQ(deferred.size(), 2u);
            std::vector<double> deferred_loss, deferred_correct;
            for (const auto& entry : deferred) {
              deferred_loss.push_back(entry.loss_sum);
              deferred_correct.push_back(static_cast<double>(entry.correct));
            }
            Tensor predicted(b, Shape{batch}, DType::Int32);
            Tensor probabilities = empty_floats(b, count);
            b.predict(batch, classes, logits.data(), predicted.data_as<std::int32_t>(), probabilities.data());
            return CheckedOutputs{
                {"loss_sum", {totals.loss_sum, evaluation.loss_sum}, fp32_sums},
                {"correct",
                 {static_cast<double>(totals.correct), static_cast<double>(evaluation.correct)},
                 equal_values},
                {"grad_logits", a.download(grad_logits), stored},
                {"deferred_loss_sum", deferred_loss, fp32_sums},
                {"deferred_correct", deferred_correct, equal_values},
                {"deferred_grad_logits", a.download(deferred_first), stored},
                {"deferred_grad_logits_scaled", a.download(deferred_second), stored},
                {"predicted_class", as_doubles(download<std::int32_t>(b, predicted)), equal_values},
                {"probabilities", as_doubles(download(b, probabilities)), fp32_sums}};
          }};
}

std::vector<StorageCase> loss_cases() {
  return {loss_case(64, 10, 0.0f), loss_case(7, 10, 0.1f), loss_case(9, 33, 0.2f), loss_case(5000, 10, 0.1f)};
}

// ---- the tests -------------------------------------------------------------------------------------

TEST(CudaActivationStorage, ElementwiseDropoutTransposeAndInput) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_storage_parity(elementwise_cases());
}

TEST(CudaActivationStorage, Convolution) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_storage_parity(convolution_cases());
}

TEST(CudaActivationStorage, Pooling) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_storage_parity(pooling_cases());
}

TEST(CudaActivationStorage, BatchNorm) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_storage_parity(batch_norm_cases());
}

TEST(CudaActivationStorage, Linear) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_storage_parity(linear_cases());
}

TEST(CudaActivationStorage, LossAndPrediction) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_storage_parity(loss_cases());
}

// The element-wise kernels move four elements per vector load when every pointer is aligned to four
// elements (always, for whole buffers) and one at a time otherwise. Pointers 1, 2 and 4 floats into
// their buffers (1, 2, 4 fp32 elements; 2, 4, 8 bf16/fp16 ones) take either path: each call must
// write exactly the elements it was given, with the bits the same call on the whole buffer gives.
TEST(CudaActivationStorage, ElementwiseAtOffsetPointersMatchesTheWholeBuffer) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& b = cuda_backend();
  constexpr std::int64_t total = 1031, count = 1021;  // the offset calls cover `count` elements
  const std::vector<float> first = random_values(total, 50), second = random_values(total, 51),
                           third = random_values(total, 52), unwritten(total, NAN);
  for (const ComputePrecision precision :
       {ComputePrecision::Float32, ComputePrecision::BFloat16, ComputePrecision::Float16}) {
    SCOPED_TRACE(precision_name(precision));
    std::optional<ReducedActivations> reduced;
    if (precision != ComputePrecision::Float32) reduced.emplace(b, precision);
    const bool packed = precision != ComputePrecision::Float32;
    const Activations activations(b, precision);
    const auto held = [&](const std::vector<float>& values) {
      return packed ? activations.upload(values) : upload(b, values);
    };
    const auto read = [&](const Tensor& tensor) {
      return packed ? activations.download(tensor, total) : as_doubles(download(b, tensor));
    };
    struct Op {
      std::string name;
      bool accumulates;  // the output starts as `third` and is added to
      std::function<void(std::int64_t, const float*, const float*, float*)> run;
    };
    const std::vector<Op> ops = {
        {"relu_forward", false,
         [&](std::int64_t n, const float* x, const float*, float* out) { b.relu_forward(n, x, out); }},
        {"relu_backward", false,
         [&](std::int64_t n, const float* x, const float* y, float* out) { b.relu_backward(n, x, y, out); }},
        {"add", false,
         [&](std::int64_t n, const float* x, const float* y, float* out) { b.add(n, x, y, out); }},
        {"add_relu", false,
         [&](std::int64_t n, const float* x, const float* y, float* out) { b.add_relu(n, x, y, out); }},
        {"accumulate", true,
         [&](std::int64_t n, const float* x, const float*, float* out) { b.accumulate(n, x, out); }}};
    for (const Op& op : ops) {
      const std::vector<float>& initial = op.accumulates ? third : unwritten;
      Tensor x = held(first), y = held(second), whole = held(initial);
      op.run(total, x.data(), y.data(), whole.data());
      const std::vector<double> expected = read(whole), before = read(held(initial));
      for (const std::int64_t offset_floats : {1, 2, 4}) {
        SCOPED_TRACE(op.name + " at data() + " + std::to_string(offset_floats));
        const std::int64_t skipped = packed ? 2 * offset_floats : offset_floats;
        Tensor offset = held(initial);
        op.run(count, x.data() + offset_floats, y.data() + offset_floats, offset.data() + offset_floats);
        const std::vector<double> actual = read(offset);
        for (std::int64_t i = 0; i < total; ++i) {
          const bool covered = i >= skipped && i < skipped + count;
          const double wanted = covered ? expected[i] : before[i];
          const bool same = (std::isnan(actual[i]) && std::isnan(wanted)) || actual[i] == wanted;
          ASSERT_TRUE(same) << "element " << i << (covered ? " (in the call)" : " (outside the call)") << ": "
                            << actual[i] << ", expected " << wanted;
        }
      }
    }
  }
}

// Whether `call` throws an InvalidInput phalanx::Error (a bad configuration, exit status 2).
template <typename Call>
bool refused_as_bad_input(Call call) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << error.what();
    return true;
  }
  return false;
}

// Activations in fp32 or in the compute precision; the compute precision changes only while the
// activations are fp32 (or to the activations' own precision).
TEST(CudaActivationStorage, SetterRules) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& b = cuda_backend();
  // Back to fp32 whatever happens below, for the tests that follow in this program.
  struct BackToFp32 {
    Backend& backend;
    ~BackToFp32() {
      try {
        backend.set_activation_precision(ComputePrecision::Float32);
        backend.set_compute_precision(ComputePrecision::Float32);
      } catch (const std::exception& error) {
        ADD_FAILURE() << "could not return the CUDA backend to fp32: " << error.what();
      }
    }
  } back_to_fp32{b};
  EXPECT_NO_THROW(b.set_activation_precision(ComputePrecision::Float32));
  for (const ComputePrecision precision : reduced_precisions) {
    SCOPED_TRACE(precision_name(precision));
    const ComputePrecision other =
        precision == ComputePrecision::BFloat16 ? ComputePrecision::Float16 : ComputePrecision::BFloat16;
    EXPECT_TRUE(refused_as_bad_input([&] { b.set_activation_precision(precision); })) << "under fp32 compute";
    ASSERT_NO_THROW(b.set_compute_precision(precision));
    EXPECT_TRUE(refused_as_bad_input([&] { b.set_activation_precision(other); }))
        << "another reduced precision";
    ASSERT_NO_THROW(b.set_activation_precision(precision));
    EXPECT_NO_THROW(b.set_activation_precision(precision)) << "the same again";
    EXPECT_NO_THROW(b.set_compute_precision(precision)) << "the activations' own precision";
    EXPECT_TRUE(refused_as_bad_input([&] { b.set_compute_precision(other); })) << "under reduced activations";
    EXPECT_TRUE(refused_as_bad_input([&] { b.set_compute_precision(ComputePrecision::Float32); }))
        << "fp32 compute under reduced activations";
    // The way back: activations first, then the compute precision.
    ASSERT_NO_THROW(b.set_activation_precision(ComputePrecision::Float32));
    ASSERT_NO_THROW(b.set_compute_precision(ComputePrecision::Float32));
  }
  // Refused requests left fp32: an fp32 op still reads and writes 4-byte floats.
  Tensor data = upload(b, std::vector<float>{-1.5f, 2.25f, 1e-30f});
  b.relu_forward(3, data.data(), data.data());
  EXPECT_EQ(download(b, data), (std::vector<float>{0.0f, 2.25f, 1e-30f}));
}

// activation_precision_refusal answers for set_activation_precision without trying it: for every
// pair of activations and compute precision, empty exactly where the setter accepts the pair (fp32,
// or the compute precision itself), and the setter's message where it refuses.
TEST(CudaActivationStorage, QueryAgreesWithTheSetter) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& b = cuda_backend();
  const std::vector<ComputePrecision> precisions{ComputePrecision::Float32, ComputePrecision::BFloat16,
                                                 ComputePrecision::Float16};
  for (const ComputePrecision compute : precisions) {
    for (const ComputePrecision activations : precisions) {
      SCOPED_TRACE(std::string(precision_name(compute)) + " compute, " + precision_name(activations) +
                   " activations");
      ASSERT_NO_THROW(b.set_activation_precision(ComputePrecision::Float32));
      ASSERT_NO_THROW(b.set_compute_precision(compute));
      const std::string refusal = b.activation_precision_refusal(activations, compute);
      EXPECT_EQ(b.can_hold_activations(activations, compute), refusal.empty());
      EXPECT_EQ(refusal.empty(), activations == ComputePrecision::Float32 || activations == compute)
          << refusal;
      std::string thrown;
      try {
        b.set_activation_precision(activations);
      } catch (const Error& error) {
        EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
        thrown = error.what();
      }
      // The error's text is the refusal after the rank's prefix ("rank 0: ").
      EXPECT_EQ(thrown.empty(), refusal.empty()) << thrown;
      EXPECT_TRUE(thrown.ends_with(refusal)) << thrown << "\n" << refusal;
    }
  }
  ASSERT_NO_THROW(b.set_activation_precision(ComputePrecision::Float32));
  ASSERT_NO_THROW(b.set_compute_precision(ComputePrecision::Float32));
}

// fill, scale, all_finite and the optimizer serve fp32 buffers under reduced activations too, and
// a zero fill is a zero activation.
TEST(CudaActivationStorage, Fp32BuffersStayFp32) {
  PHALANX_SKIP_WITHOUT_CUDA();
  constexpr std::int64_t count = 1001;
  const std::vector<float> parameters = random_values(count, 40), gradients = random_values(count, 41);
  backend::SgdHyperparameters hyperparameters;
  hyperparameters.learning_rate = 0.05f;
  hyperparameters.momentum = 0.9f;
  hyperparameters.weight_decay = 5e-4f;
  // The CPU's step on the same buffers: the optimizer formulas agree bit for bit in fp32.
  std::vector<float> expected_parameters, expected_momentum;
  {
    Backend& cpu = cpu_backend();
    Tensor weights = upload(cpu, parameters), grads = upload(cpu, gradients);
    Tensor momentum = upload(cpu, std::vector<float>(count, 0.25f));
    cpu.sgd_step(count, hyperparameters, weights.data(), grads.data(), momentum.data());
    expected_parameters = download(cpu, weights);
    expected_momentum = download(cpu, momentum);
  }
  for (const ComputePrecision precision : reduced_precisions) {
    SCOPED_TRACE(precision_name(precision));
    Backend& b = cuda_backend();
    const ReducedActivations reduced(b, precision);
    Tensor data = upload(b, random_values(count, 42));
    b.fill(data.data(), count, 0.375f);
    EXPECT_EQ(download(b, data), std::vector<float>(count, 0.375f));
    b.scale(count, -2.0f, data.data());
    EXPECT_EQ(download(b, data), std::vector<float>(count, -0.75f));
    EXPECT_TRUE(b.all_finite(count, data.data()));
    const float infinity = INFINITY;
    b.copy_from_host(data.data() + (count - 1), &infinity, sizeof(float));
    EXPECT_FALSE(b.all_finite(count, data.data())) << "an infinity in the last fp32 element";

    Tensor weights = upload(b, parameters), grads = upload(b, gradients);
    Tensor momentum = upload(b, std::vector<float>(count, 0.25f));
    b.sgd_step(count, hyperparameters, weights.data(), grads.data(), momentum.data());
    EXPECT_EQ(download(b, weights), expected_parameters);
    EXPECT_EQ(download(b, momentum), expected_momentum);

    const Activations activations(b, precision);
    Tensor zeros = activations.upload(random_values(count, 43));
    b.fill(zeros.data(), count, 0.0f);
    EXPECT_EQ(activations.download(zeros), std::vector<double>(count, 0.0));
  }
}

// ---- a short training ----------------------------------------------------------------------------

// resnet20 (conv, batch norm, ReLU, residual sums, global average pooling, linear) trained by SGD on
// one batch of 32 synthetic 16x16 RGB images with random labels, which it memorises: the
// per-step mean loss. The same weights, data and updates on every call; only the backend's
// precisions differ. The input goes through normalize_images, so it is held as the activations are.
std::vector<double> resnet20_losses(Backend& b, int steps) {
  constexpr int batch = 32, classes = 10, size = 16, channels = 3;
  config::ModelConfig model_config;
  model_config.preset = "resnet20";
  nn::Model model(model_config, Shape{size, size, channels}, classes, b, 7);
  Tensor images = upload(b, random_bytes(std::size_t{batch} * size * size * channels, 50));
  Tensor labels = upload(b, random_labels(batch, classes, 51));
  Tensor mean = upload(b, std::vector<float>{0.49f, 0.48f, 0.45f});
  Tensor deviation = upload(b, std::vector<float>{0.25f, 0.24f, 0.26f});
  Tensor input(b, Shape{batch, size, size, channels});
  Tensor grad_logits(b, Shape{batch, classes});
  const std::int64_t parameters = model.registry().parameter_count();
  Tensor momentum = upload(b, std::vector<float>(static_cast<std::size_t>(parameters), 0.0f));
  backend::SgdHyperparameters hyperparameters;
  hyperparameters.learning_rate = 0.02f;
  hyperparameters.momentum = 0.9f;
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    b.normalize_images(images.data_as<std::uint8_t>(), std::int64_t{batch} * size * size, channels,
                       mean.data(), deviation.data(), input.data());
    const Tensor& logits = model.forward(input, nn::ForwardContext{nn::Mode::Training, 7, step, 0});
    const auto totals = b.softmax_cross_entropy(batch, classes, logits.data(), labels.data_as<std::int32_t>(),
                                                0.0f, 1.0f / batch, grad_logits.data());
    model.backward(input, grad_logits, {});
    b.sgd_step(parameters, hyperparameters, model.registry().parameters().data(),
               model.registry().gradients().data(), momentum.data());
    losses.push_back(totals.loss_sum / batch);
  }
  return losses;
}

// bf16 compute with fp32 activations against bf16 compute with bf16 activations. Storing the
// activations and their gradients in bf16 perturbs each op's operands by at most 2^-8 of their
// value, on top of the bf16 rounding that the compute precision already applies to every
// convolution and GEMM operand, so the two trajectories stay close: each step's loss within 10%
// (+0.02) of the other's. (PyTorch on the CPU, rounding every activation and gradient of this
// network to bf16 or not, over six seeds: the losses stayed within a third of that band.) A layout
// error, a missed conversion or a wrong element size gives losses off by order one or not finite.
// Both runs must also learn: the loss falls below 80% of the first step's (to ~1% of it on the CPU).
TEST(CudaActivationStorage, Resnet20TrainsWithBfloat16Activations) {
  PHALANX_SKIP_WITHOUT_CUDA();
  constexpr int steps = 20;
  Backend& b = cuda_backend();
  std::vector<double> reference;
  b.set_compute_precision(ComputePrecision::BFloat16);
  try {
    reference = resnet20_losses(b, steps);
  } catch (...) {
    b.set_compute_precision(ComputePrecision::Float32);
    throw;
  }
  b.set_compute_precision(ComputePrecision::Float32);
  std::vector<double> stored;
  {
    const ReducedActivations reduced(b, ComputePrecision::BFloat16);
    stored = resnet20_losses(b, steps);
  }
  ASSERT_EQ(reference.size(), static_cast<std::size_t>(steps));
  ASSERT_EQ(stored.size(), static_cast<std::size_t>(steps));
  for (int step = 0; step < steps; ++step) {
    ASSERT_TRUE(std::isfinite(reference[step])) << "step " << step;
    ASSERT_TRUE(std::isfinite(stored[step])) << "step " << step << " with bf16 activations";
    EXPECT_NEAR(stored[step], reference[step], 0.1 * reference[step] + 0.02)
        << "step " << step << ": bf16 activations " << stored[step] << ", fp32 activations "
        << reference[step];
  }
  EXPECT_LT(reference.back(), 0.8 * reference.front()) << "fp32 activations: the network did not learn";
  EXPECT_LT(stored.back(), 0.8 * stored.front()) << "bf16 activations: the network did not learn";
  std::string trajectory;
  for (int step = 0; step < steps; step += 5)
    trajectory += std::to_string(reference[step]) + "/" + std::to_string(stored[step]) + " ";
  RecordProperty("losses_fp32_over_bf16_activations", trajectory);
}

}  // namespace
}  // namespace phalanx::testing
