// The failure agreement of set-up phases: one all-gather of exit statuses when every rank
// succeeded, and one broadcast of the first failure's message when one did not.
#include "phalanx/comm/agreement.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace phalanx::comm {

AgreedFailure::AgreedFailure(int exit_status, const std::string& message, int first_failing_rank)
    : Error(exit_status == 2 ? ErrorKind::InvalidInput : ErrorKind::Internal, first_failing_rank, message),
      first_failing_rank_(first_failing_rank) {}

void agree(const Communicator& communicator, const std::function<void()>& phase, double failed_wait_seconds) {
  int status = 0;
  std::string message;
  try {
    phase();
  } catch (const AgreedFailure& failure) {
    // A phase that is itself made of agreed phases: every rank failed already, alike.
    status = failure.exit_status();
    message = failure.what();
  } catch (const Error& error) {
    status = error.exit_status();
    message = error.what();
  } catch (const std::exception& error) {
    status = 1;
    message = "rank " + std::to_string(communicator.rank()) + ": " + error.what();
  } catch (...) {
    status = 1;
    message = "rank " + std::to_string(communicator.rank()) + ": unknown exception";
  }
  const std::uint64_t mine = static_cast<std::uint64_t>(status);
  std::vector<std::uint64_t> statuses(static_cast<std::size_t>(communicator.size()));
  Request gathered = communicator.allgather_async(&mine, statuses.data());
  if (status == 0) {
    gathered.wait();
  } else {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(failed_wait_seconds);
    while (!gathered.test()) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(
            stderr,
            "phalanx: error: %s (the other ranks did not reach the end of this set-up step within %g s: "
            "they wait in a collective this rank did not get to; ending the job)\n",
            message.c_str(), failed_wait_seconds);
        std::fflush(stderr);
        MpiSession::abort(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  int worst = 0, first_failing = -1;
  for (int rank = 0; rank < communicator.size(); ++rank) {
    const int rank_status = static_cast<int>(statuses[static_cast<std::size_t>(rank)]);
    if (rank_status != 0 && first_failing < 0) first_failing = rank;
    worst = std::max(worst, rank_status);
  }
  if (first_failing < 0) return;
  communicator.broadcast_string(message, first_failing);
  throw AgreedFailure(worst, message, first_failing);
}

}  // namespace phalanx::comm
