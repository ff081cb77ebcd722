// Helpers shared by the data tests: small deterministic splits, an assertion that a call fails
// with an input error (exit status 2) whose message contains the expected text, and a deadline for
// calls that once hung.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "support/test_support.hpp"

namespace phalanx::testing {

// A split whose bytes and labels follow from (seed, sample index), so tests can recompute them.
inline data::Split make_split(const std::string& name, std::int64_t count, int height, int width,
                              int channels, int classes, std::uint32_t seed) {
  data::Split split;
  split.name = name;
  split.count = count;
  split.height = height;
  split.width = width;
  split.channels = channels;
  split.images.resize(static_cast<std::size_t>(count * split.image_bytes()));
  split.labels.resize(static_cast<std::size_t>(count));
  std::uint32_t state = seed * 2654435761u + 12345u;
  for (auto& byte : split.images) {
    state = state * 1664525u + 1013904223u;  // a plain LCG is enough for test bytes
    byte = static_cast<std::uint8_t>(state >> 24);
  }
  for (std::int64_t sample = 0; sample < count; ++sample)
    split.labels[static_cast<std::size_t>(sample)] = static_cast<std::int32_t>((sample * 7 + seed) % classes);
  return split;
}

// An epoch's whole global order, position by position, for tests that compare orders of small
// datasets (the plan itself never materialises more than its permutation).
inline std::vector<std::int64_t> global_order(const data::ShardPlan& plan, std::int64_t epoch) {
  data::EpochOrder order = plan.epoch_order(epoch);
  std::vector<std::int64_t> values(static_cast<std::size_t>(order.size()));
  for (std::int64_t position = 0; position < order.size(); ++position)
    values[static_cast<std::size_t>(position)] = order.at(position);
  return values;
}

// Runs `call` and ends the test program, naming `what`, if it has not returned within `seconds`.
// For reads of damaged files that once spun forever inside HDF5: nothing can interrupt such a call,
// and without this a regression would hold CTest until its 600 s timeout.
template <typename Call>
void within_seconds(int seconds, const char* what, Call&& call) {
  std::mutex mutex;
  std::condition_variable finished_signal;
  bool finished = false;
  std::thread deadline([&] {
    std::unique_lock lock(mutex);
    if (finished_signal.wait_for(lock, std::chrono::seconds(seconds), [&] { return finished; })) return;
    std::fprintf(stderr, "%s did not return within %d s (hung)\n", what, seconds);
    std::_Exit(1);
  });
  const auto finish = [&] {
    {
      const std::lock_guard lock(mutex);
      finished = true;
    }
    finished_signal.notify_one();
    deadline.join();
  };
  try {
    call();
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

}  // namespace phalanx::testing

// Asserts an input error whose message contains `expected` (a std::string or literal).
#define EXPECT_INPUT_ERROR(call, expected)                                               \
  do {                                                                                   \
    const std::string message_ = ::phalanx::testing::input_error_message([&] { call; }); \
    EXPECT_NE(message_.find(expected), std::string::npos)                                \
        << "message: " << message_ << "\nexpected to contain: " << (expected);           \
  } while (false)
