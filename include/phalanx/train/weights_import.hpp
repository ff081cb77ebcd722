// `phalanx checkpoint import` and `export`: PyTorch weights (safetensors) into a sealed phalanx
// checkpoint of a preset, and a checkpoint's weights back out as safetensors with torch's names.
#pragma once

#include <string>

#include "phalanx/core/shape.hpp"

namespace phalanx::train {

// The most classes an imported model may have (ImageNet-21k has 21,841): a larger count read from a
// file or given is a slip, and would build a classifier head of gigabytes.
inline constexpr int most_imported_classes = 1'000'000;

struct ImportRequest {
  std::string weights;       // the safetensors file
  std::string preset;        // model.preset of the model the weights are for
  std::string output;        // the checkpoint to write
  int classes = 0;           // 0: the first dimension of the file's classifier weight
  Shape input{224, 224, 3};  // one image [H, W, C]
  std::string data;          // data.path written into the checkpoint's config (may be empty)
};

struct ImportResult {
  int classes = 0;
  std::size_t tensors = 0;      // parameters and buffers set
  std::int64_t parameters = 0;  // learnable values
};

// Builds the preset, sets every parameter and buffer from the file (names and shapes must match
// exactly: InvalidInput naming the file, the tensor and both shapes), and writes a checkpoint at
// step 0 whose config names the preset; nothing is written unless every tensor matched.
ImportResult import_weights(const ImportRequest& request);

// Which weights an export takes: the trained ones (/model) or their average (/ema, train.ema).
enum class ExportedWeights { Trained, Average };

// Writes the /model (or /ema) tensors of a checkpoint as F32 safetensors with torch's names
// ("a.b.c"), loadable with safetensors.torch.load_file + load_state_dict(strict=False: no
// num_batches_tracked). Both have the same names and shapes, so either loads into the same module.
std::size_t export_weights(const std::string& checkpoint, const std::string& output,
                           ExportedWeights weights = ExportedWeights::Trained);

}  // namespace phalanx::train
