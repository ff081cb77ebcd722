// cgroup_limits.hpp: the process's groups from /proc/self/cgroup, each hierarchy's mount from
// /proc/self/mountinfo, and the limit files of the group and every ancestor up to the mount (a
// parent's limit binds its children, and a container or a Slurm step often sits several levels
// below the group that carries the limit). Files that are missing or unreadable set no limit:
// these are the kernel's files, and a system without them is simply not limited by them.
#include "phalanx/core/cgroup_limits.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace phalanx {
namespace {

namespace fs = std::filesystem;

// Which hierarchy a group belongs to: v2's unified one, or the v1 hierarchy holding a controller.
struct Hierarchy {
  bool unified = false;
  std::string controller;  // v1 only: "cpu" or "memory"
};

// A hierarchy's directory for this process and the directory it is mounted at (where the walk up
// stops).
struct GroupDirectory {
  fs::path group;
  fs::path mount;
};

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.emplace_back(
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool contains(const std::vector<std::string>& items, std::string_view wanted) {
  return std::find(items.begin(), items.end(), wanted) != items.end();
}

// mountinfo writes a space, tab, newline or backslash in a path as a three-digit octal escape.
std::string unescape_mount_path(std::string_view text) {
  std::string path;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() &&
        std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                    text.begin() + static_cast<std::ptrdiff_t>(i) + 4,
                    [](char digit) { return digit >= '0' && digit <= '7'; })) {
      path += static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 + (text[i + 3] - '0'));
      i += 3;
    } else {
      path += text[i];
    }
  }
  return path;
}

// The process's path in the hierarchy from /proc/self/cgroup ("ID:controllers:path" per line; v2's
// line is "0::path").
std::optional<std::string> group_path(const fs::path& root, const Hierarchy& hierarchy) {
  std::ifstream file(root / "proc/self/cgroup");
  for (std::string line; std::getline(file, line);) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const bool matches = hierarchy.unified ? line.substr(0, first) == "0" && controllers.empty()
                                           : contains(split(controllers, ','), hierarchy.controller);
    if (matches) return line.substr(second + 1);
  }
  return std::nullopt;
}

// The hierarchy's directory for this process: the mount whose root (the group the mount shows at
// its top: a container's own group, for one) leads to the process's group, the longest such root
// where several mounts show the hierarchy.
std::optional<GroupDirectory> group_directory(const fs::path& root, const Hierarchy& hierarchy) {
  const auto path = group_path(root, hierarchy);
  if (!path) return std::nullopt;
  std::ifstream file(root / "proc/self/mountinfo");
  std::optional<GroupDirectory> found;
  std::size_t found_root_length = 0;
  for (std::string line; std::getline(file, line);) {
    // "ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS"
    const std::size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const auto fields = split(line.substr(0, dash), ' ');
    const auto tail = split(line.substr(dash + 3), ' ');
    if (fields.size() < 5 || tail.size() < 3) continue;
    const bool matches = hierarchy.unified
                             ? tail[0] == "cgroup2"
                             : tail[0] == "cgroup" && contains(split(tail[2], ','), hierarchy.controller);
    if (!matches) continue;
    const std::string mount_root = unescape_mount_path(fields[3]);
    std::string below;
    if (mount_root == "/") {
      below = *path;
    } else if (*path == mount_root || path->starts_with(mount_root + "/")) {
      below = path->substr(mount_root.size());
    } else {
      continue;  // a mount of another part of the hierarchy
    }
    if (found && mount_root.size() <= found_root_length) continue;
    const fs::path mount =
        (root / fs::path(unescape_mount_path(fields[4])).relative_path()).lexically_normal();
    const fs::path relative = fs::path(below).relative_path();
    found = GroupDirectory{relative.empty() ? mount : (mount / relative).lexically_normal(), mount};
    found_root_length = mount_root.size();
  }
  return found;
}

std::optional<std::string> first_line(const fs::path& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  return line;
}

