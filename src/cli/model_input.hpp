// The image shape and class count a config's model is built for, outside training: read from the
// config's dataset file, or given on the command line where that file is not at hand (scaling
// predictions and calibration on another machine than the data's).
#pragma once

#include <string>

#include "phalanx/config/config.hpp"
#include "phalanx/core/shape.hpp"

namespace phalanx::cli {

struct ModelInput {
  Shape sample;  // one image [H, W, C]
  int classes = 0;
};

// `sample_shape` "HxWxC" (empty: the dataset's train split) and `classes` (0: the dataset's).
ModelInput model_input(const config::Config& config, const std::string& config_path,
                       const std::string& sample_shape, int classes);

}  // namespace phalanx::cli
