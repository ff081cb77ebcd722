// Helpers shared by the data tests: small deterministic splits, and an assertion that a call
// fails with an input error (exit status 2) whose message contains the expected text.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"

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

// Runs `call`, expects phalanx::Error of kind InvalidInput, and returns its message.
template <typename Call>
std::string input_error_message(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << error.what();
    EXPECT_EQ(error.exit_status(), 2);
    return error.what();
  }
  ADD_FAILURE() << "expected an input error, but the call succeeded";
  return {};
}

}  // namespace phalanx::testing

// Asserts an input error whose message contains `expected` (a std::string or literal).
#define EXPECT_INPUT_ERROR(call, expected)                                               \
  do {                                                                                   \
    const std::string message_ = ::phalanx::testing::input_error_message([&] { call; }); \
    EXPECT_NE(message_.find(expected), std::string::npos)                                \
        << "message: " << message_ << "\nexpected to contain: " << (expected);           \
  } while (false)
