// The batch split of a training job (DESIGN §3, docs/CONFIG.md distributed.batch_split), decided
// collectively before the Trainer is built (private to src/cli).
#pragma once

#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/train/batch_split.hpp"
#include "phalanx/train/checkpoint.hpp"

namespace phalanx::cli {

// Fills `split` the same on every rank: a resumed run (`resume`: its checkpoint's header, null for
// a fresh run) takes its checkpoint's split; a fresh one distributed.local_batches, or with
// batch_split: throughput the rates every rank measures with probe steps on its own device. Leaves
// `split` empty for an equal split that nothing asked for. Returns 0, or the exit status every
// rank agreed on after a bad input on any rank.
int resolve_batch_split(const config::Config& config, const train::CheckpointHeader* resume,
                        backend::Backend& backend, const comm::Communicator& world, train::BatchSplit& split);

// True when the config asks for a split other than the plain equal one: what a job of GPU and CPU
// ranks needs (its ranks differ in speed by an order of magnitude).
bool asks_for_split(const config::Config& config);

}  // namespace phalanx::cli
