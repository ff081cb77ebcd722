// The sweep directory lock (see sweep_lock.hpp).
#include "phalanx/sweep/sweep_lock.hpp"

#include "phalanx/core/error.hpp"

namespace phalanx::sweep {

FileLock lock_sweep_directory(const std::string& directory, double wait_seconds) {
  const std::string path = directory + "/sweep.lock";
  auto lock = FileLock::acquire(path, wait_seconds);
  if (!lock)
    throw_input_error(directory + ": another sweep is running in this directory (" + path +
                      " is locked); wait for it to end or stop it first");
  return std::move(*lock);
}

}  // namespace phalanx::sweep
