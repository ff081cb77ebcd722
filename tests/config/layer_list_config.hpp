// Shared helpers of the config tests whose model is a layer list: the config around the list,
// and the input error a bad list must raise, naming the file.
#pragma once

#include <string>
#include <vector>

#include "config/expect_input_error.hpp"
#include "phalanx/config/config.hpp"

namespace phalanx::testing {

// The file name these configs are parsed under, which every error must name.
inline const std::string config_source = "configs/x.yaml";

// A config whose model is `layers`: YAML list items indented by four spaces.
inline config::Config parse_layers(const std::string& layers) {
  return config::parse("data: {path: d.h5}\nmodel:\n  layers:\n" + layers, config_source);
}

// Expects `layers` to be refused with an error naming the file and holding every fragment;
// returns the message so a test can check more.
inline std::string expect_layer_error(const std::string& layers, std::vector<std::string> fragments) {
  fragments.push_back(config_source + ": ");
  return expect_input_error([&] { parse_layers(layers); }, fragments);
}

}  // namespace phalanx::testing
