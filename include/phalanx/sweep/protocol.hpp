// The messages between the coordinator (a thread on world rank 0) and the leaders of the worker
// groups, as JSON text over the sweep's own communicator. Two tags keep the directions apart,
// because rank 0's worker and the coordinator receive in the same process.
#pragma once

namespace phalanx::sweep {

constexpr int tag_to_coordinator = 1;  // hello, result, failed, interrupted, handed_over
constexpr int tag_to_worker = 2;       // job, stop, handover

}  // namespace phalanx::sweep
