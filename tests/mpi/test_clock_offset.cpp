// TraceRecorder's clock offsets under MPI. All ranks of a test run share one machine and so one
// steady clock: the true offset is zero, or exactly the shift a test adds to each rank's clock.
// The estimate must lie within its own stated error bound of the truth, which holds however
// loaded the machine is (a delayed round trip only widens the bound).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "phalanx/core/timer.hpp"
#include "reporting/trace_recorder.hpp"

namespace phalanx::train {
namespace {

// Room for rounding the clock readings (about 1e5 s since boot) in double arithmetic.
constexpr double rounding_slack_seconds = 1e-9;

void expect_same_on_every_rank(const comm::Communicator& world, double value, const char* what) {
  double highest = value, lowest = -value;
  world.allreduce_max(&highest, 1);
  world.allreduce_max(&lowest, 1);
  EXPECT_EQ(highest, value) << what;
  EXPECT_EQ(-lowest, value) << what;
}

#if defined(__SANITIZE_THREAD__)
// TSan records every synchronisation MPI's calls make, which makes each round trip several times
// longer (4.0 ms seen with 4 ranks on 2 loaded cores): there the bound is only kept sane.
constexpr double largest_error_bound_seconds = 20e-3;
#else
// Without TSan the bound is a few microseconds on a quiet machine, but 2.7-2.8 ms were seen with 2
// ranks on 2 cores beside a compile (one of two runs of the test failed at the earlier 2 ms): the
// shortest round trip waits for a core. 10 ms still catches an estimate that takes a long round
// trip instead of the shortest.
constexpr double largest_error_bound_seconds = 10e-3;
#endif

void check_offsets(const comm::Communicator& world, const std::vector<ClockOffset>& offsets,
                   double (*true_offset)(int rank)) {
  ASSERT_EQ(offsets.size(), static_cast<std::size_t>(world.size()));
  EXPECT_EQ(offsets[0].offset, 0.0);
  EXPECT_EQ(offsets[0].error_bound, 0.0);
  for (int rank = 0; rank < world.size(); ++rank) {
    const auto& estimate = offsets[static_cast<std::size_t>(rank)];
    EXPECT_TRUE(std::isfinite(estimate.offset)) << "rank " << rank;
    EXPECT_GE(estimate.error_bound, 0.0) << "rank " << rank;
    EXPECT_LE(std::fabs(estimate.offset - true_offset(rank)), estimate.error_bound + rounding_slack_seconds)
        << "rank " << rank << ": offset " << estimate.offset << " s, bound " << estimate.error_bound << " s";
    // The shortest of up to 64 round trips stays within a few milliseconds even beside busy ranks
    // (a quiet machine gives a few microseconds).
    EXPECT_LT(estimate.error_bound, largest_error_bound_seconds) << "rank " << rank;
    expect_same_on_every_rank(world, estimate.offset, "offset");
    expect_same_on_every_rank(world, estimate.error_bound, "error bound");
  }
}

TEST(ClockOffsets, SharedClockIsZeroWithinTheBound) {
  const auto world = comm::Communicator::world();
  check_offsets(world, TraceRecorder::estimate_clock_offsets(world), [](int) { return 0.0; });
}

TEST(ClockOffsets, ShiftedClocksAreRecoveredWithinTheBound) {
  // Each rank's clock runs ahead (or behind) rank 0's by a known amount of whole seconds.
  const auto world = comm::Communicator::world();
  const auto shift = [](int rank) { return rank % 2 ? 1.5 * rank : -0.75 * rank; };
  const int rank = world.rank();
  const auto offsets =
      TraceRecorder::estimate_clock_offsets(world, [&] { return steady_seconds() + shift(rank); });
  check_offsets(world, offsets, +shift);
}

TEST(ClockOffsets, RepeatedEstimatesDoNotCrossMessages) {
  // Back-to-back estimates, as a run writing several traces would make, each come out within
  // their bounds: no message of one estimate is taken by the next.
  const auto world = comm::Communicator::world();
  for (int repetition = 0; repetition < 3; ++repetition)
    check_offsets(world, TraceRecorder::estimate_clock_offsets(world), [](int) { return 0.0; });
}

}  // namespace
}  // namespace phalanx::train
