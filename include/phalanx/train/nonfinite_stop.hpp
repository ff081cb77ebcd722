// NonFiniteStop: how a diverged run ends (train.nonfinite: stop), a type of its own because a
// sweep's worker group catches it: the ranks stopped together, so the group reports the trial as
// failed and takes the next one.
#pragma once

#include <string>

#include "phalanx/core/error.hpp"

namespace phalanx::train {

// Thrown by every rank together when train.nonfinite: stop ends a run (the ranks agreed on the
// step, or hold the same non-finite weights): a sweep worker group may then report the trial as
// failed and go on, since no rank is left inside a collective. Exit status 1.
class NonFiniteStop final : public Error {
 public:
  explicit NonFiniteStop(const std::string& message) : Error(ErrorKind::Internal, message) {}
};

}  // namespace phalanx::train
