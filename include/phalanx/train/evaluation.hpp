// Evaluation over a split: each rank takes a contiguous range, sums are all-reduced, so every
// sample counts exactly once and the metrics are exact (no padding, no dropped tail).
#pragma once

#include <cstdint>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::train {

struct EvaluationResult {
  double loss = 0;      // mean over samples
  double accuracy = 0;  // fraction correct
  std::int64_t samples = 0;
  double seconds = 0;
};

EvaluationResult evaluate(nn::Model& model, const data::Split& split, const std::vector<float>& mean,
                          const std::vector<float>& standard_deviation,
                          const comm::Communicator& communicator, int batch_size);

// Averages batch-norm running statistics over the ranks, so evaluation and checkpoints see
// one model (each rank has only seen its own shard of every batch).
void average_buffers(nn::Model& model, const comm::Communicator& communicator);

}  // namespace phalanx::train
