// A probe step's model is initialised from the run's seed like the real one but is a separate
// object: everything it allocated is freed with it (RAII), so probes neither add up in device
// memory nor change the run.
#include "setup/probe_step.hpp"

#include <cstdint>
#include <vector>

#include "loop/micro_batches.hpp"

namespace phalanx::train {

ProbeStep::ProbeStep(const config::Config& config, backend::Backend& backend, const Shape& sample,
                     int classes, int batch)
    : config_(config),
      backend_(backend),
      classes_(classes),
      batch_(batch),
      model_(config.model, sample, classes, backend, config.seed),
      optimizer_(optim::make_optimizer(config.optimizer, backend, model_.registry().parameter_count())),
      input_(backend, sample.batched(batch)),
      labels_(backend, Shape{batch}, DType::Int32),
      grad_logits_(backend, Shape{batch, classes}),
      // The arithmetic and activation storage of the run: its memory and speed are what is
      // measured. A run that splits this batch into micro-batches holds auto activations in fp32.
      arithmetic_(apply_arithmetic(config, backend, micro_batches_per_step(config, batch))) {
  backend_.fill(input_.data(), input_.elements(), 0.0f);
  const std::vector<std::int32_t> zero_labels(static_cast<std::size_t>(batch), 0);
  backend_.copy_from_host(labels_.data_as<void>(), zero_labels.data(), labels_.bytes());
}

void ProbeStep::run() {
  const Tensor& logits = model_.forward(input_, nn::ForwardContext{nn::Mode::Training, config_.seed, 0, 0});
  backend_.softmax_cross_entropy(batch_, classes_, logits.data(), labels_.data_as<std::int32_t>(), 0.0f,
                                 1.0f / static_cast<float>(batch_), grad_logits_.data());
  model_.backward(input_, grad_logits_, {});
  optimizer_->step(model_.registry(), 1e-3, 1);
  backend_.synchronize();
}

}  // namespace phalanx::train
