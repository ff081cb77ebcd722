// How many cores this process may run on: what its CPU affinity allows (Slurm's and Open MPI's
// bindings, a container's cpuset) and its control group's CPU quota (a container's --cpus), not
// how many the machine has. Thread pools sized by the machine's count oversubscribe a job given 4
// of a node's 128 cores, and a quota throttles every thread past it.
#pragma once

namespace phalanx {

// The cores in this process's affinity mask (the machine's count where the system does not say),
// capped by its cgroup's CPU quota rounded up; at least 1.
int usable_cores();

// The machine's cores capped by this process's cgroup CPU quota: what the ranks of a node that
// share the group (a container's, a Slurm job's) may use together. At least 1.
int node_cores();

}  // namespace phalanx
