// cgroup_cpu_limit and cgroup_memory_limit: first on trees laid out as the kernel lays out /proc and
// the cgroup mounts (v2, v1 inside a container, a hybrid system, no limits), then in a real child
// group with a quota, where the machine lets the test make one.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "phalanx/core/cgroup_limits.hpp"
#include "phalanx/core/usable_cores.hpp"
#include "phalanx/core/usable_memory.hpp"

namespace phalanx {
namespace {

namespace fs = std::filesystem;

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("phalanx-cgroup-tree-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc/self");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& path, const std::string& text) {
    const fs::path file = root_ / path;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }

  fs::path root_;
};

// A v2 system: the limits of the group and of its ancestors, the tightest wins.
TEST_F(CgroupTree, UnifiedHierarchyTakesTheTightestLimitOnTheWayUp) {
  write("proc/self/cgroup", "0::/job/step\n");
  write("proc/self/mountinfo",
        "22 1 0:20 / / rw - ext4 /dev/sda1 rw\n"
        "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate\n");
  write("sys/fs/cgroup/job/step/cpu.max", "max 100000\n");
  write("sys/fs/cgroup/job/cpu.max", "250000 100000\n");
  write("sys/fs/cgroup/job/step/memory.max", "8589934592\n");
  write("sys/fs/cgroup/job/memory.max", "max\n");
  EXPECT_EQ(cgroup_cpu_limit(root_), 3) << "2.5 cores round up to 3";
  EXPECT_EQ(cgroup_memory_limit(root_), std::uint64_t{8589934592});

  write("sys/fs/cgroup/cpu.max", "100000 100000\n");  // the mount's own group binds too
  EXPECT_EQ(cgroup_cpu_limit(root_), 1);
}

// A v1 container without a cgroup namespace: /proc/self/cgroup names the host's path, and the mounts
// show the container's group at their top (their root field).
TEST_F(CgroupTree, ContainerMountRootIsTakenOffTheGroupPath) {
  write("proc/self/cgroup",
        "5:memory:/docker/abc\n"
        "4:cpuset:/docker/abc\n"
        "3:cpu,cpuacct:/docker/abc\n");
  write("proc/self/mountinfo",
        "40 30 0:35 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
        "41 30 0:36 /docker/abc /sys/fs/cgroup/cpuset ro,nosuid - cgroup cgroup rw,cpuset\n"
        "42 30 0:37 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n");
  write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "150000\n");
  write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  write("sys/fs/cgroup/memory/memory.limit_in_bytes", "4294967296\n");
  EXPECT_EQ(cgroup_cpu_limit(root_), 2);
  EXPECT_EQ(cgroup_memory_limit(root_), std::uint64_t{4294967296});
}

