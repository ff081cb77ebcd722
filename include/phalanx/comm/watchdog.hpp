// Watchdog: ends a job in which a rank stopped making progress instead of letting the others
// wait in a collective forever. A rank that is stopped (SIGSTOP), killed or hung cannot answer
// any message, so the ranks do not ask each other: each writes a small heartbeat file in a folder
// they all see (the run directory), from a thread of its own, with the stage and step its main
// thread is in. When a rank has waited in a collective for longer than the timeout, its watchdog
// reads every heartbeat and names the rank that stalled: one whose heartbeat stopped beating
// (stopped or dead) or, failing that, one that is still somewhere else (hung in its own code).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace phalanx::comm {

enum class StageKind {
  Local,       // the rank's own work (forward, backward, optimizer, writing a checkpoint)
  Collective,  // waiting for the other ranks (all-reduce, agreement, evaluation sums)
};

// What one rank's heartbeat file says, as read back by another rank.
struct Heartbeat {
  int rank = -1;
  int process_id = 0;
  std::string host;
  std::uint64_t beats = 0;  // grows while the rank's process runs
  std::int64_t step = 0;
  std::string stage;
  StageKind kind = StageKind::Local;
  double stage_seconds = 0;  // how long the rank had been in the stage at its last beat
  bool present = false;      // false: no heartbeat file (yet) or an unreadable one
};

// The verdict of a stall diagnosis, and the message that says it.
struct StallReport {
  std::vector<int> stalled_ranks;
  std::string message;
};

class Watchdog {
 public:
  // `on_stall` runs on a thread of its own with the report once this rank has waited longer than
  // `timeout_seconds` in a collective; it must end the process (the main thread is stuck). The
  // heartbeat goes on meanwhile: a rank that waits there (for another to report first) is not
  // taken for a stopped one.
  Watchdog(std::string folder, int rank, int size, std::string host, double timeout_seconds,
           std::function<void(const StallReport&)> on_stall);
  // Stops the thread and removes this rank's heartbeat file.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Called by the main thread when it enters a stage; `stage` must be a string literal (only the
  // pointer is stored, so this costs a few atomic stores).
  void enter(const char* stage, std::int64_t step, StageKind kind);

  // Seconds between heartbeats: short enough that a stopped rank is told from a slow one within
  // a fraction of the timeout.
  double beat_interval() const { return beat_interval_; }

  // The heartbeat of `rank` as written in `folder` (for the diagnosis and for tests).
  static Heartbeat read(const std::string& folder, int rank);
  // The path of a rank's heartbeat file.
  static std::string heartbeat_path(const std::string& folder, int rank);
  // Names the stalled ranks from two readings of all heartbeats taken some time apart, as seen
  // by `observer` (waiting in `stage` of `step` for `waited_seconds`).
  static StallReport diagnose(const std::vector<Heartbeat>& before, const std::vector<Heartbeat>& after,
                              int observer, const char* stage, std::int64_t step, double waited_seconds,
                              double timeout_seconds);

 private:
  void beat_loop();
  void write_heartbeat(double now);
  std::vector<Heartbeat> read_all() const;

  std::string folder_;
  int rank_, size_;
  std::string host_;
  double timeout_seconds_;
  double beat_interval_;
  std::function<void(const StallReport&)> on_stall_;
  std::thread stall_thread_;  // runs on_stall_ once
  int file_ = -1;
  std::uint64_t beats_ = 0;

  std::atomic<const char*> stage_{"start"};
  std::atomic<std::int64_t> step_{0};
  std::atomic<int> kind_{static_cast<int>(StageKind::Local)};
  std::atomic<double> stage_since_{0};

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace phalanx::comm
