// InputPipeline: the training batches from the loader to the device, one step at a time. CPU
// ranks (whose device memory is host memory) fetch and copy each batch at the top of its step;
// GPU ranks fetch the next batch and start its upload on the copy stream while backward runs,
// so the copy hides behind compute. Either way the step sees input() and labels() on the device.
#pragma once

#include <memory>
#include <optional>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/sample_source.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "loop/step_clock.hpp"

namespace phalanx::train {

class InputPipeline {
 public:
  virtual ~InputPipeline() = default;

  // This step's batch (GPU ranks: its upload started during the last step's backward); none when
  // the data has run out.
  virtual std::optional<BatchFacts> next() = 0;
  // Makes input() this batch on the device: copies it unless its upload is under way, then the
  // compute work waits for the copy, normalises and augments it.
  virtual void prepare() = 0;
  // While backward runs on the device, with `another_step` to come: GPU ranks fetch the next
  // batch and start its upload. Returns the host seconds it took (data wait).
  virtual double fetch_ahead(bool another_step) = 0;
  // Of the batch prepare() last made input().
  virtual UploadCost last_upload() = 0;

  virtual const Tensor& input() const = 0;         // [local batch, H, W, C] float, normalised
  virtual Tensor& input() = 0;                     // the same, for mixing it in place
  virtual const std::int32_t* labels() const = 0;  // device memory
};

// The rank's share of each global batch (`plan`), from `position` on, for `epochs` epochs; GPU
// backends get the overlapped pipeline and augment on the device.
std::unique_ptr<InputPipeline> make_input_pipeline(backend::Backend& backend,
                                                   std::shared_ptr<data::SampleSource> source,
                                                   const data::ShardPlan& plan,
                                                   const config::DataConfig& data,
                                                   const data::DatasetInfo& dataset,
                                                   const TrainingPosition& position, std::int64_t epochs);

}  // namespace phalanx::train