// v1 writes "no limit" as -1 (CPU) and as a number near 2^63 (memory); cpuacct and cpuset are not
// the cpu controller.
TEST_F(CgroupTree, UnlimitedGroupsSetNoLimit) {
  write("proc/self/cgroup", "4:memory:/slurm/job_7\n3:cpuacct:/\n2:cpu:/slurm/job_7\n1:cpuset:/\n0::/\n");
  write("proc/self/mountinfo",
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "40 31 0:40 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
  write("sys/fs/cgroup/cpu/slurm/job_7/cpu.cfs_quota_us", "-1\n");
  write("sys/fs/cgroup/cpu/slurm/job_7/cpu.cfs_period_us", "100000\n");
  write("sys/fs/cgroup/cpuacct/cpu.cfs_quota_us", "100000\n");  // not the cpu controller's
  write("sys/fs/cgroup/cpuacct/cpu.cfs_period_us", "100000\n");
  write("sys/fs/cgroup/memory/slurm/job_7/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(cgroup_cpu_limit(root_), std::nullopt);
  EXPECT_EQ(cgroup_memory_limit(root_), std::nullopt);

  // Slurm's job group with --mem=2G, the step below it unlimited.
  write("sys/fs/cgroup/memory/slurm/memory.limit_in_bytes", "2147483648\n");
  EXPECT_EQ(cgroup_memory_limit(root_), std::uint64_t{2147483648});
}

// A hybrid system: v1's cpu controller and v2's unified mount both hold limits; the tighter binds.
TEST_F(CgroupTree, HybridSystemTakesTheTighterOfBothHierarchies) {
  write("proc/self/cgroup", "2:cpu:/a\n0::/b\n");
  write("proc/self/mountinfo",
        "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
        "40 31 0:40 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  write("sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "400000\n");
  write("sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000\n");
  write("sys/fs/cgroup/unified/b/cpu.max", "50000 100000\n");
  EXPECT_EQ(cgroup_cpu_limit(root_), 1) << "half a core is still one";
}

// What the system cannot say sets no limit: no files, malformed files, a mount point with an escaped
// space, a group path that climbs out of its mount.
TEST_F(CgroupTree, MissingOrMalformedFilesSetNoLimit) {
  EXPECT_EQ(cgroup_cpu_limit(root_), std::nullopt) << "no /proc/self/cgroup";
  write("proc/self/cgroup", "0::/g\n");
  EXPECT_EQ(cgroup_cpu_limit(root_), std::nullopt) << "no mountinfo";
  write("proc/self/mountinfo", "30 22 0:26 / /sys/fs/my\\040cgroup rw - cgroup2 cgroup2 rw\n");
  write("sys/fs/my cgroup/g/cpu.max", "lots 100000\n");
  write("sys/fs/my cgroup/g/memory.max", "12abc\n");
  EXPECT_EQ(cgroup_cpu_limit(root_), std::nullopt);
  EXPECT_EQ(cgroup_memory_limit(root_), std::nullopt);
  write("sys/fs/my cgroup/g/cpu.max", "200000 100000\n");
  EXPECT_EQ(cgroup_cpu_limit(root_), 2) << "the escaped mount point is found";

  write("proc/self/cgroup", "0::/../../../etc\n");
  write("etc/cpu.max", "100000 100000\n");
  EXPECT_EQ(cgroup_cpu_limit(root_), std::nullopt) << "a path out of the mount is not followed";
}

// The kernel's own files: a child of this process's group, a limit set on it, a process moved into
// it, and what that process reads. Skipped where groups cannot be made (no cgroup mount, not root,
// a v2 parent without the controller delegated).
class KernelGroup {
 public:
  // `controller` is "cpu" or "memory"; the group is made in its v1 hierarchy, else in v2's.
  explicit KernelGroup(const std::string& controller) {
    std::ifstream cgroups("/proc/self/cgroup"), mounts("/proc/self/mountinfo");
    std::string v1_path, v2_path;
    for (std::string line; std::getline(cgroups, line);) {
      const auto first = line.find(':'), second = line.find(':', first + 1);
      if (second == std::string::npos) continue;
      const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
      if (line.starts_with("0::")) v2_path = line.substr(second + 1);
      if (controllers.find("," + controller + ",") != std::string::npos) v1_path = line.substr(second + 1);
    }
    fs::path v1_parent, v2_parent;
    for (std::string line; std::getline(mounts, line);) {
      std::istringstream fields(line);
      std::string id, parent_id, device, mount_root, mount_point;
      fields >> id >> parent_id >> device >> mount_root >> mount_point;
      if (mount_root != "/") continue;  // a container's view: its group is the top, not writable
      const std::string super_options = "," + line.substr(line.rfind(' ') + 1) + ",";
      if (!v1_path.empty() && line.find(" - cgroup ") != std::string::npos &&
          super_options.find("," + controller + ",") != std::string::npos)
        v1_parent = fs::path(mount_point) / fs::path(v1_path).relative_path();
      if (!v2_path.empty() && line.find(" - cgroup2 ") != std::string::npos)
        v2_parent = fs::path(mount_point) / fs::path(v2_path).relative_path();
    }
    const std::string name = "phalanx-test-" + std::to_string(getpid());
    std::error_code error;
    if (!v1_parent.empty() && fs::create_directory(v1_parent / name, error)) {
      path_ = v1_parent / name;
    } else if (!v2_parent.empty() && fs::create_directory(v2_parent / name, error)) {
      path_ = v2_parent / name;
      unified_ = true;
    }
  }
  ~KernelGroup() {
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  KernelGroup(const KernelGroup&) = delete;
  KernelGroup& operator=(const KernelGroup&) = delete;

  bool made() const { return !path_.empty(); }
  bool unified() const { return unified_; }
  const fs::path& path() const { return path_; }

  bool set(const std::string& file, const std::string& value) const {
    std::ofstream out(path_ / file);
    out << value << std::flush;
    return static_cast<bool>(out);
  }

  // What `read` returns in a child process moved into the group; nullopt if it could not be moved.
  template <typename Read>
  std::optional<std::uint64_t> read_inside(Read read) const {
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) return std::nullopt;
    const pid_t child = fork();
    if (child == 0) {
      close(pipe_ends[0]);
      std::uint64_t seen[2] = {0, 0};
      if (std::ofstream(path_ / "cgroup.procs") << getpid() << std::flush) seen[0] = 1, seen[1] = read();
      _exit(::write(pipe_ends[1], seen, sizeof(seen)) == sizeof(seen) ? 0 : 1);
    }
    close(pipe_ends[1]);
    std::uint64_t seen[2] = {0, 0};
    const ssize_t got = child > 0 ? ::read(pipe_ends[0], seen, sizeof(seen)) : -1;
    close(pipe_ends[0]);
    int status = 0;
    if (child > 0) waitpid(child, &status, 0);
    if (got != static_cast<ssize_t>(sizeof(seen)) || seen[0] != 1) return std::nullopt;
    return seen[1];
  }

 private:
  fs::path path_;
  bool unified_ = false;
};

TEST(CgroupLimits, ProcessInAGroupWithAOneCoreQuotaSeesOneCore) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: a quota of one changes nothing";
  const KernelGroup group("cpu");
  if (!group.made()) GTEST_SKIP() << "cannot make a cgroup with the cpu controller here";
  if (!group.set(group.unified() ? "cpu.max" : "cpu.cfs_quota_us",
                 group.unified() ? "100000 100000" : "100000"))
    GTEST_SKIP() << "cannot set a CPU quota on " << group.path();
  const auto limit =
      group.read_inside([] { return static_cast<std::uint64_t>(cgroup_cpu_limit().value_or(0)); });
  if (!limit) GTEST_SKIP() << "cannot move a process into " << group.path();
  EXPECT_EQ(*limit, 1u) << "cgroup_cpu_limit in " << group.path();
  EXPECT_EQ(group.read_inside([] { return static_cast<std::uint64_t>(usable_cores()); }), 1u)
      << "usable_cores in " << group.path();
  EXPECT_EQ(group.read_inside([] { return static_cast<std::uint64_t>(node_cores()); }), 1u)
      << "node_cores in " << group.path();
}

TEST(CgroupLimits, ProcessInAGroupWithAMemoryLimitSeesIt) {
  const std::uint64_t limit = std::uint64_t{256} << 20;
  const auto physical = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                        static_cast<std::uint64_t>(sysconf(_SC_PAGE_SIZE));
  if (physical <= limit) GTEST_SKIP() << "the machine has no more than 256 MiB";
  const KernelGroup group("memory");
  if (!group.made()) GTEST_SKIP() << "cannot make a cgroup with the memory controller here";
  if (!group.set(group.unified() ? "memory.max" : "memory.limit_in_bytes", std::to_string(limit)))
    GTEST_SKIP() << "cannot set a memory limit on " << group.path();
  const auto usable = group.read_inside([] { return usable_memory_bytes().value_or(0); });
  if (!usable) GTEST_SKIP() << "cannot move a process into " << group.path();
  EXPECT_EQ(*usable, limit) << "usable_memory_bytes in " << group.path();
  EXPECT_EQ(usable_memory_bytes().value_or(0), std::min(physical, cgroup_memory_limit().value_or(physical)))
      << "outside the group";
}

}  // namespace
}  // namespace phalanx
