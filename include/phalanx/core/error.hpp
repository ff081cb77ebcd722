// Errors of phalanx: one exception type that carries what went wrong, where, on which rank,
// and which exit status the command must end with (docs/DESIGN.md §4: 2 for bad input, 1 otherwise).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace phalanx {

enum class ErrorKind {
  InvalidInput,  // bad usage, config or data: exit status 2
  Internal,      // anything else: exit status 1
  DeviceMemory,  // a device allocation failed: exit status 1 (auto batch size probes catch it)
};

// The rank is process-wide context set once after MPI is up; errors read it so that every
// message names the rank that raised it without threading the rank through every call.
void set_error_rank(int rank);
int error_rank();

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const { return kind_; }
  int rank() const { return rank_; }
  int exit_status() const { return kind_ == ErrorKind::InvalidInput ? 2 : 1; }
  // The message without the "rank N: " that what() begins with, for an error that wraps it.
  std::string message() const;

 protected:
  // An error raised on `rank` and passed on to this one: its text names that rank already.
  Error(ErrorKind kind, int rank, const std::string& text);

 private:
  ErrorKind kind_;
  int rank_;
};

// Bad input from the user: config, data file, checkpoint, command line.
[[noreturn]] void throw_input_error(const std::string& message);
// A broken invariant or a failed system/library call.
[[noreturn]] void throw_internal_error(const std::string& message, const char* file, int line);
// The run failed for a reason its message states in full (a non-finite loss, a full disk, the
// data gone): exit status 1, and no source location, which would say nothing to the user.
[[noreturn]] void throw_run_failure(const std::string& message);

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream stream;
  (stream << ... << parts);
  return stream.str();
}
}  // namespace detail

}  // namespace phalanx

// Invariant checks: the message names the file and line; they are never for user input.
#define PHALANX_CHECK(condition, ...)                                                     \
  do {                                                                                    \
    if (!(condition))                                                                     \
      ::phalanx::throw_internal_error(                                                    \
          ::phalanx::detail::concat("check failed: " #condition ": ", ##__VA_ARGS__),     \
          __FILE__, __LINE__);                                                            \
  } while (false)

// Input checks: the message must name the file/key/dataset at fault.
#define PHALANX_REQUIRE_INPUT(condition, ...)                                             \
  do {                                                                                    \
    if (!(condition)) ::phalanx::throw_input_error(::phalanx::detail::concat(__VA_ARGS__)); \
  } while (false)
