// Loader: gathers this rank's samples for upcoming steps on a background thread, so that training
// never waits for a gather it could have overlapped. It gathers from its SampleSource (memory, or
// the file under the HDF5 lock) into a ring of slots the training thread reads in order.
#include "phalanx/data/loader.hpp"

#include <memory>
#include <utility>

#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::data {

Loader::Loader(std::shared_ptr<const Split> split, ShardPlan plan, int prefetch, std::int64_t first_epoch,
               std::int64_t first_step, std::int64_t end_epoch, Allocator& allocator,
               const AugmentOptions& augment, bool augment_on_device)
    : Loader(MemorySource::of_split(std::move(split)), std::move(plan), prefetch, first_epoch, first_step,
             end_epoch, allocator, augment, augment_on_device) {}

Loader::Loader(std::shared_ptr<SampleSource> source, ShardPlan plan, int prefetch, std::int64_t first_epoch,
               std::int64_t first_step, std::int64_t end_epoch, Allocator& allocator,
               const AugmentOptions& augment, bool augment_on_device)
    : source_(std::move(source)),
      plan_(std::move(plan)),
      prefetch_(prefetch),
      first_epoch_(first_epoch),
      first_step_(first_step),
      end_epoch_(end_epoch),
      allocator_(allocator),
      augment_(augment),
      augment_on_device_(augment_on_device && augment.enabled()) {
  PHALANX_CHECK(source_ != nullptr, "no sample source given");
  PHALANX_CHECK(prefetch_ >= 1, "prefetch ", prefetch_);
  PHALANX_CHECK(augment_.random_crop_padding >= 0 && augment_.cutout >= 0, "augment padding ",
                augment_.random_crop_padding, " cutout ", augment_.cutout);
  PHALANX_CHECK(source_->count == plan_.dataset_size(), "split ", source_->name, " has ", source_->count,
                " samples but the shard plan is for ", plan_.dataset_size());
  const std::int64_t steps = plan_.steps_per_epoch();
  PHALANX_CHECK(first_epoch_ >= 0 && first_step_ >= 0 && first_step_ <= steps && end_epoch_ >= first_epoch_,
                "epochs [", first_epoch_, ", ", end_epoch_, ") from step ", first_step_, " of ", steps);
  // A resume point at the very end of an epoch is the start of the next one.
  if (first_step_ == steps) {
    ++first_epoch_;
    first_step_ = 0;
  }
  total_batches_ = end_epoch_ > first_epoch_ ? (end_epoch_ - first_epoch_) * steps - first_step_ : 0;

  const ResizedCropOptions& crop = augment_.random_resized_crop;
  image_height_ = crop.enabled() ? crop.size : source_->height;
  image_width_ = crop.enabled() ? crop.size : source_->width;
  PHALANX_CHECK(image_height_ <= source_->height && image_width_ <= source_->width, "resized crop ",
                image_height_, "x", image_width_, " of split ", source_->name, "'s ", source_->height, "x",
                source_->width, " images");
  const auto batch = static_cast<std::size_t>(plan_.local_batch());
  const auto image_bytes =
      static_cast<std::size_t>(image_height_) * static_cast<std::size_t>(image_width_) * source_->channels;
  slot_image_bytes_ = batch * image_bytes;
  if (crop.enabled() || (augment_.enabled() && !augment_on_device_))
    unaugmented_.resize(batch * static_cast<std::size_t>(source_->image_bytes()));
  if (crop.enabled() && augment_.enabled() && !augment_on_device_) resized_.resize(image_bytes);
  slot_label_bytes_ = static_cast<std::size_t>(plan_.local_batch()) * sizeof(std::int32_t);
  slots_.resize(static_cast<std::size_t>(prefetch_) + 1);
  try {
    for (Slot& slot : slots_) {
      slot.images = static_cast<std::uint8_t*>(allocator_.allocate(slot_image_bytes_));
      slot.labels = static_cast<std::int32_t*>(allocator_.allocate(slot_label_bytes_));
      if (augment_on_device_) slot.augment_draws.resize(static_cast<std::size_t>(plan_.local_batch()));
    }
    thread_ = std::thread(&Loader::produce, this);
  } catch (...) {
    release_slots();
    throw;
  }
}

Loader::~Loader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  release_slots();
}

void Loader::release_slots() noexcept {
  for (Slot& slot : slots_) {
    if (slot.images) allocator_.deallocate(slot.images, slot_image_bytes_);
    if (slot.labels) allocator_.deallocate(slot.labels, slot_label_bytes_);
    slot.images = nullptr;
    slot.labels = nullptr;
  }
}

