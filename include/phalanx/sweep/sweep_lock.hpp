// One coordinator per sweep directory. After a SIGKILL of mpirun, its ranks may live on for a
// moment and commit more results; a --resume started meanwhile would then run a second
// coordinator on the same database. The coordinator's rank holds an exclusive lock on
// DIR/sweep.lock for its whole life (a FileLock: the kernel drops it when the process dies).
#pragma once

#include <string>

#include "phalanx/core/file_lock.hpp"

namespace phalanx::sweep {

// Waits up to `wait_seconds` for the lock (a killed job's ranks take a moment to go), then
// throws an InvalidInput error naming the directory.
FileLock lock_sweep_directory(const std::string& directory, double wait_seconds);

}  // namespace phalanx::sweep
