// Evaluation over a split: each rank reads and evaluates only its contiguous range, sums are
// all-reduced, so every sample counts exactly once and the metrics are exact (no padding, no
// dropped tail), and no rank holds the whole split (a large validation split would otherwise cost
// every rank its full size in memory and every node that many reads of the file).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::train {

struct TopKAccuracy {
  int k = 0;
  double accuracy = 0;  // fraction of samples whose label is among the k best scored (top_k.hpp)
};

struct EvaluationResult {
  double loss = 0;      // mean over samples
  double accuracy = 0;  // fraction correct
  std::vector<TopKAccuracy> top_k;  // one per k asked for, in that order
  std::int64_t samples = 0;
  double seconds = 0;
};

// This rank's part of the split: the range ShardPlan::evaluation_range gives it (empty when the
// split has fewer samples than there are ranks).
data::Split read_evaluation_part(const std::string& path, const std::string& split_name,
                                 const comm::Communicator& communicator);
// The same from the dataset a training config names (data.path or data.source).
data::Split read_evaluation_part(const config::DataConfig& data, const std::string& split_name,
                                 const comm::Communicator& communicator);

// Evaluates every sample of `part` (this rank's, from read_evaluation_part) and all-reduces the
// sums over `communicator`, so every rank returns the metrics of the whole split. `top_k`: the k
// of the top-k accuracies to report besides top-1 (reported_top_k), ranked by the fp32 softmax
// probabilities the backend's predict gives, each k at most the model's classes.
// `before_reduction`, where given, runs between this rank's forward passes and the all-reduce (a
// trainer marks its watchdog's stage there: the passes are the rank's own work, the sums a wait).
EvaluationResult evaluate(nn::Model& model, const data::Split& part, const std::vector<float>& mean,
                          const std::vector<float>& standard_deviation,
                          const comm::Communicator& communicator, int batch_size,
                          const std::vector<int>& top_k = {},
                          const std::function<void()>& before_reduction = {});

// Averages batch-norm running statistics over the ranks, so evaluation and checkpoints see
// one model (each rank has only seen its own shard of every batch).
void average_buffers(nn::Model& model, const comm::Communicator& communicator);

}  // namespace phalanx::train
