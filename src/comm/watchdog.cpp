// Watchdog: heartbeat files written by a thread of each rank, and the stall diagnosis read from
// them. A heartbeat is one fixed-size binary record rewritten in place with a single pwrite, so a
// reader never needs a lock; a torn read (rare, only across hosts) fails the magic or the rank
// check and counts as "no heartbeat", which the second reading corrects.
#include "phalanx/comm/watchdog.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "phalanx/core/error.hpp"

namespace phalanx::comm {
namespace {

constexpr char record_magic[8] = {'P', 'H', 'X', 'B', 'E', 'A', 'T', '1'};

struct Record {
  char magic[8];
  std::int32_t rank;
  std::int32_t process_id;
  std::uint64_t beats;
  std::int64_t step;
  double stage_seconds;
  std::int32_t kind;
  std::int32_t reserved;
  char host[64];
  char stage[64];
};

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void copy_text(char* target, std::size_t size, const std::string& text) {
  std::memset(target, 0, size);
  std::memcpy(target, text.data(), std::min(size - 1, text.size()));
}

std::string describe_position(const Heartbeat& heartbeat) {
  char text[192];
  std::snprintf(text, sizeof(text), "'%s' of step %lld (for %.1f s at its last heartbeat)",
                heartbeat.stage.c_str(), static_cast<long long>(heartbeat.step), heartbeat.stage_seconds);
  return text;
}

}  // namespace

Watchdog::Watchdog(std::string folder, int rank, int size, std::string host, double timeout_seconds,
                   std::function<void(const StallReport&)> on_stall)
    : folder_(std::move(folder)),
      rank_(rank),
      size_(size),
      host_(std::move(host)),
      timeout_seconds_(timeout_seconds),
      // Ten beats per timeout, at most two a second: a stopped rank misses several beats before
      // anyone looks, and a long timeout does not cost a write every few milliseconds.
      beat_interval_(std::clamp(timeout_seconds / 10.0, 0.05, 0.5)),
      on_stall_(std::move(on_stall)) {
  std::error_code error;
  std::filesystem::create_directories(folder_, error);
  const std::string path = heartbeat_path(folder_, rank_);
  file_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (file_ < 0)
    throw_input_error(path + ": cannot write the heartbeat file of the watchdog: " + std::strerror(errno) +
                      " (the run directory must be writable by every rank)");
  stage_since_.store(steady_seconds());
  write_heartbeat(steady_seconds());
  thread_ = std::thread([this] { beat_loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (stall_thread_.joinable()) stall_thread_.join();
  if (file_ >= 0) ::close(file_);
  ::unlink(heartbeat_path(folder_, rank_).c_str());
  ::rmdir(folder_.c_str());  // the last rank to finish removes the folder; the others fail harmlessly
}

void Watchdog::enter(const char* stage, std::int64_t step, StageKind kind) {
  stage_since_.store(steady_seconds(), std::memory_order_relaxed);
  step_.store(step, std::memory_order_relaxed);
  kind_.store(static_cast<int>(kind), std::memory_order_relaxed);
  stage_.store(stage, std::memory_order_release);
}

std::string Watchdog::heartbeat_path(const std::string& folder, int rank) {
  return folder + "/rank-" + std::to_string(rank);
}

void Watchdog::write_heartbeat(double now) {
  Record record{};
  std::memcpy(record.magic, record_magic, sizeof(record_magic));
  record.rank = rank_;
  record.process_id = static_cast<std::int32_t>(::getpid());
  record.beats = ++beats_;
  const char* stage = stage_.load(std::memory_order_acquire);
  record.step = step_.load(std::memory_order_relaxed);
  record.kind = kind_.load(std::memory_order_relaxed);
  record.stage_seconds = now - stage_since_.load(std::memory_order_relaxed);
  copy_text(record.host, sizeof(record.host), host_);
  copy_text(record.stage, sizeof(record.stage), stage);
  // A failed write (full disk, lost mount) only weakens the diagnosis; it must not end training.
  [[maybe_unused]] const auto written = ::pwrite(file_, &record, sizeof(record), 0);
}

Heartbeat Watchdog::read(const std::string& folder, int rank) {
  Heartbeat heartbeat;
  heartbeat.rank = rank;
  const int file = ::open(heartbeat_path(folder, rank).c_str(), O_RDONLY | O_CLOEXEC);
  if (file < 0) return heartbeat;
  Record record{};
  const auto bytes = ::pread(file, &record, sizeof(record), 0);
  ::close(file);
  if (bytes != static_cast<ssize_t>(sizeof(record)) ||
      std::memcmp(record.magic, record_magic, sizeof(record_magic)) != 0 || record.rank != rank)
    return heartbeat;
  record.host[sizeof(record.host) - 1] = '\0';
  record.stage[sizeof(record.stage) - 1] = '\0';
  heartbeat.process_id = record.process_id;
  heartbeat.host = record.host;
  heartbeat.beats = record.beats;
  heartbeat.step = record.step;
  heartbeat.stage = record.stage;
  heartbeat.kind =
      record.kind == static_cast<int>(StageKind::Collective) ? StageKind::Collective : StageKind::Local;
  heartbeat.stage_seconds = record.stage_seconds;
  heartbeat.present = true;
  return heartbeat;
}

std::vector<Heartbeat> Watchdog::read_all() const {
  std::vector<Heartbeat> heartbeats;
  for (int rank = 0; rank < size_; ++rank) heartbeats.push_back(read(folder_, rank));
  return heartbeats;
}

StallReport Watchdog::diagnose(const std::vector<Heartbeat>& before, const std::vector<Heartbeat>& after,
                               int observer, const char* stage, std::int64_t step, double waited_seconds,
                               double timeout_seconds) {
  StallReport report;
  std::string details;
  // First the ranks whose process no longer runs: their beat count did not move between readings.
  for (std::size_t rank = 0; rank < after.size(); ++rank) {
    const Heartbeat& now = after[rank];
    const Heartbeat& earlier = before[rank];
    if (!now.present || !earlier.present || now.beats == earlier.beats) {
      report.stalled_ranks.push_back(static_cast<int>(rank));
      details += "; rank " + std::to_string(rank);
      if (!now.present)
        details += ": no heartbeat file";
      else
        details += " (host " + now.host + ", pid " + std::to_string(now.process_id) +
                   ") is not running (stopped or killed): its heartbeat stopped in " + describe_position(now);
    }
  }
  // Otherwise the ranks that are alive but not where the observer waits for them (hung in a
  // local stage, or in another collective).
  if (report.stalled_ranks.empty()) {
    for (std::size_t rank = 0; rank < after.size(); ++rank) {
      const Heartbeat& now = after[rank];
      if (now.kind == StageKind::Collective && now.stage == stage && now.step == step) continue;
      report.stalled_ranks.push_back(static_cast<int>(rank));
      details += "; rank " + std::to_string(rank) + " (host " + now.host + ", pid " +
                 std::to_string(now.process_id) + ") is still in " + describe_position(now);
    }
  }
  char head[256];
  std::snprintf(head, sizeof(head),
                "watchdog: rank %d waited %.1f s in '%s' of step %lld (distributed.timeout_s = %g)", observer,
                waited_seconds, stage, static_cast<long long>(step), timeout_seconds);
  if (report.stalled_ranks.empty()) {
    report.message = std::string(head) +
                     "; every rank is alive and waiting in it, so the transport itself stalled (network, "
                     "MPI): ending the job";
  } else {
    std::string names;
    for (const int rank : report.stalled_ranks) names += (names.empty() ? "" : ", ") + std::to_string(rank);
    report.message = std::string(head) + ": stalled rank" + (report.stalled_ranks.size() > 1 ? "s " : " ") +
                     names + details + "; ending the job";
  }
  return report;
}

void Watchdog::beat_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::duration<double>(beat_interval_));
    if (stopping_) break;
    const double now = steady_seconds();
    write_heartbeat(now);
    const double waited = now - stage_since_.load(std::memory_order_relaxed);
    if (kind_.load(std::memory_order_relaxed) != static_cast<int>(StageKind::Collective) ||
        waited <= timeout_seconds_)
      continue;
    // Two readings a few beats apart tell a process that stopped from one that is only busy.
    const auto before = read_all();
    wake_.wait_for(lock, std::chrono::duration<double>(3 * beat_interval_ + 0.2));
    if (stopping_) break;
    write_heartbeat(steady_seconds());
    const auto after = read_all();
    // The main thread may have left the collective meanwhile (the peer was only slow).
    const char* stage = stage_.load(std::memory_order_acquire);
    if (kind_.load(std::memory_order_relaxed) != static_cast<int>(StageKind::Collective) ||
        steady_seconds() - stage_since_.load(std::memory_order_relaxed) <= timeout_seconds_)
      continue;
    const auto report =
        diagnose(before, after, rank_, stage, step_.load(std::memory_order_relaxed),
                 steady_seconds() - stage_since_.load(std::memory_order_relaxed), timeout_seconds_);
    // The callback may wait before it ends the job (for the rank that reports): on a thread of its
    // own, so this one keeps the heartbeat going, and the others do not take this rank for stopped.
    stall_thread_ = std::thread([this, report] { on_stall_(report); });
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::duration<double>(beat_interval_));
      if (!stopping_) write_heartbeat(steady_seconds());
    }
    return;
  }
}

}  // namespace phalanx::comm
