// One coordinator per sweep directory. After a SIGKILL of mpirun, its ranks may live on for a
// moment and commit more results; a --resume started meanwhile would then run a second
// coordinator on the same database. The coordinator's rank holds an exclusive flock on
// DIR/sweep.lock for its whole life; the kernel drops it when the process dies, however it dies.
#pragma once

#include <string>

namespace phalanx::sweep {

class SweepLock {
 public:
  // Waits up to `wait_seconds` for the lock (a killed job's ranks take a moment to go), then
  // throws an InvalidInput error naming the directory.
  SweepLock(const std::string& directory, double wait_seconds);
  ~SweepLock();
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;

 private:
  int descriptor_ = -1;
};

}  // namespace phalanx::sweep
