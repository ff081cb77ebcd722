// Agreement on failure: a phase of set-up runs on every rank, and the ranks then agree whether it
// failed anywhere, so that a bad input on one rank ends every rank's set-up with the same message
// and exit status instead of leaving the others waiting in the next collective.
#pragma once

#include <functional>
#include <string>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::comm {

// Thrown on every rank of a phase that failed on some rank: the lowest failing rank's message,
// the highest exit status of all (as the command ends with), and which rank
// failed first (the one that prints it).
class AgreedFailure final : public Error {
 public:
  AgreedFailure(int exit_status, const std::string& message, int first_failing_rank);
  int first_failing_rank() const { return first_failing_rank_; }

 private:
  int first_failing_rank_;
};

// Runs `phase` on every rank of `communicator` (collective). Returns when it succeeded on every
// rank; otherwise throws AgreedFailure on every rank. A failure that is not an Error is named
// with the rank it happened on.
// A rank whose phase failed may have skipped a collective inside it (a node split, a broadcast)
// in which the others now wait, so that they never reach the agreement: after waiting
// `failed_wait_seconds` there it prints its own message ("phalanx: error: ...") and ends the job
// with its exit status (MpiSession::abort). Ranks whose phase succeeded wait as long as it takes:
// another rank may be slow, not lost.
void agree(const Communicator& communicator, const std::function<void()>& phase,
           double failed_wait_seconds = 300);

}  // namespace phalanx::comm
