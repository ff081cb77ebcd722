// Error construction: prefixes every message with the rank so multi-rank logs stay readable.
#include "phalanx/core/error.hpp"

#include <atomic>

namespace phalanx {
namespace {
std::atomic<int> process_rank{0};
}

void set_error_rank(int rank) { process_rank.store(rank); }
int error_rank() { return process_rank.load(); }

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error("rank " + std::to_string(error_rank()) + ": " + message),
      kind_(kind),
      rank_(error_rank()) {}

Error::Error(ErrorKind kind, int rank, const std::string& text)
    : std::runtime_error(text), kind_(kind), rank_(rank) {}

std::string Error::message() const {
  const std::string text = what();
  const std::string prefix = "rank " + std::to_string(rank_) + ": ";
  return text.starts_with(prefix) ? text.substr(prefix.size()) : text;
}

void throw_input_error(const std::string& message) { throw Error(ErrorKind::InvalidInput, message); }

void throw_internal_error(const std::string& message, const char* file, int line) {
  throw Error(ErrorKind::Internal, message + " (" + file + ":" + std::to_string(line) + ")");
}

void throw_run_failure(const std::string& message) { throw Error(ErrorKind::Internal, message); }

}  // namespace phalanx
