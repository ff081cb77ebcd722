// A horizontal interval (timeline) chart: one row per resource (a worker, a rank), one bar per
// interval it was busy, coloured by kind; the gaps are idle time. x is time from 0.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "phalanx/report/chart.hpp"

namespace phalanx::report {

struct Interval {
  double start = 0;
  double stop = 0;
  std::size_t segment = 0;  // index into the chart's segment names: the colour and the legend
  std::string title{};      // hover text; "segment: start-stop" when empty
};

struct IntervalRow {
  std::string label;
  std::vector<Interval> intervals;
};

// Rows top to bottom in the order given; x runs from 0 to the latest stop. Intervals with a
// non-finite end or stop < start are skipped.
std::string interval_chart(const Axes& axes, const std::vector<std::string>& segment_names,
                           const std::vector<IntervalRow>& rows);

}  // namespace phalanx::report
