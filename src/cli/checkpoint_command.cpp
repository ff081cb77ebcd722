// `phalanx checkpoint verify | seal | import | export`: checks checkpoints against the seals phalanx
// wrote into them, re-seals one edited on purpose, and takes PyTorch weights (safetensors) in and
// out. No MPI: it reads and writes files only.
#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "commands.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/train/checkpoint_seal.hpp"
#include "phalanx/train/weights_import.hpp"

namespace phalanx::cli {
namespace {

// --input HxWxC, e.g. 224x224x3.
Shape parse_image_shape(const std::string& text) {
  static const std::regex pattern("([0-9]{1,6})x([0-9]{1,6})x([0-9]{1,4})");
  std::smatch match;
  PHALANX_REQUIRE_INPUT(std::regex_match(text, match, pattern), "--input '", text,
                        "' is not HxWxC (e.g. 224x224x3)");
  const Shape shape{std::stoll(match[1]), std::stoll(match[2]), std::stoll(match[3])};
  PHALANX_REQUIRE_INPUT(shape.elements() > 0, "--input '", text, "' has a zero dimension");
  return shape;
}

}  // namespace

std::function<int()> add_checkpoint_command(CLI::App& app) {
  auto* checkpoint_command = app.add_subcommand(
      "checkpoint", "Verify or re-seal checkpoint files; import or export PyTorch weights (safetensors)");
  checkpoint_command->require_subcommand(1);
  auto files = std::make_shared<std::vector<std::string>>();

  auto* verify = checkpoint_command->add_subcommand(
      "verify",
      "Check that each checkpoint matches the seal phalanx wrote into it (reads every byte); exit 2 "
      "naming the first that does not, or that has no seal (written before seals)");
  verify->add_option("files", *files, "Checkpoint files (.h5)")->required();

  auto* seal = checkpoint_command->add_subcommand(
      "seal",
      "Write a new seal into checkpoints changed on purpose (e.g. with h5py in r+ mode), so that "
      "phalanx loads them again, or a first seal into checkpoints from before seals; each file is "
      "replaced whole (a temporary file renamed over it)");
  seal->add_option("files", *files, "Checkpoint files (.h5)")->required();

  auto import_request = std::make_shared<train::ImportRequest>();
  auto input_shape = std::make_shared<std::string>("224x224x3");
  auto* import = checkpoint_command->add_subcommand(
      "import",
      "Build a preset and take every parameter and batch-norm buffer from a safetensors file of "
      "torch's state_dict (names a.b.c = phalanx a/b/c, shapes checked; num_batches_tracked is "
      "ignored); write a sealed checkpoint at step 0 (for model.init_from, eval, export)");
  import->add_option("weights", import_request->weights, "The safetensors file")->required();
  import->add_option("--preset", import_request->preset, "model.preset the weights are for")->required();
  import
      ->add_option("--classes", import_request->classes,
                   "Class count of the model (default: the first dimension of the file's classifier weight)")
      ->check(CLI::Range(1, train::most_imported_classes));
  import->add_option("--input", *input_shape, "One image HxWxC (default 224x224x3)");
  import->add_option(
      "--data", import_request->data,
      "Dataset written as data.path in the checkpoint's config (phalanx eval then needs no --data)");
  import->add_option("-o,--output", import_request->output, "The checkpoint to write (.h5)")->required();

  auto export_files = std::make_shared<std::vector<std::string>>();
  auto* export_command = checkpoint_command->add_subcommand(
      "export",
      "Write a checkpoint's weights and batch-norm buffers as F32 safetensors with torch's names "
      "(load_state_dict(..., strict=False): num_batches_tracked is not written)");
  export_command->add_option("files", *export_files, "CHECKPOINT.h5 OUTPUT.safetensors")
      ->required()
      ->expected(2);
  auto export_average = std::make_shared<bool>(false);
  export_command->add_flag("--ema", *export_average,
                           "Export the weight average (train.ema) instead of the trained weights");

  return [=]() -> int {
    if (!*checkpoint_command) return -1;
    if (*import) {
      import_request->input = parse_image_shape(*input_shape);
      const train::ImportResult result = train::import_weights(*import_request);
      std::printf("%s: %zu tensors of %s (%d classes, %lld parameters) from %s\n",
                  import_request->output.c_str(), result.tensors, import_request->preset.c_str(),
                  result.classes, static_cast<long long>(result.parameters), import_request->weights.c_str());
      return 0;
    }
    if (*export_command) {
      const std::size_t tensors = train::export_weights(
          (*export_files)[0], (*export_files)[1],
          *export_average ? train::ExportedWeights::Average : train::ExportedWeights::Trained);
      std::printf("%s: %zu tensors%s from %s\n", (*export_files)[1].c_str(), tensors,
                  *export_average ? " of the weight average" : "", (*export_files)[0].c_str());
      return 0;
    }
    for (const std::string& file : *files) {
      if (*verify) {
        const train::SealCheck check = train::check_checkpoint_seal(file);
        PHALANX_REQUIRE_INPUT(check.state == train::SealState::Sealed, file,
                              ": unsealed: written before checkpoints were sealed (it loads unchecked; "
                              "`phalanx checkpoint seal ",
                              file, "` seals it as it is now)");
        std::printf("%s: sealed, matches (%s of %llu bytes)\n", file.c_str(),
                    data::format_checksum(check.seal.hash).c_str(),
                    static_cast<unsigned long long>(check.seal.covered_bytes));
      } else {
        const train::CheckpointSeal written = train::reseal_checkpoint(file);
        std::printf("%s: sealed (%s of %llu bytes)\n", file.c_str(),
                    data::format_checksum(written.hash).c_str(),
                    static_cast<unsigned long long>(written.covered_bytes));
      }
    }
    return 0;
  };
}

}  // namespace phalanx::cli
