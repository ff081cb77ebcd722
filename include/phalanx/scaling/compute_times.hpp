// ComputeTimes: each layer's forward and backward seconds for one rank's local batch, the compute
// side of a step prediction. Measured per layer (a profile from `phalanx bench calibrate`), or, for
// a device nobody profiled here, one device's images per second shared among the layers by their
// multiply-adds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/scaling/layer_costs.hpp"

namespace phalanx::scaling {

// A rank's batch: 1 to 2^24 images; one device's throughput: 0.001 to 10^9 images/s. Beyond them
// a slip, not a device; within them a step's time is a finite number of seconds.
inline constexpr std::int64_t most_local_batch = std::int64_t{1} << 24;
inline constexpr double least_images_per_second = 1e-3;
inline constexpr double most_images_per_second = 1e9;

// How much longer than the profile's own rank the ranks of a job take per step, as factors on its
// times: a step waits for the slowest rank, and each rank waits out the difference.
struct RankSpread {
  double slowest = 1;  // the median over steps of the slowest rank's step
  double typical = 1;  // the mean over the ranks of each one's median step
};

struct ComputeTimes {
  std::vector<double> forward, backward;  // seconds, one per LayerCosts layer
  double optimizer = 0;                   // the update, after the all-reduce
  // Whole steps (forward + backward + update) of every rank the profile was taken on, as they ran
  // side by side; [0] is the rank whose layer times these are. Empty: every rank takes these times.
  std::vector<std::vector<double>> rank_steps;
  std::string source;  // how they were found, for the printout

  double forward_seconds() const;
  double backward_seconds() const;
  // For a job of the profile's rank count: the median over steps of each step's slowest rank (the
  // profile's ranks stepped together, k-th with k-th). For any other count, rank r stepping like
  // profile rank r mod (profile ranks), each step an independent draw from that rank's steps: the
  // slowest rank's median step is the smallest t with P(every rank <= t) = product of the ranks'
  // empirical distributions at t > 1/2 (the upper middle of an even count, as median() takes it).
  // Both factors are over profile rank 0's median step, and slowest >= typical; {1, 1} for one rank
  // or without rank_steps.
  RankSpread spread(std::int64_t ranks) const;
};

// One device trains `images_per_second` at `local_batch`: its step's compute takes
// local_batch / images_per_second, a third of it forward and two thirds backward (backward computes
// the gradients of the inputs and of the weights, each as many multiply-adds as the forward), each
// shared among the layers in proportion to their multiply-adds.
ComputeTimes compute_from_throughput(const LayerCosts& costs, double images_per_second, int local_batch);

// A profile's per-layer times, update and ranks' steps (docs/SCALING.md), measured at its batch
// size and scaled to `local_batch`. Every layer of `costs` must be in it, by name, and their times
// must add up to a nanosecond or more; throws InvalidInput naming the file and the field otherwise.
ComputeTimes compute_from_profile(const LayerCosts& costs, const std::string& path, int local_batch);

}  // namespace phalanx::scaling
