// Host-to-device copy and normalisation of one input batch.
#include "phalanx/train/input_batch.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::train {

InputBatch::InputBatch(backend::Backend& backend, int capacity, int height, int width, int channels,
                       const std::vector<float>& mean, const std::vector<float>& standard_deviation)
    : backend_(backend),
      full_shape_{capacity, height, width, channels},
      images_(backend, full_shape_, DType::UInt8),
      input_(backend, full_shape_),
      labels_(backend, Shape{capacity}, DType::Int32),
      mean_(backend, Shape{channels}),
      standard_deviation_(backend, Shape{channels}),
      augment_draws_(backend, Shape{capacity, 5}, DType::Int32) {
  PHALANX_CHECK(mean.size() == static_cast<std::size_t>(channels) &&
                    standard_deviation.size() == static_cast<std::size_t>(channels),
                "mean/std need one value per channel");
  backend.copy_from_host(mean_.data(), mean.data(), mean.size() * sizeof(float));
  backend.copy_from_host(standard_deviation_.data(), standard_deviation.data(),
                         standard_deviation.size() * sizeof(float));
}

void InputBatch::load(const std::uint8_t* host_images, const std::int32_t* host_labels, int size,
                      const data::AugmentDraws* augment_draws, int cutout) {
  PHALANX_CHECK(size >= 1 && size <= full_shape_[0], "batch of ", size, " exceeds the capacity ",
                full_shape_[0]);
  const Shape shape = full_shape_.with_batch(size);
  images_.reshape(shape);
  input_.reshape(shape);
  labels_.reshape(Shape{size});
  backend_.copy_from_host(images_.data_as<void>(), host_images, images_.bytes());
  backend_.copy_from_host(labels_.data_as<void>(), host_labels, labels_.bytes());
  const std::int64_t channels = shape[3];
  if (augment_draws) {
    augment_draws_.reshape(Shape{size, 5});
    backend_.copy_from_host(augment_draws_.data_as<void>(), augment_draws, augment_draws_.bytes());
    const backend::AugmentGeometry geometry{size, static_cast<int>(shape[1]), static_cast<int>(shape[2]),
                                            static_cast<int>(channels), cutout};
    backend_.augment_normalize_images(geometry, images_.data_as<std::uint8_t>(),
                                      augment_draws_.data_as<std::int32_t>(), mean_.data(),
                                      standard_deviation_.data(), input_.data());
    return;
  }
  backend_.normalize_images(images_.data_as<std::uint8_t>(), shape.elements() / channels,
                            static_cast<int>(channels), mean_.data(), standard_deviation_.data(),
                            input_.data());
}

}  // namespace phalanx::train
