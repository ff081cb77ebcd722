// Shared assertion of the config tests: a call must throw an InvalidInput phalanx::Error
// (exit status 2) whose message contains every expected fragment (file, key, suggestion).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"

namespace phalanx::testing {

// Returns the message so a test can check more; empty when the call did not throw as expected.
inline std::string expect_input_error(const std::function<void()>& call,
                                      const std::vector<std::string>& fragments) {
  try {
    call();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << error.what();
    EXPECT_EQ(error.exit_status(), 2) << error.what();
    const std::string message = error.what();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos) << "missing '" << fragment << "' in: " << message;
    }
    return message;
  }
  ADD_FAILURE() << "expected an InvalidInput error";
  return "";
}

}  // namespace phalanx::testing