std::optional<std::uint64_t> parse_count(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The smallest limit `read` finds from the group up to the mount, inclusive.
template <typename Read>
auto tightest(const GroupDirectory& directory, Read read) -> decltype(read(directory.group)) {
  decltype(read(directory.group)) tightest_limit;
  // Each level must lie within the mount: a group path with a ".." would otherwise climb out of it.
  const auto within_mount = [&](const fs::path& level) {
    const fs::path relative = level.lexically_relative(directory.mount);
    return !relative.empty() && *relative.begin() != "..";
  };
  for (fs::path level = directory.group; within_mount(level); level = level.parent_path()) {
    const auto limit = read(level);
    if (limit && (!tightest_limit || *limit < *tightest_limit)) tightest_limit = limit;
    if (level == directory.mount) break;
  }
  return tightest_limit;
}

// Cores a quota of `quota` microseconds per `period` gives, rounded up.
std::optional<int> quota_cores(std::uint64_t quota, std::uint64_t period) {
  if (quota == 0 || period == 0) return std::nullopt;
  const std::uint64_t cores = quota / period + (quota % period != 0 ? 1 : 0);
  return static_cast<int>(std::min<std::uint64_t>(cores, 1u << 20));
}

std::optional<int> v2_cpu_limit(const fs::path& group) {
  // cpu.max: "max PERIOD" or "QUOTA PERIOD".
  const auto line = first_line(group / "cpu.max");
  if (!line) return std::nullopt;
  const auto fields = split(*line, ' ');
  if (fields.size() != 2 || fields[0] == "max") return std::nullopt;
  const auto quota = parse_count(fields[0]), period = parse_count(fields[1]);
  if (!quota || !period) return std::nullopt;
  return quota_cores(*quota, *period);
}

std::optional<int> v1_cpu_limit(const fs::path& group) {
  // cpu.cfs_quota_us is -1 without a quota, which parse_count refuses.
  const auto quota_line = first_line(group / "cpu.cfs_quota_us");
  const auto period_line = first_line(group / "cpu.cfs_period_us");
  if (!quota_line || !period_line) return std::nullopt;
  const auto quota = parse_count(*quota_line), period = parse_count(*period_line);
  if (!quota || !period) return std::nullopt;
  return quota_cores(*quota, *period);
}

// v1 writes "no limit" as the largest page-aligned signed 64-bit count; no machine has 2^62 bytes.
constexpr std::uint64_t unlimited_memory = std::uint64_t{1} << 62;

std::optional<std::uint64_t> memory_limit_in(const fs::path& file) {
  const auto line = first_line(file);
  if (!line || *line == "max") return std::nullopt;
  const auto bytes = parse_count(*line);
  if (!bytes || *bytes >= unlimited_memory) return std::nullopt;
  return bytes;
}

template <typename T>
std::optional<T> smaller(std::optional<T> first, std::optional<T> second) {
  if (!first) return second;
  if (!second) return first;
  return std::min(*first, *second);
}

}  // namespace

std::optional<int> cgroup_cpu_limit(const fs::path& root) {
  // A hybrid system mounts both; the cpu controller is in one of them, and the tighter limit binds.
  std::optional<int> limit;
  if (const auto v2 = group_directory(root, Hierarchy{true, {}}))
    limit = smaller(limit, tightest(*v2, v2_cpu_limit));
  if (const auto v1 = group_directory(root, Hierarchy{false, "cpu"}))
    limit = smaller(limit, tightest(*v1, v1_cpu_limit));
  return limit;
}

std::optional<std::uint64_t> cgroup_memory_limit(const fs::path& root) {
  std::optional<std::uint64_t> limit;
  if (const auto v2 = group_directory(root, Hierarchy{true, {}}))
    limit = smaller(
        limit, tightest(*v2, [](const fs::path& group) { return memory_limit_in(group / "memory.max"); }));
  if (const auto v1 = group_directory(root, Hierarchy{false, "memory"}))
    limit = smaller(limit, tightest(*v1, [](const fs::path& group) {
                      return memory_limit_in(group / "memory.limit_in_bytes");
                    }));
  return limit;
}

}  // namespace phalanx
