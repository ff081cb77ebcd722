// Parallel coordinates: one vertical axis per dimension (a hyperparameter, a metric), one line
// per item (a trial) through its value on every axis. Shows at a glance which values go with
// good results, for any number of dimensions, in the same inline SVG as the other charts.
#pragma once

#include <string>
#include <vector>

#include "phalanx/report/chart.hpp"

namespace phalanx::report {

struct Dimension {
  std::string name;
  Scale scale = Scale::Linear;
  // Non-empty: the dimension is categorical and a profile's value is an index into this list,
  // drawn evenly spaced from the bottom.
  std::vector<std::string> categories{};
};

// One line: a value per dimension (NaN, or a non-positive value on a logarithmic axis, leaves
// that axis out) and a strength in [0, 1]; stronger lines (better trials) are darker and bolder.
struct Profile {
  std::string label;
  std::vector<double> values;
  double strength = 1;
};

// Uses the title, width and height of `axes`; each dimension has its own scale and ticks.
std::string parallel_coordinates_chart(const Axes& axes, const std::vector<Dimension>& dimensions,
                                       const std::vector<Profile>& profiles);

}  // namespace phalanx::report
