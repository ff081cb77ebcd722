// An exclusive flock held for an object's life (see file_lock.hpp).
#include "phalanx/core/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx {

std::optional<FileLock> FileLock::acquire(const std::string& path, double wait_seconds) {
  FileLock lock(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.descriptor_ < 0) throw_input_error(path + ": cannot open it to lock it: " + std::strerror(errno));
  const Stopwatch clock;
  while (::flock(lock.descriptor_, LOCK_EX | LOCK_NB) != 0) {
    // EWOULDBLOCK is another holder; EINTR a signal (a stop request), after which we ask again.
    if (errno != EWOULDBLOCK && errno != EINTR)
      throw_input_error(path + ": cannot lock it: " + std::strerror(errno));
    if (clock.seconds() > wait_seconds) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return lock;
}

FileLock::FileLock(FileLock&& other) noexcept : descriptor_(other.descriptor_) { other.descriptor_ = -1; }

FileLock::~FileLock() {
  if (descriptor_ >= 0) ::close(descriptor_);  // closing drops the flock
}

}  // namespace phalanx
