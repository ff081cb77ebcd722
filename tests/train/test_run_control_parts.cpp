// Tests of the pieces around the training step that need no MPI job: the stop request set by a
// real signal, and the straggler summary.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "phalanx/train/stop_request.hpp"
#include "control/straggler_report.hpp"

namespace phalanx::train {
namespace {

TEST(StopRequest, RecordsTheFirstSignalAndItsTime) {
  StopRequest::reset();
  {
    const StopRequest request;
    EXPECT_EQ(StopRequest::signal_received(), 0);
    const auto sent = std::chrono::system_clock::now();
    // Process-directed signals, as kill(1), mpirun and Slurm send them; each would end the
    // process without the StopRequest.
    ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (StopRequest::signal_received() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(StopRequest::signal_received(), SIGUSR1) << "the first signal counts";
    const double sent_seconds = std::chrono::duration<double>(sent.time_since_epoch()).count();
    EXPECT_GE(StopRequest::signal_time(), sent_seconds - 0.01);
    EXPECT_LT(StopRequest::signal_time(), sent_seconds + 5.0);
  }
  StopRequest::reset();
  EXPECT_EQ(StopRequest::signal_received(), 0);
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  EXPECT_FALSE(sigismember(&mask, SIGTERM)) << "the destructor restores the signal mask";
}

TEST(StragglerReport, NamesTheSlowestRankAgainstTheMedian) {
  const auto summary = summarise_stragglers({10.0, 31.0, 11.0, 9.0});
  EXPECT_EQ(summary.slowest_rank, 1);
  EXPECT_DOUBLE_EQ(summary.slowest_ms, 31.0);
  EXPECT_DOUBLE_EQ(summary.median_ms, 10.0);  // lower middle of 9, 10, 11, 31
  EXPECT_DOUBLE_EQ(summary.ratio, 3.1);
  EXPECT_EQ(summary.rank_ms.size(), 4u);
}

TEST(StragglerReport, TwoRanksCompareTheSlowWithTheFast) {
  const auto summary = summarise_stragglers({40.0, 20.0});
  EXPECT_EQ(summary.slowest_rank, 0);
  EXPECT_DOUBLE_EQ(summary.ratio, 2.0);
  const auto single = summarise_stragglers({5.0});
  EXPECT_EQ(single.slowest_rank, 0);
  EXPECT_DOUBLE_EQ(single.ratio, 1.0);
}

}  // namespace
}  // namespace phalanx::train
