// How a command's ranks end together: agree across ranks on whether a set-up step failed, so a
// bad input on any rank ends every rank with one message and exit status 2 instead of a hang, and
// end the whole job once they are past set-up (private to src/cli).
#pragma once

#include <functional>
#include <string>

#include "phalanx/comm/agreement.hpp"
#include "phalanx/comm/communicator.hpp"

namespace phalanx::cli {

// Runs `step` on every rank (comm::agree). Returns 0 when it succeeded everywhere; otherwise the
// worst exit status, after the lowest failing rank printed its message (the others stay quiet).
// A rank that failed waits `failed_wait_seconds` for the others (comm::agree): the config's
// distributed.timeout_s once one is read.
int agreed_status(const comm::Communicator& communicator, const std::function<void()>& step,
                  double failed_wait_seconds = 300);

// The exit status of a set-up that failed on some rank, printed by the rank that failed first.
int report(const comm::AgreedFailure& failure, const comm::Communicator& communicator);

// Runs the body of a command once setup agreed: from here on every rank sits in the same
// collectives, so a failure on one rank ends the whole job (MPI_Abort) rather than leave the
// others waiting forever. Returns the exit status when there is only one rank.
int run_or_abort(const comm::Communicator& communicator, const std::function<void()>& body);

// A job's two halves: `set_up` (its agreed phases: a failure ends every rank with one message) and
// `run` (past set-up: a failure aborts the job), which returns whether a stop signal ended it. Only
// rank 0 then reports the stop (exit status 75): mpirun tears a job down when a rank exits
// non-zero, and waits out its kill timeouts for ranks that are still finalising.
int set_up_and_run(const comm::Communicator& communicator, const std::function<void()>& set_up,
                   const std::function<bool()>& run);

}  // namespace phalanx::cli
