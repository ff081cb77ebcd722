// InputBatch: batches of input on the device: the uint8 images and int32 labels copied from host
// memory, and the normalised float images the model reads, (x / 255 - mean) / std with the
// dataset file's own statistics (docs/DESIGN.md §4). Training, evaluation and prediction share it, so the
// normalisation lives in one place and only uint8 bytes cross to a GPU.
//
// Two staging buffers, each with its own backend::Upload, let training overlap the copy of the
// next batch with the current step (start_upload during the step, prepare at the next one); on a
// GPU the copy runs on the backend's copy stream and the compute stream waits for it by event.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/tensor.hpp"
#include "phalanx/data/augmentation.hpp"
#include "phalanx/data/loader.hpp"

namespace phalanx::train {

class InputBatch {
 public:
  // With `upload_height` x `upload_width` larger than height x width, the uploaded images are of
  // that (stored) size and each batch carries its resample windows (data::Batch), which prepare()
  // resizes to height x width on the device before it augments: a GPU rank's random resized crop.
  InputBatch(backend::Backend& backend, int capacity, int height, int width, int channels,
             const std::vector<float>& mean, const std::vector<float>& standard_deviation,
             int upload_height = 0, int upload_width = 0);

  // Copies `size` (<= capacity) samples from host memory and normalises them on the device. With
  // `augment_draws` (one per sample, host memory), the crop/flip/cutout they describe is applied
  // in the same pass (`cutout` is the square's side), so the loader ships plain bytes. The host
  // memory may be reused when it returns.
  void load(const std::uint8_t* host_images, const std::int32_t* host_labels, int size,
            const data::AugmentDraws* augment_draws = nullptr, int cutout = 0, bool operations = false);

  // The overlapped path. start_upload queues the copy of a loader batch (images, labels, draws)
  // into the staging buffer the current input does not use, and returns; wait_upload_host blocks
  // until that copy has read the batch's host memory (before the loader may reuse it); prepare
  // makes the device's compute work wait for the oldest started upload and normalises (augments)
  // it into input().
  void start_upload(const data::Batch& batch);
  void wait_upload_host();
  // `operations`: whether the draws may hold auto-augment ops (backend::AugmentGeometry).
  void prepare(int cutout, bool operations = false);
  // Of the upload prepare() last used (backend::Upload::timing: waits for its own events only).
  backend::UploadTiming last_upload_timing();

  const Tensor& input() const { return input_; }  // [size, H, W, C] float
  Tensor& input() { return input_; }              // the same, for mixing it in place
  const std::int32_t* labels() const { return staging_[current_].labels.data_as<std::int32_t>(); }  // device
  int size() const { return static_cast<int>(input_.shape()[0]); }

 private:
  struct Staging {
    Tensor images, labels, augment_draws, resample_windows;
    // The draws and windows in the backend's staging memory (page-locked on a GPU): the loader
    // keeps them in pageable memory, from which an asynchronous copy is staged by the driver and
    // may block.
    Tensor host_augment_draws, host_resample_windows;
    std::unique_ptr<backend::Upload> upload;
    int size = 0;
    bool augmented = false;
    bool resampled = false;
  };
  void start(int slot, const std::uint8_t* host_images, const std::int32_t* host_labels, int size,
             const data::AugmentDraws* augment_draws, const std::int32_t* resample_windows = nullptr);

  backend::Backend& backend_;
  Shape full_shape_;
  Shape upload_shape_;  // full_shape_, or the stored size the device resizes from
  Tensor input_, mean_, standard_deviation_;
  Tensor resized_;  // the batch resized to full_shape_ (uint8), where the device resizes
  std::array<Staging, 2> staging_;
  int current_ = 0;        // the staging buffer input() was made from
  int next_upload_ = 0;    // where start_upload writes next
  int uploads_ahead_ = 0;  // started uploads prepare() has not used yet (0 or 1)
};

}  // namespace phalanx::train
