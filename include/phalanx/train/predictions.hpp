// Predictions of a trained model over a split, and their HDF5 file (written atomically):
// /predictions int32 [N], /probabilities float32 [N, classes], /labels int32 [N], classes attr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/data/dataset.hpp"
#include "phalanx/nn/model.hpp"

namespace phalanx::train {

struct Predictions {
  std::vector<std::int32_t> predicted_class;
  std::vector<float> probabilities;  // [N, classes]
  std::vector<std::int32_t> labels;
  int classes = 0;
};

Predictions predict_split(nn::Model& model, const data::Split& split, const std::vector<float>& mean,
                          const std::vector<float>& standard_deviation, int batch_size);

void write_predictions(const std::string& path, const Predictions& predictions,
                       const std::vector<std::string>& class_names);

}  // namespace phalanx::train
