// The sweep directory lock (see sweep_lock.hpp).
#include "phalanx/sweep/sweep_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::sweep {

SweepLock::SweepLock(const std::string& directory, double wait_seconds) {
  const std::string path = directory + "/sweep.lock";
  descriptor_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (descriptor_ < 0) throw_input_error(path + ": cannot open the sweep lock: " + std::strerror(errno));
  const Stopwatch clock;
  while (::flock(descriptor_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || clock.seconds() > wait_seconds) {
      ::close(descriptor_);
      descriptor_ = -1;
      throw_input_error(directory + ": another sweep is running in this directory (" + path +
                        " is locked); wait for it to end or stop it first");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

SweepLock::~SweepLock() {
  if (descriptor_ >= 0) ::close(descriptor_);  // closing drops the flock
}

}  // namespace phalanx::sweep
