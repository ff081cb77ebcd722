// What the MPI tests of data parallelism train: a small CNN for a few SGD steps, driven straight
// through the backend, ShardPlan and GradSync (no Trainer, no files), on random 8x8 images, so
// that runs over N ranks and over one rank can be compared weight by weight in one process.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/data/dataset.hpp"

namespace phalanx::testing {

// `count` random 8x8x1 images with labels in [0, 10), drawn from `generator_seed`.
data::Split random_split(const std::string& name, std::int64_t count, std::uint32_t generator_seed);

// conv(4, 3x3, padding 1) - relu - max_pool(2) - flatten - linear(10). No batch norm: its batch
// statistics would differ between local batches of other sizes.
config::ModelConfig small_cnn();

// How a rank weights its gradient: by its share of the global batch (each sample's gradient over
// G: what the trainer does) or as the mean of local means (right only for equal local batches).
enum class Weighting { ShareOfGlobalBatch, MeanOfLocalMeans };
// The all-reduce in place, or staged through host copies (how a GPU rank joins CPU ranks over MPI).
enum class Staging { InPlace, ThroughHostCopies };

struct SmallTraining {
  std::uint64_t seed = 42;
  int steps = 6;
  Weighting weighting = Weighting::ShareOfGlobalBatch;
  Staging staging = Staging::InPlace;
  // train.clip_grad_norm: the summed gradients clipped to this norm before each update.
  std::optional<double> clip_grad_norm = std::nullopt;
  std::vector<double>* gradient_norms = nullptr;  // when given: each step's norm before clipping
};

// `training.steps` SGD steps (momentum, weight decay) over `communicator`, rank r training
// local_batches[r] samples of each global batch, gradients summed by GradSync in small buckets
// (several all-reduces per step); returns the weights.
std::vector<float> train_small_cnn(const comm::Communicator& communicator, const data::Split& split,
                                   const std::vector<int>& local_batches, const SmallTraining& training);

// The weights small_cnn starts from with `seed`.
std::vector<float> initial_small_cnn_weights(std::uint64_t seed);

// Largest |a - b| / max(0.01, |b|) over two equally long arrays.
double worst_relative_difference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace phalanx::testing
