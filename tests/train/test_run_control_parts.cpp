// Tests of the pieces around the training step that need no MPI job: the stop request set by a
// real signal, and the straggler summary.
#include <gtest/gtest.h>
#include <time.h>

#include <csignal>

#include "phalanx/train/stop_request.hpp"
#include "phalanx/train/straggler_report.hpp"

namespace phalanx::train {
namespace {

TEST(StopRequest, RecordsTheFirstSignalAndItsTime) {
  StopRequest::reset();
  {
    const StopRequest request;
    EXPECT_EQ(StopRequest::signal_received(), 0);
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    ASSERT_EQ(std::raise(SIGUSR1), 0);  // would end the process without the handler
    ASSERT_EQ(std::raise(SIGTERM), 0);
    EXPECT_EQ(StopRequest::signal_received(), SIGUSR1) << "the first signal counts";
    EXPECT_NEAR(StopRequest::signal_time(), static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9, 5.0);
  }
  StopRequest::reset();
  EXPECT_EQ(StopRequest::signal_received(), 0);
  struct sigaction restored {};
  sigaction(SIGTERM, nullptr, &restored);
  EXPECT_EQ(restored.sa_handler, SIG_DFL) << "the destructor restores the previous disposition";
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
