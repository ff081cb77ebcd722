// Checkpoint seals: the user block's record, its check before HDF5 opens a checkpoint, and the
// re-seal of a checkpoint edited on purpose. The check is the only defence against damage that
// HDF5 1.10 decodes out of bounds (docs/HARDENING.md): it runs on bytes, never through HDF5.
#include "phalanx/train/checkpoint_seal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/train/checkpoint.hpp"

namespace phalanx::train {
namespace {

constexpr std::string_view seal_magic = "phalanx-checkpoint-seal 1\n";
constexpr std::string_view seal_magic_any_version = "phalanx-checkpoint-seal ";
constexpr std::string_view hdf5_signature = "\x89HDF\r\n\x1a\n";
// Large reads keep a 300 MB checkpoint's check at the disk's (or page cache's) speed.
constexpr std::size_t read_chunk_bytes = std::size_t{8} << 20;

std::string lowercase_first(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

std::string reseal_hint(const std::string& path) {
  return "after an edit on purpose (e.g. with h5py in r+ mode), accept it with `phalanx checkpoint seal " +
         path + "`";
}

// A file descriptor that closes itself.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path)
      : path_(path), descriptor_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    PHALANX_REQUIRE_INPUT(descriptor_ >= 0, path,
                          ": cannot open the checkpoint: ", lowercase_first(std::strerror(errno)));
  }
  ~ReadOnlyFile() { ::close(descriptor_); }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  struct stat status() const {
    struct stat result {};
    PHALANX_REQUIRE_INPUT(::fstat(descriptor_, &result) == 0, path_,
                          ": cannot read the checkpoint's size: ", lowercase_first(std::strerror(errno)));
    return result;
  }

  void seek(std::size_t offset) {
    PHALANX_REQUIRE_INPUT(::lseek(descriptor_, static_cast<off_t>(offset), SEEK_SET) >= 0, path_,
                          ": reading the checkpoint failed: ", lowercase_first(std::strerror(errno)));
  }

  // Reads up to `size` bytes (fewer only at the end of the file).
  std::size_t read(char* buffer, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t result = ::read(descriptor_, buffer + done, size - done);
      if (result < 0 && errno == EINTR) continue;
      PHALANX_REQUIRE_INPUT(result >= 0, path_,
                            ": reading the checkpoint failed: ", lowercase_first(std::strerror(errno)));
      if (result == 0) break;
      done += static_cast<std::size_t>(result);
    }
    return done;
  }

  // The XXH64 and count of the bytes from the current position to the end of the file, feeding
  // each piece also to `consume` (the re-seal copies while it hashes).
  template <typename Consumer>
  std::pair<std::uint64_t, std::uint64_t> hash_rest(Consumer&& consume) {
    ::posix_fadvise(descriptor_, 0, 0, POSIX_FADV_SEQUENTIAL);
    std::vector<char> buffer(read_chunk_bytes);
    data::Xxhash64Stream hash;
    std::uint64_t total = 0;
    for (;;) {
      const std::size_t got = read(buffer.data(), buffer.size());
      if (got == 0) break;
      hash.update(buffer.data(), got);
      consume(buffer.data(), got);
      total += got;
      if (got < buffer.size()) break;
    }
    return {hash.digest(), total};
  }

 private:
  std::string path_;
  int descriptor_;
};

// The seal a user block records; InvalidInput naming the file when it starts like a seal but is
// not exactly one phalanx writes (a damaged user block).
CheckpointSeal parse_seal(std::string_view block, const std::string& path) {
  PHALANX_REQUIRE_INPUT(block.starts_with(seal_magic), path,
                        ": the checkpoint's seal is of a version this build ",
                        "does not read, or damaged (its first line is not '",
                        seal_magic.substr(0, seal_magic.size() - 1), "')");
  CheckpointSeal seal;
  const std::string text(block.substr(seal_magic.size(), 128));
  PHALANX_REQUIRE_INPUT(std::sscanf(text.c_str(), "covered-bytes %" SCNu64 "\nxxh64 %16" SCNx64,
                                    &seal.covered_bytes, &seal.hash) == 2 &&
                            block == seal_block(seal),
                        path, ": the checkpoint's seal (its first ", checkpoint_seal_bytes,
                        " bytes) is damaged; ", reseal_hint(path));
  return seal;
}

}  // namespace

std::string seal_block(const CheckpointSeal& seal) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, seal.hash);
  std::string block = std::string(seal_magic) + "covered-bytes " + std::to_string(seal.covered_bytes) +
                      "\nxxh64 " + hash +
                      "\n# XXH64 of this file's bytes after these first 512 (the HDF5 file). "
                      "After an edit on purpose: phalanx checkpoint seal FILE\n";
  block.resize(checkpoint_seal_bytes, '\0');
  return block;
}

