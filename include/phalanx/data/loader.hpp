// Loader: a background thread that gathers this rank's samples for upcoming steps into a ring
// of host buffers (uint8 images, int32 labels), `prefetch` batches ahead of training. Samples come
// from a SampleSource: memory (rank or node cache) or the file itself (streaming, whose HDF5 reads
// hold the process-wide HDF5 lock).
// Training augmentation (AugmentOptions) is applied here, per sample, while gathering; with
// random_resized_crop on, the batches hold images of the training size, not the stored one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "phalanx/core/allocator.hpp"
#include "phalanx/data/augmentation.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/sample_source.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::data {

struct Batch {
  std::int64_t epoch = 0;
  std::int64_t step = 0;  // step within the epoch
  int size = 0;
  const std::uint8_t* images = nullptr;  // [size, H, W, C] (Loader::image_height/width)
  const std::int32_t* labels = nullptr;  // [size]
  // Set when augmentation is left to the device (Loader's `augment_on_device`): the images are
  // the split's bytes and these are each image's AugmentDraws, to apply where they are
  // normalised (Backend::augment_normalize_images).
  const AugmentDraws* augment_draws = nullptr;  // [size]
  // Steady-clock seconds (core/timer.hpp) when the loader thread began and finished this batch:
  // the data thread's track of the trace.
  double produce_begin = 0, produce_end = 0;
};

class Loader {
 public:
  // Produces batches for epochs [first_epoch, end_epoch), starting at `first_step` of the first.
  // `allocator` provides the ring buffers (pinned host memory on GPU ranks). `augment` (default
  // off: the bytes of the split, unchanged) is drawn from (plan.seed(), epoch, sample index); with
  // `augment_on_device` the loader only draws, and the batch carries the draws instead (GPU ranks,
  // where the input kernel applies them for free). The random resized crop is done here on every
  // rank: a GPU rank's batch holds the resized crops, and its draws are of the training size.
  Loader(std::shared_ptr<SampleSource> source, ShardPlan plan, int prefetch, std::int64_t first_epoch,
         std::int64_t first_step, std::int64_t end_epoch, Allocator& allocator,
         const AugmentOptions& augment = {}, bool augment_on_device = false);
  // The same over a split in this rank's memory.
  Loader(std::shared_ptr<const Split> split, ShardPlan plan, int prefetch, std::int64_t first_epoch,
         std::int64_t first_step, std::int64_t end_epoch, Allocator& allocator,
         const AugmentOptions& augment = {}, bool augment_on_device = false);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Blocks until the next batch is ready. The returned batch stays valid until the next call;
  // returns nullptr when all epochs are done.
  const Batch* next();

  // The batches' images: the training size with random_resized_crop, else the stored size.
  int image_height() const { return image_height_; }
  int image_width() const { return image_width_; }

 private:
  void produce();
  void release_slots() noexcept;

  struct Slot {
    Batch batch;
    std::uint8_t* images = nullptr;
    std::int32_t* labels = nullptr;
    std::vector<AugmentDraws> augment_draws;  // filled only when augmenting on the device
  };
  // Gathers the samples at `indices` and writes their random resized crops (and, on the host, the
  // later steps) into the slot.
  void produce_resized_crops(const std::vector<std::int64_t>& indices, std::int64_t epoch, Slot& slot);

  std::shared_ptr<SampleSource> source_;
  ShardPlan plan_;
  int prefetch_;
  std::int64_t first_epoch_, first_step_, end_epoch_;
  std::int64_t total_batches_ = 0;  // batches from (first_epoch, first_step) to the end
  Allocator& allocator_;
  AugmentOptions augment_;
  bool augment_on_device_ = false;
  int image_height_ = 0, image_width_ = 0;
  // prefetch + 1 slots: `prefetch` batches ready ahead while the consumer still holds one.
  std::vector<Slot> slots_;
  std::size_t slot_image_bytes_ = 0;
  std::size_t slot_label_bytes_ = 0;
  std::vector<std::uint8_t> unaugmented_;  // the gathered batch before augmentation
  std::vector<std::uint8_t> resized_;      // one resized crop before the other steps

  std::mutex mutex_;
  std::condition_variable changed_;
  std::int64_t produced_ = 0;  // batches written
  std::int64_t consumed_ = 0;  // batches handed out (the last one still in use)
  bool stopping_ = false;      // destructor asks the producer to stop
  std::exception_ptr error_;   // what the producer threw, rethrown by next()
  std::thread thread_;
};

}  // namespace phalanx::data
