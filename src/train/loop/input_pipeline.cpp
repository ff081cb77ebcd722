// The two input pipelines: synchronous (CPU ranks: fetch and copy at the top of the step) and
// overlapped (GPU ranks: the next batch is fetched and its upload started during backward, and
// augmentation is left to the input kernel, with the same draws and so the same bits).
#include "loop/input_pipeline.hpp"

#include <utility>

#include "phalanx/core/timer.hpp"
#include "phalanx/data/loader.hpp"
#include "loop/input_batch.hpp"

namespace phalanx::train {

namespace {

BatchFacts facts_of(const data::Batch& batch) {
  return BatchFacts{batch.epoch, batch.step, batch.produce_begin, batch.produce_end};
}

struct PipelineSetup {
  backend::Backend& backend;
  std::shared_ptr<data::SampleSource> source;
  const data::ShardPlan& plan;
  const config::DataConfig& data;
  const data::DatasetInfo& dataset;
  const TrainingPosition& position;
  std::int64_t epochs;
};

// The loader's options from data.augment.
data::AugmentOptions augment_options(const config::AugmentConfig& augment) {
  const config::RandomErasingConfig& erasing = augment.random_erasing;
  const config::RandAugmentConfig& rand_augment = augment.rand_augment;
  const data::AutoAugmentPolicy policy = augment.trivial_augment ? data::AutoAugmentPolicy::TrivialAugmentWide
                                         : rand_augment.num_ops > 0 ? data::AutoAugmentPolicy::RandAugment
                                                                    : data::AutoAugmentPolicy::Off;
  data::ResizedCropOptions resized_crop;
  if (const auto& crop = augment.random_resized_crop)
    resized_crop = {crop->size,
                    data::ResizedCropRanges{crop->scale[0], crop->scale[1], crop->ratio[0], crop->ratio[1]}};
  return data::AugmentOptions{
      augment.random_crop_padding,
      augment.horizontal_flip,
      augment.cutout,
      data::RandomErasingOptions{erasing.probability, erasing.scale[0], erasing.scale[1], erasing.ratio[0],
                                 erasing.ratio[1]},
      data::AutoAugmentOptions{policy, rand_augment.num_ops, rand_augment.magnitude,
                               rand_augment.magnitude_bins},
      resized_crop};
}

// The loader and the device buffers both pipelines feed from.
struct PipelineParts {
  PipelineParts(const PipelineSetup& setup, bool augment_on_device)
      : loader(setup.source, setup.plan, setup.data.prefetch_batches, setup.position.epoch,
               setup.position.step_in_epoch, setup.epochs, setup.backend.staging_allocator(),
               augment_options(setup.data.augment), augment_on_device),
        inputs(setup.backend, setup.plan.local_batch(), loader.image_height(), loader.image_width(),
               setup.source->channels, setup.dataset.mean, setup.dataset.standard_deviation),
        cutout(setup.data.augment.cutout),
        operations(augment_options(setup.data.augment).auto_augment.enabled()) {}

  data::Loader loader;
  InputBatch inputs;
  int cutout;
  bool operations;  // TrivialAugment or RandAugment on: the input kernel runs their ops
};

class SynchronousInput final : public InputPipeline {
 public:
  explicit SynchronousInput(const PipelineSetup& setup) : parts_(setup, false) {}

  std::optional<BatchFacts> next() override {
    fetched_ = parts_.loader.next();
    if (!fetched_) return std::nullopt;
    return facts_of(*fetched_);
  }
  void prepare() override {
    parts_.inputs.start_upload(*fetched_);  // the copy itself: device memory is host memory
    parts_.inputs.prepare(parts_.cutout, parts_.operations);
  }
  double fetch_ahead(bool) override { return 0; }
  UploadCost last_upload() override { return {parts_.inputs.last_upload_timing(), UploadPlace::HostStage}; }
  const Tensor& input() const override { return parts_.inputs.input(); }
  Tensor& input() override { return parts_.inputs.input(); }
  const std::int32_t* labels() const override { return parts_.inputs.labels(); }

 private:
  PipelineParts parts_;
  const data::Batch* fetched_ = nullptr;  // valid until the loader's next call
};

class OverlappedInput final : public InputPipeline {
 public:
  // The loader leaves augmentation to the input kernel, with the same draws and so the same bits.
  explicit OverlappedInput(const PipelineSetup& setup) : parts_(setup, true) {}

  std::optional<BatchFacts> next() override {
    if (uploading_) return std::exchange(uploading_, std::nullopt);
    // The first step (or one after the data ran short): nothing was fetched ahead.
    fetched_ = parts_.loader.next();
    if (!fetched_) return std::nullopt;
    return facts_of(*fetched_);
  }
  void prepare() override {
    if (fetched_) parts_.inputs.start_upload(*std::exchange(fetched_, nullptr));
    parts_.inputs.prepare(parts_.cutout, parts_.operations);
  }
  double fetch_ahead(bool another_step) override {
    if (!another_step) return 0;
    Stopwatch fetch_clock;
    parts_.inputs.wait_upload_host();  // this step's copy is done: the loader may reuse its host slot
    if (const data::Batch* batch = parts_.loader.next()) {
      uploading_ = facts_of(*batch);
      parts_.inputs.start_upload(*batch);
    }
    return fetch_clock.seconds();
  }
  UploadCost last_upload() override { return {parts_.inputs.last_upload_timing(), UploadPlace::CopyStream}; }
  const Tensor& input() const override { return parts_.inputs.input(); }
  Tensor& input() override { return parts_.inputs.input(); }
  const std::int32_t* labels() const override { return parts_.inputs.labels(); }

 private:
  PipelineParts parts_;
  std::optional<BatchFacts> uploading_;   // the next batch, its upload in flight
  const data::Batch* fetched_ = nullptr;  // fetched at the top of this step, not yet uploading
};

}  // namespace

std::unique_ptr<InputPipeline> make_input_pipeline(backend::Backend& backend,
                                                   std::shared_ptr<data::SampleSource> source,
                                                   const data::ShardPlan& plan,
                                                   const config::DataConfig& data,
                                                   const data::DatasetInfo& dataset,
                                                   const TrainingPosition& position, std::int64_t epochs) {
  const PipelineSetup setup{backend, std::move(source), plan, data, dataset, position, epochs};
  if (backend.device_kind() == DeviceKind::Cuda) return std::make_unique<OverlappedInput>(setup);
  return std::make_unique<SynchronousInput>(setup);
}

}  // namespace phalanx::train