SealCheck check_checkpoint_seal(const std::string& path) {
  ReadOnlyFile file(path);
  const struct stat status = file.status();
  std::string block(checkpoint_seal_bytes, '\0');
  block.resize(file.read(block.data(), block.size()));
  if (block.starts_with(hdf5_signature)) return {SealState::Unsealed, {}};
  PHALANX_REQUIRE_INPUT(
      block.starts_with(seal_magic_any_version), path,
      ": not an HDF5 checkpoint (or truncated): neither a phalanx seal nor the HDF5 signature ",
      "at its start");
  PHALANX_REQUIRE_INPUT(block.size() == checkpoint_seal_bytes, path, ": the checkpoint's seal (its first ",
                        checkpoint_seal_bytes, " bytes) is truncated");
  const CheckpointSeal seal = parse_seal(block, path);
  const std::uint64_t size = static_cast<std::uint64_t>(status.st_size);
  PHALANX_REQUIRE_INPUT(size == checkpoint_seal_bytes + seal.covered_bytes, path, ": the checkpoint is ",
                        size, " bytes but the seal phalanx wrote says ",
                        checkpoint_seal_bytes + seal.covered_bytes,
                        ": the file is truncated, damaged or was changed after writing; ", reseal_hint(path));
  const auto [hash, covered] = file.hash_rest([](const char*, std::size_t) {});
  PHALANX_REQUIRE_INPUT(covered == seal.covered_bytes && hash == seal.hash, path,
                        ": the checkpoint's contents do not match the seal phalanx wrote (",
                        data::format_checksum(seal.hash), " of ", seal.covered_bytes, " bytes; the file has ",
                        data::format_checksum(hash), " of ", covered,
                        "): it is damaged or was changed after writing; ", reseal_hint(path));
  return {SealState::Sealed, seal};
}

CheckpointSeal reseal_checkpoint(const std::string& path) {
  ReadOnlyFile source(path);
  std::string start(checkpoint_seal_bytes + hdf5_signature.size(), '\0');
  start.resize(source.read(start.data(), start.size()));
  // A checkpoint from before seals is HDF5 from byte 0: it gets a user block in front, which HDF5
  // accepts (it finds the superblock at 512 and takes that as the base of the file's addresses).
  const bool unsealed = start.starts_with(hdf5_signature);
  PHALANX_REQUIRE_INPUT(
      unsealed ||
          std::string_view(start).substr(std::min(start.size(), checkpoint_seal_bytes)) == hdf5_signature,
      path, ": not a sealable checkpoint: HDF5 starts neither at its first byte nor after its first ",
      checkpoint_seal_bytes, " bytes");
  // Copy the HDF5 part to a temporary sibling while hashing it, then put the seal in front and
  // rename: the file under the real name is whole at every moment, and a failure leaves it as it was.
  // Through a link, the file it names is resealed and the link stays; the file keeps its mode (a
  // checkpoint made read-only, or private, stays so).
  std::error_code link_error;
  const std::string target = std::filesystem::canonical(path, link_error).string();
  PHALANX_REQUIRE_INPUT(!link_error, path, ": ", link_error.message());
  AtomicFile output(target);
  const int descriptor =
      ::open(output.temporary_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (descriptor < 0)
    throw_run_failure(path + ": cannot create " + output.temporary_path() + ": " + std::strerror(errno));
  // Root sealing a user's checkpoint leaves it the user's, not root's.
  if (::geteuid() == 0 && ::fchown(descriptor, source.status().st_uid, source.status().st_gid) != 0) {
    const int error = errno;
    ::close(descriptor);
    throw_run_failure(path + ": cannot set the owner of " + output.temporary_path() + ": " +
                      std::strerror(error));
  }
  if (::fchmod(descriptor, source.status().st_mode & 07777) != 0) {
    const int error = errno;
    ::close(descriptor);
    throw_run_failure(path + ": cannot set the mode of " + output.temporary_path() + ": " +
                      std::strerror(error));
  }
  const auto write_all = [&](const char* bytes, std::size_t size, off_t offset) {
    while (size > 0) {
      const ssize_t result = ::pwrite(descriptor, bytes, size, offset);
      if (result < 0 && errno == EINTR) continue;
      if (result <= 0) {
        const int error = result < 0 ? errno : ENOSPC;  // a write of nothing: the device took no more
        ::close(descriptor);
        throw_run_failure(path + ": writing " + output.temporary_path() + " failed: " + std::strerror(error) +
                          " (the checkpoint is unchanged)");
      }
      bytes += result;
      size -= static_cast<std::size_t>(result);
      offset += result;
    }
  };
  source.seek(unsealed ? 0 : checkpoint_seal_bytes);
  off_t offset = static_cast<off_t>(checkpoint_seal_bytes);
  CheckpointSeal seal;
  std::tie(seal.hash, seal.covered_bytes) = source.hash_rest([&](const char* bytes, std::size_t size) {
    write_all(bytes, size, offset);
    offset += static_cast<off_t>(size);
  });
  const std::string block = seal_block(seal);
  write_all(block.data(), block.size(), 0);
  // close() reports errors of delayed writes on some file systems (NFS): those count too.
  if (::close(descriptor) != 0)
    throw_run_failure(path + ": writing " + output.temporary_path() + " failed: " + std::strerror(errno) +
                      " (the checkpoint is unchanged)");
  // Sealing says the bytes are as meant (an edit on purpose, even a damaging one, which loading then
  // names). A file that says it is something else, a phalanx dataset or a predictions file, would
  // pass `verify` from now on: refused, the sealed copy goes and the file stays as it was.
  std::optional<std::string> format;
  bool readable = true;
  try {
    format = stored_file_format(output.temporary_path());
  } catch (const Error&) {
    readable = false;  // damaged or cut short: sealed as asked; a load names what is wrong with it
  }
  PHALANX_REQUIRE_INPUT(
      !readable || format == "phalanx-checkpoint", path, ": not sealed: ",
      format ? "its format is '" + *format + "'" : std::string("it has no format attribute"),
      ", not a phalanx checkpoint");
  output.commit();
  return seal;
}

}  // namespace phalanx::train
