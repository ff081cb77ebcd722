// Gradient accumulation: a rank trains its local batch as several micro-batches within one step
// (forward, loss and backward each), and the step still makes one all-reduce and one update; a
// step without accumulation is one micro-batch, trained in place. It
// keeps the memory of a step at a micro-batch's, which is what lets a resume on fewer ranks keep
// the global batch (docs/CHECKPOINTS.md, "Elastic resume") without each rank holding a larger one.
#pragma once

#include <cstdint>
#include <vector>

#include "loop/training_loss.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/tensor.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::train {

// How many micro-batches a rank's local batch takes: train.accumulation_steps when set (at most
// one per sample), else (auto) one, or as many as keep each within train.batch_size when the
// local batch is larger than that in an even split (`even_split`: no distributed.local_batches,
// no throughput split, whose larger local batches are meant): only a resume on fewer ranks than
// the checkpoint's gives that.
int micro_batch_count(int accumulation_steps, int local_batch, int batch_size, bool even_split);

// micro_batch_count for a rank training `local_batch` samples per step under `config`: the count
// the Trainer splits its step into, and the one the start-up probes (auto batch size, throughput
// split) resolve train.activation_dtype: auto for, so that they measure the activations the run
// will hold. Under train.batch_size: auto (a probe of the search) the probed batch is the batch
// size the run would take.
int micro_batches_per_step(const config::Config& config, int local_batch);

// The part of a step's batch that the step's own forward, loss and backward train: the last
// micro-batch, or the whole local batch when the step is one micro-batch.
struct MicroBatch {
  const Tensor& input;
  const std::int32_t* labels;  // device memory
  backend::LabelMix mix;       // the step's mixed targets, from this micro-batch's first sample
  int samples;
  Tensor& grad_logits;
  nn::ForwardContext context;
};

class MicroBatches {
 public:
  // `count` >= 1 micro-batches of `local_batch` samples, as even as they divide (the first ones
  // take one more); `world_size` spaces the micro-batches' dropout streams apart. With one, the
  // step trains its input in place: nothing is copied or summed aside.
  MicroBatches(backend::Backend& backend, int local_batch, int count, int classes,
               std::int64_t parameter_count, int world_size);

  int count() const { return static_cast<int>(sizes_.size()); }
  const std::vector<int>& sizes() const { return sizes_; }

  // Trains every micro-batch but the last of the step's `input` and `labels`: forward, loss (each
  // sample weighted `sample_weight`, 1/global batch x loss scale, as in a step without
  // accumulation) and backward; their gradients are summed aside. Nothing with one micro-batch.
  // `mix`: the step's mixed targets (mixed over the whole local batch), if any.
  void train_all_but_last(nn::Model& model, const Tensor& input, const std::int32_t* labels,
                          const backend::LabelMix& mix, const nn::ForwardContext& context,
                          const TrainingLoss& loss, float sample_weight);

  // The last micro-batch of the step's `input`, `labels` and `mix`.
  MicroBatch last(const Tensor& input, const std::int32_t* labels, const backend::LabelMix& mix,
                  const nn::ForwardContext& step_context);
  int last_size() const { return sizes_.back(); }
  // A micro-batch's dropout masks must differ from the others' of the same rank and step.
  nn::ForwardContext context_of(int micro_batch, const nn::ForwardContext& step_context) const;

  // Called during the last backward with the lowest offset whose gradients are final: adds the
  // gradients summed aside over [offset, the previous call's offset) to `gradients`, so the
  // bucket the exchange then sends holds the whole local batch's sum.
  void add_summed(std::int64_t first_final_offset, float* gradients);

 private:
  void slice(const Tensor& input, int micro_batch);  // copies its samples into input_

  backend::Backend& backend_;
  std::vector<int> sizes_;
  std::vector<int> offsets_;
  int world_size_;
  std::int64_t parameter_count_;
  std::int64_t added_from_ = 0;  // gradients at and above this offset hold the whole sum
  Tensor input_;
  Tensor grad_logits_;
  Tensor summed_;  // the gradients of the micro-batches before the last (none with one)
};

}  // namespace phalanx::train
