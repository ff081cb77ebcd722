// InputBatch: one batch of input on the device: the uint8 images and int32 labels copied from
// host memory, and the normalised float images the model reads, (x / 255 - mean) / std with the
// dataset file's own statistics (DESIGN §4). Training, evaluation and prediction share it, so the
// normalisation lives in one place and only uint8 bytes cross to a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/tensor.hpp"
#include "phalanx/data/augmentation.hpp"

namespace phalanx::train {

class InputBatch {
 public:
  InputBatch(backend::Backend& backend, int capacity, int height, int width, int channels,
             const std::vector<float>& mean, const std::vector<float>& standard_deviation);

  // Copies `size` (<= capacity) samples from host memory and normalises them on the device. With
  // `augment_draws` (one per sample, host memory), the crop/flip/cutout they describe is applied
  // in the same pass (`cutout` is the square's side), so the loader ships plain bytes.
  void load(const std::uint8_t* host_images, const std::int32_t* host_labels, int size,
            const data::AugmentDraws* augment_draws = nullptr, int cutout = 0);

  const Tensor& input() const { return input_; }                                  // [size, H, W, C] float
  const std::int32_t* labels() const { return labels_.data_as<std::int32_t>(); }  // device memory
  int size() const { return static_cast<int>(input_.shape()[0]); }

 private:
  backend::Backend& backend_;
  Shape full_shape_;
  Tensor images_, input_, labels_, mean_, standard_deviation_, augment_draws_;
};

}  // namespace phalanx::train
