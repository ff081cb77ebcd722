// How many cores this process may run on: what its CPU affinity allows (Slurm's and Open MPI's
// bindings, a container's cpuset), not how many the machine has. Thread pools sized by the
// machine's count oversubscribe a job given 4 of a node's 128 cores.
#pragma once

namespace phalanx {

// The cores in this process's affinity mask; the machine's count where the system does not say;
// at least 1. A CPU quota (a container's --cpus, cgroup cpu.max) is not an affinity and is not
// counted.
int usable_cores();

}  // namespace phalanx
