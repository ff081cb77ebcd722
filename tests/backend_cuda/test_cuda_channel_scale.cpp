// channel_scale and scale_samples on the CUDA backend against the CPU backend: in fp32 the
// products are the same bits and the channel sums of the backward agree within float rounding
// (another summation order); in bf16 and fp16 storage the CUDA results are the CPU's fp32 results
// on the same rounded inputs, rounded once (the sums within one unit in the last place).
#include <gtest/gtest.h>

#include "backend_cuda/cuda_test_support.hpp"

namespace phalanx::testing {
namespace {

using backend::Backend;
using backend::ComputePrecision;

constexpr double exact = 0.0;
// fp32 sums of 3000 products in another order: ~1e-6 of their scale.
constexpr double reordered_sums = 1e-5;

struct ScaleProblem {
  std::int64_t batch, spatial, channels;
};

// Channels above and below the kernel's 32-channel blocks, positions not a multiple of its 8 rows.
constexpr ScaleProblem problems[] = {{3, 57 * 53, 19}, {2, 11, 96}, {5, 1, 1280}};

std::vector<float> seeded(std::size_t count, std::uint64_t stream, float low = -1.0f, float high = 1.0f) {
  RandomStream random(20240611, stream);
  std::vector<float> values(count);
  for (float& value : values) value = random.next_uniform(low, high);
  return values;
}

std::vector<OpCase> channel_scale_cases() {
  std::vector<OpCase> cases;
  for (const ScaleProblem& problem : problems) {
    const std::string shape = std::to_string(problem.batch) + "x" + std::to_string(problem.spatial) + "x" +
                              std::to_string(problem.channels);
    const std::int64_t elements = problem.batch * problem.spatial * problem.channels;
    const std::int64_t scales = problem.batch * problem.channels;
    cases.push_back({"channel_scale_forward_" + shape, exact, [=](Backend& b) {
                       Tensor input = upload(b, seeded(elements, 1));
                       Tensor scale = upload(b, seeded(scales, 2, 0.0f, 1.0f));
                       Tensor output = empty_floats(b, elements);
                       b.channel_scale_forward(problem.batch, problem.spatial, problem.channels, input.data(),
                                               scale.data(), output.data());
                       return Outputs{{"output", as_doubles(download(b, output))}};
                     }});
    cases.push_back(
        {"channel_scale_backward_" + shape, reordered_sums, [=](Backend& b) {
           Tensor input = upload(b, seeded(elements, 3));
           Tensor scale = upload(b, seeded(scales, 4, 0.0f, 1.0f));
           Tensor grad_output = upload(b, seeded(elements, 5));
           Tensor grad_input = empty_floats(b, elements);
           Tensor grad_scale = empty_floats(b, scales);
           Tensor grad_scale_alone = empty_floats(b, scales);
           b.channel_scale_backward(problem.batch, problem.spatial, problem.channels, input.data(),
                                    scale.data(), grad_output.data(), grad_input.data(), grad_scale.data());
           b.channel_scale_backward(problem.batch, problem.spatial, problem.channels, input.data(),
                                    scale.data(), grad_output.data(), nullptr, grad_scale_alone.data());
           return Outputs{{"grad_input", as_doubles(download(b, grad_input))},
                          {"grad_scale", as_doubles(download(b, grad_scale))},
                          {"grad_scale_without_grad_input", as_doubles(download(b, grad_scale_alone))}};
         }});
  }
  cases.push_back({"scale_samples", exact, [](Backend& b) {
                     constexpr std::int64_t samples = 7, sample_elements = 30011;
                     Tensor input = upload(b, seeded(samples * sample_elements, 6));
                     Tensor keep = upload(b, std::vector<std::uint8_t>{1, 0, 1, 1, 0, 0, 1});
                     Tensor output = empty_floats(b, samples * sample_elements);
                     b.scale_samples(samples, sample_elements, keep.data_as<std::uint8_t>(), 1.0f / 0.9f,
                                     input.data(), output.data());
                     // In place, as the layer may call it.
                     b.scale_samples(samples, sample_elements, keep.data_as<std::uint8_t>(), 1.0f / 0.9f,
                                     input.data(), input.data());
                     return Outputs{{"output", as_doubles(download(b, output))},
                                    {"in_place", as_doubles(download(b, input))}};
                   }});
  return cases;
}

TEST(CudaParity, ChannelScaleAndScaleSamples) {
  PHALANX_SKIP_WITHOUT_CUDA();
  expect_parity(channel_scale_cases());
}

TEST(CudaDeterminism, ChannelScaleBackwardTwiceGivesTheSameBits) {
  PHALANX_SKIP_WITHOUT_CUDA();
  Backend& b = cuda_backend();
  const ScaleProblem problem = problems[0];
  const std::int64_t elements = problem.batch * problem.spatial * problem.channels;
  const std::int64_t scales = problem.batch * problem.channels;
  Tensor input = upload(b, seeded(elements, 7));
  Tensor scale = upload(b, seeded(scales, 8));
  Tensor grad_output = upload(b, seeded(elements, 9));
  Tensor first = empty_floats(b, scales), second = empty_floats(b, scales);
  b.channel_scale_backward(problem.batch, problem.spatial, problem.channels, input.data(), scale.data(),
                           grad_output.data(), nullptr, first.data());
  b.channel_scale_backward(problem.batch, problem.spatial, problem.channels, input.data(), scale.data(),
                           grad_output.data(), nullptr, second.data());
  EXPECT_EQ(download(b, first), download(b, second));
}

// ---- 2-byte storage ---------------------------------------------------------------------------

// Uploads `values` rounded to `precision` as the CUDA backend holds them (2-byte elements).
Tensor upload_stored(Backend& b, const std::vector<float>& values, ComputePrecision precision) {
  std::vector<std::uint16_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bits[i] = storage_bits(values[i], precision);
  Tensor tensor = empty_floats(b, static_cast<std::int64_t>(values.size()));
  b.copy_from_host(tensor.data_as<void>(), bits.data(), bits.size() * sizeof(std::uint16_t));
  return tensor;
}

std::vector<float> download_stored(Backend& b, const Tensor& tensor, std::size_t count,
                                   ComputePrecision precision) {
  std::vector<std::uint16_t> bits(count);
  b.copy_to_host(bits.data(), tensor.data_as<void>(), count * sizeof(std::uint16_t));
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = float_from_storage_bits(bits[i], precision);
  return values;
}

TEST(CudaActivationStorage, ChannelScaleAndScaleSamplesRoundTheFp32ResultsOnce) {
  PHALANX_SKIP_WITHOUT_CUDA();
  const ScaleProblem problem = problems[0];
  const std::size_t elements = static_cast<std::size_t>(problem.batch * problem.spatial * problem.channels);
  const std::size_t scales = static_cast<std::size_t>(problem.batch * problem.channels);
  for (const ComputePrecision precision : {ComputePrecision::BFloat16, ComputePrecision::Float16}) {
    SCOPED_TRACE(precision_name(precision));
    const std::vector<float> input = rounded_to_storage(seeded(elements, 10), precision);
    const std::vector<float> scale = rounded_to_storage(seeded(scales, 11, 0.0f, 1.0f), precision);
    const std::vector<float> grad_output = rounded_to_storage(seeded(elements, 12), precision);
    const std::vector<std::uint8_t> keep_values = {1, 0, 1};
    // The CPU reference in fp32 on the rounded values.
    Backend& cpu = cpu_backend();
    std::vector<float> output(elements), grad_input(elements), grad_scale(scales), kept(elements);
    cpu.channel_scale_forward(problem.batch, problem.spatial, problem.channels, input.data(), scale.data(),
                              output.data());
    cpu.channel_scale_backward(problem.batch, problem.spatial, problem.channels, input.data(), scale.data(),
                               grad_output.data(), grad_input.data(), grad_scale.data());
    cpu.scale_samples(problem.batch, problem.spatial * problem.channels, keep_values.data(), 1.25f,
                      input.data(), kept.data());

    Backend& b = cuda_backend();
    b.set_compute_precision(precision);
    b.set_activation_precision(precision);
    Tensor input_device = upload_stored(b, input, precision),
           scale_device = upload_stored(b, scale, precision),
           grad_output_device = upload_stored(b, grad_output, precision);
    Tensor keep = upload(b, keep_values);
    Tensor output_device = empty_floats(b, static_cast<std::int64_t>(elements)),
           grad_input_device = empty_floats(b, static_cast<std::int64_t>(elements)),
           grad_scale_device = empty_floats(b, static_cast<std::int64_t>(scales)),
           kept_device = empty_floats(b, static_cast<std::int64_t>(elements));
    b.channel_scale_forward(problem.batch, problem.spatial, problem.channels, input_device.data(),
                            scale_device.data(), output_device.data());
    b.channel_scale_backward(problem.batch, problem.spatial, problem.channels, input_device.data(),
                             scale_device.data(), grad_output_device.data(), grad_input_device.data(),
                             grad_scale_device.data());
    b.scale_samples(problem.batch, problem.spatial * problem.channels, keep.data_as<std::uint8_t>(), 1.25f,
                    input_device.data(), kept_device.data());
    const auto output_cuda = download_stored(b, output_device, elements, precision);
    const auto grad_input_cuda = download_stored(b, grad_input_device, elements, precision);
    const auto grad_scale_cuda = download_stored(b, grad_scale_device, scales, precision);
    const auto kept_cuda = download_stored(b, kept_device, elements, precision);
    b.set_activation_precision(ComputePrecision::Float32);
    b.set_compute_precision(ComputePrecision::Float32);

    EXPECT_EQ(output_cuda, rounded_to_storage(output, precision));
    EXPECT_EQ(grad_input_cuda, rounded_to_storage(grad_input, precision));
    EXPECT_EQ(kept_cuda, rounded_to_storage(kept, precision));
    // Sums in another order: at most one unit in the last place of the stored type apart.
    const double unit = precision == ComputePrecision::BFloat16 ? 1.0 / 128 : 1.0 / 1024;
    const std::vector<float> expected = rounded_to_storage(grad_scale, precision);
    for (std::size_t i = 0; i < scales; ++i)
      EXPECT_LE(std::fabs(grad_scale_cuda[i] - expected[i]), unit * std::fabs(expected[i]) + 1e-4)
          << "grad_scale " << i;
  }
}

}  // namespace
}  // namespace phalanx::testing
