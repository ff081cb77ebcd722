// Temporary-file-then-rename with fsync of the file and of its folder (rename alone is atomic
// but not durable: after a power loss the new name may point at unwritten blocks).
#include "phalanx/core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "phalanx/core/error.hpp"

namespace phalanx {
namespace {

void sync_path(const std::string& path, int flags, const std::string& what) {
  const int descriptor = ::open(path.c_str(), flags);
  if (descriptor < 0)
    throw_internal_error("cannot open " + path + " to sync " + what + ": " + std::strerror(errno), __FILE__,
                         __LINE__);
  const int status = ::fsync(descriptor);
  const int saved_errno = errno;
  ::close(descriptor);
  // A full disk can surface only here (delayed allocation): the machine's failure, said plainly.
  if (status != 0) throw_run_failure("fsync of " + path + " failed: " + std::strerror(saved_errno));
}

}  // namespace

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), temporary_path_(path_ + ".tmp-" + std::to_string(::getpid())) {
  // Before any folder is made: a refused output leaves nothing behind, an empty folder included.
  PHALANX_REQUIRE_INPUT(!path_.empty(), "the output file's path is empty");
  PHALANX_REQUIRE_INPUT(std::filesystem::path(path_).has_filename(), path_,
                        ": names a folder (a trailing /); give the output file's name");
  // The rename would replace whatever is there: as root, /dev/null became a regular file.
  std::error_code status_error;
  const auto status = std::filesystem::symlink_status(path_, status_error);
  PHALANX_REQUIRE_INPUT(
      !std::filesystem::exists(status) || std::filesystem::is_regular_file(status), path_,
      ": exists and is not a regular file (",
      std::filesystem::is_symlink(status)     ? "a symbolic link"
      : std::filesystem::is_directory(status) ? "a folder"
                                              : "a device, FIFO or socket",
      "), which writing the output would replace; give the path of a regular file, or of none yet");
  const auto parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) {
    // The outermost folder that is missing, to remove again if the output is never committed.
    std::filesystem::path missing;
    for (auto folder = parent; !folder.empty() && !std::filesystem::exists(folder, status_error);
         folder = folder.parent_path()) {
      missing = folder;
      if (folder == folder.parent_path()) break;
    }
    std::error_code error;
    std::filesystem::create_directories(parent, error);
    if (error)
      throw_input_error(path_ + ": cannot create the folder " + parent.string() + ": " + error.message());
    first_created_folder_ = missing.string();
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  std::error_code ignored;
  std::filesystem::remove(temporary_path_, ignored);
  if (first_created_folder_.empty()) return;
  // From the file's folder out to the first one made here, each while it is empty (remove takes
  // only an empty folder: one another writer used meanwhile stays).
  for (auto folder = std::filesystem::path(path_).parent_path(); !folder.empty();
       folder = folder.parent_path()) {
    if (!std::filesystem::remove(folder, ignored)) return;
    if (folder == std::filesystem::path(first_created_folder_)) return;
  }
}

void AtomicFile::commit() {
  sync_path(temporary_path_, O_RDONLY, "the file");
  std::error_code error;
  std::filesystem::rename(temporary_path_, path_, error);
  // A folder or a read-only file in the way is the user's to fix: a usage error naming it.
  if (error)
    throw_input_error(path_ + ": cannot rename " + temporary_path_ + " into place: " + error.message());
  committed_ = true;
  const auto parent = std::filesystem::path(path_).parent_path();
  sync_path(parent.empty() ? std::string(".") : parent.string(), O_RDONLY | O_DIRECTORY, "the folder");
}

void write_file_atomically(const std::string& path, const std::string& content) {
  AtomicFile file(path);
  {
    std::ofstream stream(file.temporary_path(), std::ios::trunc | std::ios::binary);
    // A folder that takes no new files is the user's to fix (as a folder in the way, below): usage.
    if (!stream)
      throw_input_error(path + ": cannot create " + file.temporary_path() + " (is the folder writable?)");
    stream << content;
    stream.flush();
    if (!stream) throw_internal_error("writing " + file.temporary_path() + " failed", __FILE__, __LINE__);
  }
  file.commit();
}

}  // namespace phalanx
