// Tests of the stall watchdog: heartbeat files written by its thread, the diagnosis that names a
// stopped or a hung rank, and a real stall (a peer that never beats) reported after the timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "phalanx/comm/watchdog.hpp"
#include "support/test_support.hpp"

namespace phalanx::comm {
namespace {

using namespace std::chrono_literals;

Heartbeat beat(int rank, std::uint64_t beats, std::int64_t step, const char* stage, StageKind kind) {
  Heartbeat heartbeat;
  heartbeat.rank = rank;
  heartbeat.process_id = 100 + rank;
  heartbeat.host = "node" + std::to_string(rank);
  heartbeat.beats = beats;
  heartbeat.step = step;
  heartbeat.stage = stage;
  heartbeat.kind = kind;
  heartbeat.present = true;
  return heartbeat;
}

TEST(Watchdog, HeartbeatFileFollowsTheMainThreadsStage) {
  testing::ScratchDirectory scratch("watchdog-heartbeat");
  const std::string folder = scratch.path() / "heartbeat";
  {
    Watchdog watchdog(folder, 3, 4, "hostA", 1.0, [](const StallReport&) { FAIL() << "no stall expected"; });
    watchdog.enter("gradient all-reduce", 17, StageKind::Local);
    const Heartbeat first = Watchdog::read(folder, 3);
    std::this_thread::sleep_for(std::chrono::duration<double>(4 * watchdog.beat_interval()));
    const Heartbeat later = Watchdog::read(folder, 3);
    ASSERT_TRUE(later.present);
    EXPECT_EQ(later.rank, 3);
    EXPECT_EQ(later.host, "hostA");
    EXPECT_EQ(later.step, 17);
    EXPECT_EQ(later.stage, "gradient all-reduce");
    EXPECT_EQ(later.kind, StageKind::Local);
    EXPECT_GT(later.beats, first.beats) << "the watchdog thread must keep beating";
    EXPECT_FALSE(Watchdog::read(folder, 2).present) << "rank 2 never wrote a heartbeat";
  }
  EXPECT_FALSE(std::filesystem::exists(Watchdog::heartbeat_path(folder, 3)))
      << "a finished rank removes its file";
  EXPECT_FALSE(std::filesystem::exists(folder)) << "and the last one the empty folder";
}

TEST(Watchdog, DiagnosisNamesTheRankWhoseHeartbeatStopped) {
  const std::vector<Heartbeat> before = {beat(0, 10, 5, "gradient all-reduce", StageKind::Collective),
                                         beat(1, 7, 4, "forward and backward", StageKind::Local),
                                         beat(2, 12, 5, "gradient all-reduce", StageKind::Collective)};
  std::vector<Heartbeat> after = before;
  after[0].beats += 3;
  after[2].beats += 3;
  const auto report = Watchdog::diagnose(before, after, 0, "gradient all-reduce", 5, 12.5, 10);
  EXPECT_EQ(report.stalled_ranks, std::vector<int>{1});
  EXPECT_NE(report.message.find("stalled rank 1"), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("host node1, pid 101"), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("'gradient all-reduce' of step 5"), std::string::npos) << report.message;
  EXPECT_NE(report.message.find("not running"), std::string::npos) << report.message;
}

TEST(Watchdog, DiagnosisNamesALiveRankStuckElsewhere) {
  std::vector<Heartbeat> before = {beat(0, 10, 9, "stop agreement", StageKind::Collective),
                                   beat(1, 10, 9, "stop agreement", StageKind::Collective),
                                   beat(2, 10, 8, "checkpoint", StageKind::Local)};
  std::vector<Heartbeat> after = before;
  for (auto& heartbeat : after) heartbeat.beats += 2;
  const auto report = Watchdog::diagnose(before, after, 1, "stop agreement", 9, 30, 20);
  EXPECT_EQ(report.stalled_ranks, std::vector<int>{2});
  EXPECT_NE(report.message.find("rank 2 (host node2, pid 102) is still in 'checkpoint' of step 8"),
            std::string::npos)
      << report.message;

  // Everyone alive and waiting in the same collective: nobody to blame but the transport.
  after[2] = beat(2, 12, 9, "stop agreement", StageKind::Collective);
  const auto transport = Watchdog::diagnose(before, after, 1, "stop agreement", 9, 30, 20);
  EXPECT_TRUE(transport.stalled_ranks.empty());
  EXPECT_NE(transport.message.find("transport"), std::string::npos) << transport.message;
}

TEST(Watchdog, ReportsAPeerThatNeverBeatsAfterTheTimeout) {
  testing::ScratchDirectory scratch("watchdog-stall");
  const std::string folder = scratch.path() / "heartbeat";
  std::promise<StallReport> stalled;
  auto verdict = stalled.get_future();
  const double timeout = 0.5;
  const auto start = std::chrono::steady_clock::now();
  Watchdog watchdog(folder, 0, 2, "hostA", timeout,
                    [&](const StallReport& report) { stalled.set_value(report); });
  watchdog.enter("gradient all-reduce", 3, StageKind::Collective);
  ASSERT_EQ(verdict.wait_for(10s), std::future_status::ready) << "the watchdog never fired";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const StallReport report = verdict.get();
  EXPECT_EQ(report.stalled_ranks, std::vector<int>{1});
  EXPECT_NE(report.message.find("rank 1: no heartbeat file"), std::string::npos) << report.message;
  EXPECT_GE(seconds, timeout);
  EXPECT_LT(seconds, timeout + 3.0);
}

TEST(Watchdog, StaysQuietWhileTheWaitIsShorterThanTheTimeout) {
  testing::ScratchDirectory scratch("watchdog-quiet");
  const std::string folder = scratch.path() / "heartbeat";
  bool fired = false;
  {
    Watchdog watchdog(folder, 0, 2, "hostA", 0.6, [&](const StallReport&) { fired = true; });
    for (int step = 0; step < 10; ++step) {
      watchdog.enter("gradient all-reduce", step, StageKind::Collective);
      std::this_thread::sleep_for(100ms);  // each wait ends well before the timeout
      watchdog.enter("forward and backward", step + 1, StageKind::Local);
    }
  }
  EXPECT_FALSE(fired);
}

}  // namespace
}  // namespace phalanx::comm
