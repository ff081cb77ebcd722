// usable_cores counts the cores this process's affinity allows: held to one core, it says one;
// given every core back, the count it said before.
#include <gtest/gtest.h>
#include <sched.h>

#include "phalanx/core/usable_cores.hpp"

namespace phalanx {
namespace {

TEST(UsableCores, FollowsTheAffinityMask) {
  cpu_set_t original;
  CPU_ZERO(&original);
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  const int before = usable_cores();
  EXPECT_GE(before, 1);
  EXPECT_EQ(before, CPU_COUNT(&original));

  int first = 0;
  while (!CPU_ISSET(first, &original)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(usable_cores(), 1) << "held to CPU " << first;
  ASSERT_EQ(sched_setaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(usable_cores(), before);
}

}  // namespace
}  // namespace phalanx
