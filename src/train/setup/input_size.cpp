// The model's input size and evaluation's resize + centre crop to it (input_size.hpp): one place
// that decides the shape, so training, evaluation, prediction and the batch-size probes agree.
#include "phalanx/train/input_size.hpp"

#include <algorithm>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/data/resized_crop.hpp"

namespace phalanx::train {

Shape model_sample_shape(const config::DataConfig& data, int height, int width, int channels,
                         const std::string& source) {
  const auto& crop = data.augment.random_resized_crop;
  if (!crop) return Shape{height, width, channels};
  PHALANX_REQUIRE_INPUT(crop->size <= height && crop->size <= width,
                        "data.augment.random_resized_crop.size: ", crop->size, " is larger than the ", height,
                        "x", width, " images of ", source,
                        "; the training size crops the stored images, so it must fit in them");
  return Shape{crop->size, crop->size, channels};
}

data::Split evaluation_input(const config::DataConfig& data, data::Split part) {
  const auto& crop = data.augment.random_resized_crop;
  if (!crop) return part;
  const int size = crop->size;
  PHALANX_REQUIRE_INPUT(size <= part.height && size <= part.width,
                        "data.augment.random_resized_crop.size: ", size, " is larger than the ", part.height,
                        "x", part.width, " images of split '", part.name,
                        "'; evaluation centre-crops the stored images to the training size");
  const int resize = data.eval_resize > 0 ? data.eval_resize : std::min(part.height, part.width);
  const data::ResampleWindow window = data::center_crop_window(part.height, part.width, resize, size, size);
  data::Split cropped;
  cropped.name = part.name;
  cropped.count = part.count;
  cropped.height = size;
  cropped.width = size;
  cropped.channels = part.channels;
  cropped.labels = std::move(part.labels);
  cropped.images.resize(static_cast<std::size_t>(cropped.count * cropped.image_bytes()));
  for (std::int64_t sample = 0; sample < part.count; ++sample)
    data::resample_bilinear(window, part.images.data() + sample * part.image_bytes(), part.height, part.width,
                            part.channels, cropped.images.data() + sample * cropped.image_bytes(), size,
                            size);
  return cropped;
}

}  // namespace phalanx::train
