// What this process's control group allows it: a CPU quota (a container's --cpus, a Kubernetes CPU
// limit) and a memory limit (Slurm's --mem under ConstrainRAMSpace, a container's --memory).
// Neither shows in the affinity mask or in sysconf: a job that sizes its threads or its data cache
// by the machine's figures is throttled, or killed by the kernel, when a group holds it to less.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace phalanx {

// The tightest CPU quota on this process's group and its ancestors, in cores, rounded up (1.5
// cores gives 2); nullopt where no group sets one. cgroup v1 (cpu.cfs_quota_us over
// cpu.cfs_period_us) and v2 (cpu.max), each hierarchy found through /proc/self/mountinfo.
// `root` is put before every path read (/proc and the mounts), so a test can give a tree of its own.
std::optional<int> cgroup_cpu_limit(const std::filesystem::path& root = "/");

// The tightest memory limit on this process's group and its ancestors, in bytes; nullopt where
// none is set (v1's memory.limit_in_bytes of "no limit" is a number near 2^63, and read as none).
// v1 memory.limit_in_bytes and v2 memory.max.
std::optional<std::uint64_t> cgroup_memory_limit(const std::filesystem::path& root = "/");

}  // namespace phalanx
