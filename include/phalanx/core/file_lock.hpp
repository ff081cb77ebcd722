// FileLock: an exclusive flock on a file, held for the object's life. The kernel drops it when the
// process dies, however it dies, so a lock left by a killed job never needs clearing by hand; a
// caller that finds it held waits a while, since a killed job's ranks take a moment to go.
#pragma once

#include <optional>
#include <string>

namespace phalanx {

class FileLock {
 public:
  // Waits up to `wait_seconds` for the lock on `path` (the file is created if missing); nullopt
  // when another process held it all that time. A file that cannot be opened is an InvalidInput
  // error naming it (a folder without write permission, say).
  static std::optional<FileLock> acquire(const std::string& path, double wait_seconds);

  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  FileLock& operator=(FileLock&&) = delete;

 private:
  explicit FileLock(int descriptor) : descriptor_(descriptor) {}
  int descriptor_ = -1;
};

}  // namespace phalanx
