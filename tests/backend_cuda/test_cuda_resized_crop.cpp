// RandomResizedCrop on a GPU rank against a CPU rank, bit for bit. The crop itself is the loader's on
// both (data::random_resized_crop_window, data::resample_bilinear on the host); a GPU rank then
// uploads the training-size crop with the draws of the other steps at that size, and the input
// kernel applies them. The input the model reads must equal a CPU rank's: augment_image of the
// crop, then normalize_images.
#include <cstring>
#include <vector>

#include "backend_cuda/cuda_test_support.hpp"
#include "phalanx/data/augmentation.hpp"
#include "phalanx/data/resized_crop.hpp"

namespace phalanx::testing {
namespace {

TEST(CudaResizedCrop, AGpuRanksInputEqualsACpuRanks) {
  PHALANX_SKIP_WITHOUT_CUDA();
  constexpr int batch = 23, stored_height = 30, stored_width = 26, channels = 3, size = 17;
  constexpr std::uint64_t seed = 5;
  constexpr std::int64_t epoch = 2;
  const std::vector<std::uint8_t> stored =
      random_bytes(static_cast<std::size_t>(batch) * stored_height * stored_width * channels, 41);
  const auto crop_bytes = static_cast<std::size_t>(size) * size * channels;
  for (const bool operations : {false, true}) {
    SCOPED_TRACE(operations ? "with TrivialAugment" : "crop, flip, cutout, erasing");
    data::AugmentOptions options;
    options.random_resized_crop =
        data::ResizedCropOptions{size, data::ResizedCropRanges{0.08, 1.0, 0.75, 4.0 / 3.0}};
    options.horizontal_flip = true;
    options.cutout = 5;
    options.random_erasing = data::RandomErasingOptions{0.5, 0.02, 0.33, 0.3, 3.3};
    if (operations) options.auto_augment.policy = data::AutoAugmentPolicy::TrivialAugmentWide;
    std::vector<std::uint8_t> crops(batch * crop_bytes), cpu_images(batch * crop_bytes);
    std::vector<std::int32_t> draws;
    for (int sample = 0; sample < batch; ++sample) {
      const std::int64_t index = 1000 + 7 * sample;  // the sample's index in its split
      const data::ResampleWindow window = data::random_resized_crop_window(
          options.random_resized_crop.ranges, seed, epoch, index, stored_height, stored_width, size, size);
      data::resample_bilinear(window, stored.data() + sample * stored_height * stored_width * channels,
                              stored_height, stored_width, channels, crops.data() + sample * crop_bytes, size,
                              size);
      data::augment_image(options, seed, epoch, index, crops.data() + sample * crop_bytes,
                          cpu_images.data() + sample * crop_bytes, size, size, channels);
      const data::AugmentDraws drawn = data::augment_draws(options, seed, epoch, index, size, size);
      const auto* words = reinterpret_cast<const std::int32_t*>(&drawn);
      draws.insert(draws.end(), words, words + data::augment_draw_words);
    }
    const std::vector<float> mean{0.2860f, 0.45f, 0.5f}, deviation{0.3530f, 0.22f, 0.27f};
    const std::int64_t values = static_cast<std::int64_t>(batch) * size * size * channels;

    backend::Backend& cpu = cpu_backend();
    Tensor cpu_input = upload(cpu, cpu_images), cpu_mean = upload(cpu, mean),
           cpu_deviation = upload(cpu, deviation);
    Tensor cpu_output = empty_floats(cpu, values);
    cpu.normalize_images(cpu_input.data_as<std::uint8_t>(), values / channels, channels, cpu_mean.data(),
                         cpu_deviation.data(), cpu_output.data());

    backend::Backend& gpu = cuda_backend();
    Tensor gpu_input = upload(gpu, crops), gpu_draws = upload(gpu, draws), gpu_mean = upload(gpu, mean),
           gpu_deviation = upload(gpu, deviation);
    Tensor gpu_output = empty_floats(gpu, values);
    gpu.augment_normalize_images(
        backend::AugmentGeometry{batch, size, size, channels, options.cutout, operations},
        gpu_input.data_as<std::uint8_t>(), gpu_draws.data_as<std::int32_t>(), gpu_mean.data(),
        gpu_deviation.data(), gpu_output.data());

    const std::vector<float> expected = download(cpu, cpu_output), actual = download(gpu, gpu_output);
    ASSERT_EQ(expected.size(), actual.size());
    EXPECT_EQ(std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace phalanx::testing
