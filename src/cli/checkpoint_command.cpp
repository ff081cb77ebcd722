// `phalanx checkpoint verify | seal`: checks checkpoints against the seals phalanx wrote into them,
// and re-seals one edited on purpose. No MPI: it reads files only.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/train/checkpoint_seal.hpp"

namespace phalanx::cli {

std::function<int()> add_checkpoint_command(CLI::App& app) {
  auto* checkpoint_command = app.add_subcommand("checkpoint", "Verify or re-seal checkpoint files");
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

  return [=]() -> int {
    if (!*checkpoint_command) return -1;
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
