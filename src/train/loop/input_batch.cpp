// Host-to-device copies and normalisation of input batches (see input_batch.hpp).
#include "loop/input_batch.hpp"

#include <cstring>

#include "phalanx/core/error.hpp"

namespace phalanx::train {

static_assert(backend::augment_draw_words == data::augment_draw_words,
              "the backends read the loader's draws as int32[augment_draw_words]");
static_assert(backend::resample_window_words == data::resample_window_words,
              "the backends read the loader's windows as int32[resample_window_words]");

InputBatch::InputBatch(backend::Backend& backend, int capacity, int height, int width, int channels,
                       const std::vector<float>& mean, const std::vector<float>& standard_deviation,
                       int upload_height, int upload_width)
    : backend_(backend),
      full_shape_{capacity, height, width, channels},
      upload_shape_{capacity, upload_height > 0 ? upload_height : height,
                    upload_width > 0 ? upload_width : width, channels},
      input_(backend, full_shape_),
      mean_(backend, Shape{channels}),
      standard_deviation_(backend, Shape{channels}) {
  PHALANX_CHECK(mean.size() == static_cast<std::size_t>(channels) &&
                    standard_deviation.size() == static_cast<std::size_t>(channels),
                "mean/std need one value per channel");
  backend.copy_from_host(mean_.data(), mean.data(), mean.size() * sizeof(float));
  backend.copy_from_host(standard_deviation_.data(), standard_deviation.data(),
                         standard_deviation.size() * sizeof(float));
  const bool resizes = upload_shape_ != full_shape_;
  PHALANX_CHECK(upload_shape_[1] >= height && upload_shape_[2] >= width, "upload of ", upload_shape_[1], "x",
                upload_shape_[2], " images for a ", height, "x", width, " input");
  if (resizes) resized_ = Tensor(backend, full_shape_, DType::UInt8);
  for (Staging& staging : staging_) {
    staging.images = Tensor(backend, upload_shape_, DType::UInt8);
    if (resizes)
      staging.resample_windows =
          Tensor(backend, Shape{capacity, backend::resample_window_words}, DType::Int32);
    staging.labels = Tensor(backend, Shape{capacity}, DType::Int32);
    staging.augment_draws = Tensor(backend, Shape{capacity, backend::augment_draw_words}, DType::Int32);
    staging.upload = backend.make_upload();
  }
}

void InputBatch::start(int slot, const std::uint8_t* host_images, const std::int32_t* host_labels, int size,
                       const data::AugmentDraws* augment_draws, const std::int32_t* resample_windows) {
  PHALANX_CHECK(size >= 1 && size <= full_shape_[0], "batch of ", size, " exceeds the capacity ",
                full_shape_[0]);
  // Stored-size images come with their windows, and only into buffers made for them.
  PHALANX_CHECK((resample_windows != nullptr) == (upload_shape_ != full_shape_),
                resample_windows ? "resample windows for an input that does not resize"
                                 : "an input that resizes got a batch without resample windows");
  Staging& staging = staging_[static_cast<std::size_t>(slot)];
  staging.size = size;
  staging.augmented = augment_draws != nullptr;
  staging.resampled = resample_windows != nullptr;
  const auto image_bytes = static_cast<std::size_t>(upload_shape_.with_batch(size).elements());
  std::vector<backend::UploadPart> parts = {
      {staging.images.data_as<void>(), host_images, image_bytes},
      {staging.labels.data_as<void>(), host_labels, static_cast<std::size_t>(size) * sizeof(std::int32_t)}};
  if (augment_draws) {
    const auto draw_bytes = static_cast<std::size_t>(size) * sizeof(data::AugmentDraws);
    staging.upload->wait_host();  // this slot's previous copy has read the staged draws
    // Allocated at the first augmented batch: evaluation never augments and never pays for it.
    staging.host_augment_draws.ensure(backend_.staging_allocator(),
                                      Shape{full_shape_[0], backend::augment_draw_words}, DType::Int32);
    std::memcpy(staging.host_augment_draws.data_as<void>(), augment_draws, draw_bytes);
    parts.push_back(
        {staging.augment_draws.data_as<void>(), staging.host_augment_draws.data_as<void>(), draw_bytes});
  }
  if (resample_windows) {
    const auto window_bytes =
        static_cast<std::size_t>(size) * backend::resample_window_words * sizeof(std::int32_t);
    if (!augment_draws) staging.upload->wait_host();  // as for the draws above
    staging.host_resample_windows.ensure(backend_.staging_allocator(),
                                         Shape{full_shape_[0], backend::resample_window_words}, DType::Int32);
    std::memcpy(staging.host_resample_windows.data_as<void>(), resample_windows, window_bytes);
    parts.push_back({staging.resample_windows.data_as<void>(), staging.host_resample_windows.data_as<void>(),
                     window_bytes});
  }
  staging.upload->start(parts);
}

void InputBatch::start_upload(const data::Batch& batch) {
  PHALANX_CHECK(uploads_ahead_ == 0, "an upload is already waiting for prepare()");
  start(next_upload_, batch.images, batch.labels, batch.size, batch.augment_draws, batch.resample_windows);
  next_upload_ = 1 - next_upload_;
  uploads_ahead_ = 1;
}

void InputBatch::wait_upload_host() {
  staging_[static_cast<std::size_t>(1 - next_upload_)].upload->wait_host();
}

void InputBatch::prepare(int cutout, bool operations) {
  PHALANX_CHECK(uploads_ahead_ == 1, "prepare() without a started upload");
  // Everything queued so far (the previous step, up to its loss) is the last reader of the
  // buffer the previous input came from; its next upload must wait for that work on the device.
  const int previous = current_;
  current_ = 1 - next_upload_;
  if (previous != current_)
    staging_[static_cast<std::size_t>(previous)].upload->order_next_start_after_compute();
  uploads_ahead_ = 0;
  Staging& staging = staging_[static_cast<std::size_t>(current_)];
  staging.upload->order_compute_after();
  const Shape shape = full_shape_.with_batch(staging.size);
  input_.reshape(shape);
  const std::int64_t channels = shape[3];
  const std::uint8_t* images = staging.images.data_as<std::uint8_t>();
  if (staging.resampled) {
    const backend::ResampleGeometry geometry{staging.size,
                                             static_cast<int>(upload_shape_[1]),
                                             static_cast<int>(upload_shape_[2]),
                                             static_cast<int>(channels),
                                             static_cast<int>(shape[1]),
                                             static_cast<int>(shape[2])};
    backend_.resample_images(geometry, images, staging.resample_windows.data_as<std::int32_t>(),
                             resized_.data_as<std::uint8_t>());
    images = resized_.data_as<std::uint8_t>();
  }
  if (staging.augmented) {
    backend::AugmentGeometry geometry{staging.size, static_cast<int>(shape[1]), static_cast<int>(shape[2]),
                                      static_cast<int>(channels), cutout};
    geometry.operations = operations;
    backend_.augment_normalize_images(geometry, images, staging.augment_draws.data_as<std::int32_t>(),
                                      mean_.data(), standard_deviation_.data(), input_.data());
    return;
  }
  backend_.normalize_images(images, shape.elements() / channels, static_cast<int>(channels), mean_.data(),
                            standard_deviation_.data(), input_.data());
}

backend::UploadTiming InputBatch::last_upload_timing() {
  return staging_[static_cast<std::size_t>(current_)].upload->timing();
}

void InputBatch::load(const std::uint8_t* host_images, const std::int32_t* host_labels, int size,
                      const data::AugmentDraws* augment_draws, int cutout, bool operations) {
  PHALANX_CHECK(uploads_ahead_ == 0, "load() while an overlapped upload is pending");
  start(next_upload_, host_images, host_labels, size, augment_draws);
  next_upload_ = 1 - next_upload_;
  uploads_ahead_ = 1;
  wait_upload_host();  // the caller may reuse its host memory on return
  prepare(cutout, operations);
}

}  // namespace phalanx::train
