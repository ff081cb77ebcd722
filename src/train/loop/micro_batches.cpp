// Gradient accumulation (train.accumulation_steps): the micro-batches before the last are trained
// and their gradients summed aside; the last one's backward adds that sum bucket by bucket as the
// buckets become final, so the all-reduce still overlaps backward and the update is one step at
// the global batch. Each sample's loss is weighted 1/global batch in every micro-batch, so the sum
// over micro-batches is the local batch's gradient (float summation order aside).
#include "loop/micro_batches.hpp"

#include <algorithm>

#include "phalanx/core/error.hpp"

namespace phalanx::train {

int micro_batch_count(int accumulation_steps, int local_batch, int batch_size, bool even_split) {
  if (accumulation_steps > 0) return std::min(accumulation_steps, local_batch);
  if (!even_split || local_batch <= batch_size) return 1;
  return (local_batch + batch_size - 1) / batch_size;
}

int micro_batches_per_step(const config::Config& config, int local_batch) {
  // A throughput split's or distributed.local_batches' larger local batches are meant as they are.
  const bool even_split =
      config.distributed.batch_split == config::BatchSplitRule::Equal && config.distributed.local_batches.empty();
  const int batch_size = config.train.batch_size_auto ? local_batch : config.train.batch_size;
  return micro_batch_count(config.train.accumulation_steps, local_batch, batch_size, even_split);
}

MicroBatches::MicroBatches(backend::Backend& backend, int local_batch, int count, int classes,
                           std::int64_t parameter_count, int world_size)
    : backend_(backend),
      world_size_(world_size),
      parameter_count_(parameter_count),
      added_from_(parameter_count) {
  PHALANX_CHECK(count >= 1 && count <= local_batch, count, " micro-batches of a local batch of ",
                local_batch);
  if (count > 1) summed_.ensure(backend_, Shape{parameter_count});
  int offset = 0;
  for (int index = 0; index < count; ++index) {
    sizes_.push_back(local_batch / count + (index < local_batch % count ? 1 : 0));
    offsets_.push_back(offset);
    offset += sizes_.back();
  }
  grad_logits_.ensure(backend_, Shape{sizes_.front(), classes});
}

void MicroBatches::slice(const Tensor& input, int micro_batch) {
  Shape shape = input.shape();
  const std::size_t sample_bytes = input.bytes() / static_cast<std::size_t>(shape[0]);
  shape[0] = sizes_[static_cast<std::size_t>(micro_batch)];
  input_.ensure(backend_, shape, input.dtype());
  backend_.copy(input_.data(),
                static_cast<const char*>(static_cast<const void*>(input.data())) +
                    sample_bytes * static_cast<std::size_t>(offsets_[static_cast<std::size_t>(micro_batch)]),
                input_.bytes());
}

nn::ForwardContext MicroBatches::context_of(int micro_batch, const nn::ForwardContext& step_context) const {
  nn::ForwardContext context = step_context;
  context.rank = step_context.rank + world_size_ * micro_batch;  // a dropout stream of its own
  return context;
}

namespace {

// The mixed targets of the micro-batch that starts at sample `offset` of the step's batch.
backend::LabelMix mix_from(const backend::LabelMix& mix, int offset) {
  return {mix.partner_labels ? mix.partner_labels + offset : nullptr, mix.own_weight};
}

}  // namespace

void MicroBatches::train_all_but_last(nn::Model& model, const Tensor& input, const std::int32_t* labels,
                                      const backend::LabelMix& mix, const nn::ForwardContext& context,
                                      const TrainingLoss& loss, float sample_weight) {
  if (count() == 1) return;
  for (int index = 0; index + 1 < count(); ++index) {
    slice(input, index);
    const int size = sizes_[static_cast<std::size_t>(index)];
    const Tensor& logits = model.forward(input_, context_of(index, context));
    grad_logits_.ensure(backend_, Shape{size, model.classes()});
    const int offset = offsets_[static_cast<std::size_t>(index)];
    loss.forward_backward(logits, labels + offset, size, sample_weight, grad_logits_, mix_from(mix, offset));
    model.backward(input_, grad_logits_, [](std::int64_t) {});
    float* gradients = model.registry().gradients().data();
    if (index == 0)
      backend_.copy(summed_.data(), gradients, static_cast<std::size_t>(parameter_count_) * sizeof(float));
    else
      backend_.add(parameter_count_, summed_.data(), gradients, summed_.data());
  }
  added_from_ = parameter_count_;
  grad_logits_.ensure(backend_, Shape{sizes_.back(), model.classes()});
}

MicroBatch MicroBatches::last(const Tensor& input, const std::int32_t* labels, const backend::LabelMix& mix,
                              const nn::ForwardContext& step_context) {
  const int last = count() - 1;
  if (last > 0) slice(input, last);
  return MicroBatch{last > 0 ? input_ : input, labels + offsets_.back(), mix_from(mix, offsets_.back()),
                    sizes_.back(), grad_logits_, context_of(last, step_context)};
}

void MicroBatches::add_summed(std::int64_t first_final_offset, float* gradients) {
  if (count() == 1 || first_final_offset >= added_from_) return;
  const std::int64_t length = added_from_ - first_final_offset;
  backend_.add(length, summed_.data() + first_final_offset, gradients + first_final_offset,
               gradients + first_final_offset);
  added_from_ = first_final_offset;
}

}  // namespace phalanx::train
