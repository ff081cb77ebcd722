// BatchMixing: mixup and CutMix of each training batch (train.mixup), as timm's Mixup in its
// 'batch' mode: one draw per step (mixed or not, which method, the weight, CutMix's box), a pure
// function of the run's seed and the global step, so every rank draws the same and a resume
// continues exactly. Each rank mixes its own local batch on its own device, right after the input
// is normalised (partner of sample i: sample local batch - 1 - i), and hands the loss its LabelMix.
#pragma once

#include <cstdint>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/core/tensor.hpp"

namespace phalanx::train {

// One step's draw. own_weight is timm's lam: the share of the sample's own label in its target
// (for CutMix, corrected to the share of the image outside the box as clipped to the image).
struct MixDraw {
  bool mixed = false;
  backend::MixKind kind = backend::MixKind::Mixup;
  double own_weight = 1.0;
  int box_top = 0, box_bottom = 0, box_left = 0, box_right = 0;  // CutMix
};

// timm's cutmix_bbox_and_lam (correct_lam): the box of int(side * sqrt(1 - lam)) around the centre,
// clipped to the image, and own_weight corrected to what the clipped box leaves of the image.
MixDraw cutmix_box(double lam, int centre_y, int centre_x, int height, int width);

// timm's Mixup._params_per_batch and cutmix_bbox_and_lam (correct_lam, no margin, no min/max
// ratio) for images of height x width, drawn through Philox from (seed, step).
MixDraw draw_mix(const config::MixupConfig& mixup, std::uint64_t seed, std::int64_t step, int height,
                 int width);

// What the backend's mix_batch takes for `draw` on a batch of `shape` ([batch, H, W, C]).
backend::MixGeometry mix_geometry(const MixDraw& draw, const Shape& shape);

// A draw from Beta(alpha, alpha) (two Gamma draws, Marsaglia and Tsang), from `random`.
double beta_symmetric(double alpha, RandomStream& random);

class BatchMixing {
 public:
  // Batches of up to `capacity` samples; does nothing when `mixup` is not enabled.
  BatchMixing(backend::Backend& backend, const config::MixupConfig& mixup, std::uint64_t seed, int capacity);

  // Mixes `input` ([batch, H, W, C], normalised, device memory) in place with the draw of `step`,
  // and returns the targets the loss trains on: none (plain labels) when the step is not mixed.
  backend::LabelMix apply(Tensor& input, const std::int32_t* labels, std::int64_t step);

 private:
  backend::Backend& backend_;
  config::MixupConfig mixup_;
  std::uint64_t seed_;
  Tensor partner_labels_;  // int32 [capacity], device memory
};

}  // namespace phalanx::train
