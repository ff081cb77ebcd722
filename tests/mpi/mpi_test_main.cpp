// GoogleTest under MPI: every rank runs the tests; only rank 0 prints the usual report, and the
// exit status is non-zero when any rank saw a failure (so mpiexec and CTest see it).
#include <gtest/gtest.h>

#include "phalanx/comm/communicator.hpp"

int main(int argc, char** argv) {
  phalanx::comm::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const auto world = phalanx::comm::Communicator::world();
  if (world.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int local_failure = RUN_ALL_TESTS() != 0 ? 1 : 0;
  std::int64_t failures = local_failure;
  world.allreduce_sum(&failures, 1);
  if (failures && world.rank() == 0)
    std::fprintf(stderr, "%lld rank(s) failed\n", static_cast<long long>(failures));
  return failures ? 1 : 0;
}