const Batch* Loader::next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return produced_ > consumed_ || error_ || consumed_ >= total_batches_; });
  if (produced_ > consumed_) {
    const Slot& slot = slots_[static_cast<std::size_t>(consumed_) % slots_.size()];
    ++consumed_;
    lock.unlock();
    // Handing out this batch frees the slot of the previous one: the producer may refill it.
    changed_.notify_all();
    return &slot.batch;
  }
  if (error_) std::rethrow_exception(error_);
  return nullptr;
}

void Loader::produce_resized_crops(const std::vector<std::int64_t>& indices, std::int64_t epoch, Slot& slot) {
  source_->gather(indices.data(), indices.size(), unaugmented_.data(), slot.labels);
  const auto stored_bytes = static_cast<std::size_t>(source_->image_bytes());
  const std::size_t image_bytes = static_cast<std::size_t>(image_height_) * image_width_ * source_->channels;
  const ResizedCropOptions& crop = augment_.random_resized_crop;
  for (std::size_t position = 0; position < indices.size(); ++position) {
    const ResampleWindow window =
        random_resized_crop_window(crop.ranges, plan_.seed(), epoch, indices[position], source_->height,
                                   source_->width, image_height_, image_width_);
    std::uint8_t* output = slot.images + position * image_bytes;
    // The later steps read the crop from its own buffer (augment_image never works in place).
    const bool later_steps_here = augment_.enabled() && !augment_on_device_;
    resample_bilinear(window, unaugmented_.data() + position * stored_bytes, source_->height, source_->width,
                      source_->channels, later_steps_here ? resized_.data() : output, image_height_,
                      image_width_);
    if (later_steps_here)
      augment_image(augment_, plan_.seed(), epoch, indices[position], resized_.data(), output, image_height_,
                    image_width_, source_->channels);
    if (augment_on_device_)
      slot.augment_draws[position] =
          augment_draws(augment_, plan_.seed(), epoch, indices[position], image_height_, image_width_);
  }
}

void Loader::produce() {
  try {
    const std::int64_t steps = plan_.steps_per_epoch();
    const auto sample_bytes = static_cast<std::size_t>(source_->image_bytes());
    std::int64_t epoch = first_epoch_, step = first_step_;
    std::unique_ptr<EpochOrder> order;
    for (std::int64_t batch_number = 0; batch_number < total_batches_; ++batch_number) {
      {
        // Batch `batch_number` overwrites the slot of batch_number - (prefetch + 1), which is free
        // once the consumer has taken the batch after it.
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || batch_number < consumed_ + prefetch_; });
        if (stopping_) return;
      }
      if (!order || order->epoch() != epoch) {
        order.reset();  // the old epoch's permutation goes before the new one is drawn
        order = std::make_unique<EpochOrder>(plan_, epoch);
      }
      const double produce_begin = steady_seconds();
      Slot& slot = slots_[static_cast<std::size_t>(batch_number) % slots_.size()];
      const std::vector<std::int64_t> indices = plan_.rank_indices(*order, step);
      if (augment_.random_resized_crop.enabled()) {
        produce_resized_crops(indices, epoch, slot);
      } else if (augment_on_device_) {
        source_->gather(indices.data(), indices.size(), slot.images, slot.labels);
        for (std::size_t position = 0; position < indices.size(); ++position)
          slot.augment_draws[position] = augment_draws(augment_, plan_.seed(), epoch, indices[position],
                                                       source_->height, source_->width);
      } else if (augment_.enabled()) {
        source_->gather(indices.data(), indices.size(), unaugmented_.data(), slot.labels);
        for (std::size_t position = 0; position < indices.size(); ++position)
          augment_image(augment_, plan_.seed(), epoch, indices[position],
                        unaugmented_.data() + position * sample_bytes, slot.images + position * sample_bytes,
                        source_->height, source_->width, source_->channels);
      } else {
        source_->gather(indices.data(), indices.size(), slot.images, slot.labels);
      }
      slot.batch.epoch = epoch;
      slot.batch.step = step;
      slot.batch.size = static_cast<int>(indices.size());
      slot.batch.images = slot.images;
      slot.batch.labels = slot.labels;
      slot.batch.augment_draws = augment_on_device_ ? slot.augment_draws.data() : nullptr;
      slot.batch.produce_begin = produce_begin;
      slot.batch.produce_end = steady_seconds();
      {
        std::lock_guard lock(mutex_);
        produced_ = batch_number + 1;
      }
      changed_.notify_all();
      if (++step == steps) {
        ++epoch;
        step = 0;
      }
    }
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    changed_.notify_all();
  }
}

}  // namespace phalanx::data
