// Fuzz target: the checkpoint loader. Input: the bytes of a checkpoint file. The header is read
// and validated, then weights and AdamW state are loaded into a fixed small model (conv, batch
// norm, linear on 4x4x1 images, 3 classes: the model of the seed corpus), as --resume does.
// The seed is a checkpoint from before seals (HDF5 from its first byte), which loads unchecked:
// its mutations reach HDF5's parser and phalanx's validation. A sealed seed's mutations would
// nearly all stop at the seal's hash (the regressions named sealed_* check that they do).
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_support.hpp"
#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/optimizer.hpp"
#include "phalanx/train/checkpoint.hpp"

namespace {

const char* const model_config = R"(name: tiny
seed: 1
model:
  layers:
    - {type: conv, name: conv, out_channels: 2, kernel: 3, padding: 1}
    - {type: batch_norm, name: bn}
    - {type: relu}
    - {type: flatten}
    - {type: linear, name: fc, out_features: 3}
data:
  path: data.h5
optimizer:
  type: adamw
  learning_rate: 0.01
train:
  epochs: 1
  batch_size: 4
)";

struct SmallModel {
  phalanx::config::Config config = phalanx::config::parse(model_config, "fuzz_checkpoint model");
  std::unique_ptr<phalanx::backend::Backend> backend = phalanx::backend::make_cpu_backend(1);
  phalanx::nn::Model model{config.model, phalanx::Shape{4, 4, 1}, 3, *backend, 1};
  std::unique_ptr<phalanx::optim::Optimizer> optimizer =
      phalanx::optim::make_optimizer(config.optimizer, *backend, model.registry().parameter_count());
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static SmallModel small;
  const std::string path = phalanx::fuzz::write_scratch_file(
      "checkpoint.h5", std::string_view(reinterpret_cast<const char*>(data), size));
  phalanx::fuzz::accept_input_errors([&] {
    const phalanx::train::CheckpointHeader header = phalanx::train::read_checkpoint_header(path);
    (void)header;
    phalanx::train::load_checkpoint(path, *small.backend, small.model.registry(), small.optimizer.get());
  });
  return 0;
}
