// How a command's ranks end together: the set-up agreement's one message, and the abort that
// ends a job whose ranks are past set-up.
#include "rank_setup.hpp"

#include <cstdio>

#include "phalanx/core/error.hpp"
#include "phalanx/train/stop_request.hpp"

namespace phalanx::cli {

int agreed_status(const comm::Communicator& communicator, const std::function<void()>& step,
                  double failed_wait_seconds) {
  try {
    comm::agree(communicator, step, failed_wait_seconds);
    return 0;
  } catch (const comm::AgreedFailure& failure) {
    return report(failure, communicator);
  }
}

int report(const comm::AgreedFailure& failure, const comm::Communicator& communicator) {
  if (failure.first_failing_rank() == communicator.rank())
    std::fprintf(stderr, "phalanx: error: %s\n", failure.what());
  return failure.exit_status();
}

int run_or_abort(const comm::Communicator& communicator, const std::function<void()>& body) {
  int status = 0;
  try {
    body();
    return 0;
  } catch (const Error& error) {
    std::fprintf(stderr, "phalanx: error: %s\n", error.what());
    status = error.exit_status();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "phalanx: error: rank %d: %s\n", communicator.rank(), error.what());
    status = 1;
  } catch (...) {
    std::fprintf(stderr, "phalanx: error: rank %d: unknown exception\n", communicator.rank());
    status = 1;
  }
  std::fflush(stderr);
  if (communicator.size() > 1) comm::MpiSession::abort(status);
  return status;
}

int set_up_and_run(const comm::Communicator& communicator, const std::function<void()>& set_up,
                   const std::function<bool()>& run) {
  try {
    set_up();
  } catch (const comm::AgreedFailure& failure) {
    return report(failure, communicator);
  }
  bool stopped_by_signal = false;
  const int status = run_or_abort(communicator, [&] { stopped_by_signal = run(); });
  if (status == 0 && stopped_by_signal && communicator.rank() == 0) return train::preempted_exit_status;
  return status;
}

}  // namespace phalanx::cli
