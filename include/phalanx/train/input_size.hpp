// The model's input size: the stored images' own, unless data.augment.random_resized_crop sets a
// training size. Then training crops and resizes to it (the Loader), and evaluation and prediction
// resize the stored images (data.eval_resize) and centre-crop them to it, so every input the model
// sees has one shape.
#pragma once

#include <string>

#include "phalanx/config/config.hpp"
#include "phalanx/core/shape.hpp"
#include "phalanx/data/dataset.hpp"

namespace phalanx::train {

// [H, W, C] of the model's input for stored images of height x width x channels. Throws
// InvalidInput naming data.augment.random_resized_crop.size when the training size exceeds the
// stored image (`source`: the data as messages name it).
Shape model_sample_shape(const config::DataConfig& data, int height, int width, int channels,
                         const std::string& source);

// `part` (stored images) as the model takes them: with random_resized_crop, each image resized so
// its shorter side is data.eval_resize (0: left as stored) and centre-cropped to the training size
// (data::center_crop_window, data::resample_bilinear); without it, `part` unchanged.
data::Split evaluation_input(const config::DataConfig& data, data::Split part);

}  // namespace phalanx::train
