// Checkpoint seals (docs/CHECKPOINTS.md): every checkpoint starts with a 512-byte HDF5 user block
// holding the size and XXH64 of the rest of the file. A reader checks it before HDF5 parses a
// byte, so a damaged checkpoint is refused by phalanx's own code instead of reaching HDF5's
// decoders, which read past their buffers on some damaged files (docs/HARDENING.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace phalanx::train {

// The user block's size: HDF5's smallest, and the file's HDF5 part starts there.
inline constexpr std::size_t checkpoint_seal_bytes = 512;

struct CheckpointSeal {
  std::uint64_t covered_bytes = 0;  // the file's bytes after the user block
  std::uint64_t hash = 0;           // XXH64 (seed 0) of those bytes
};

// The user block that seals `covered_bytes` bytes hashing to `hash`: a few text lines, then zeros.
std::string seal_block(const CheckpointSeal& seal);

enum class SealState {
  Sealed,    // the seal matches the file
  Unsealed,  // an HDF5 file from its first byte: a checkpoint written before seals
};

struct SealCheck {
  SealState state = SealState::Unsealed;
  CheckpointSeal seal;  // what the seal records (when sealed)
};

// Checks the seal of the checkpoint at `path`, reading the whole file for a sealed one. Throws
// InvalidInput naming the file when its contents do not match its seal, when the seal itself is
// damaged, or when the file is neither sealed nor HDF5 from its first byte.
SealCheck check_checkpoint_seal(const std::string& path);

// Writes a new seal over a sealed checkpoint that was changed on purpose (e.g. with h5py in r+
// mode), or a first one in front of a checkpoint from before seals, through a temporary file
// renamed over it: a crash leaves the old file or the new one. InvalidInput when the file is HDF5
// neither from its first byte nor after a user block. Returns the new seal.
CheckpointSeal reseal_checkpoint(const std::string& path);

}  // namespace phalanx::train
