// StepRing: per-step state kept for a few steps after the step itself, in a fixed ring of slots
// (CUDA events of a step's all-reduce, read one step later). A new step takes the slot of the
// step `Count` steps back, so the caller finishes with that step (waits for it, reads it) first.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "phalanx/core/error.hpp"

namespace phalanx::comm {

template <typename Slot, std::size_t Count>
class StepRing {
  static_assert(Count >= 2, "a ring keeps at least the current step and the one before");

 public:
  // Starts a step and returns its slot: the slot of the step `Count` steps back, if there was one
  // (reuses_older_step() says so beforehand).
  Slot& begin_step() {
    current_ = (current_ + 1) % Count;
    ++steps_begun_;
    return slots_[current_];
  }
  // Whether the next begin_step() reuses the slot of a step begun `Count` steps before it.
  bool reuses_older_step() const { return steps_begun_ >= static_cast<std::int64_t>(Count); }
  std::int64_t steps_begun() const { return steps_begun_; }

  // The slot of the step begun `steps_back` steps before the current one (0: the current one).
  // Only steps still in the ring can be asked for: steps_back < Count, and that step was begun.
  Slot& step(std::size_t steps_back) {
    PHALANX_CHECK(steps_back < Count && static_cast<std::int64_t>(steps_back) < steps_begun_, "step ",
                  steps_back, " steps back is not in a ring of ", Count, " after ", steps_begun_, " steps");
    return slots_[(current_ + Count - steps_back) % Count];
  }
  bool has_step(std::size_t steps_back) const {
    return steps_back < Count && static_cast<std::int64_t>(steps_back) < steps_begun_;
  }

  // Every slot, for setting them up or visiting them all.
  std::array<Slot, Count>& slots() { return slots_; }

 private:
  std::array<Slot, Count> slots_{};
  std::size_t current_ = Count - 1;  // the first begin_step() takes slot 0
  std::int64_t steps_begun_ = 0;
};

}  // namespace phalanx::comm
