// A lineage chart: points over x (a population's training progress) that each descend from an
// earlier point, joined to it by a segment, and coloured by the lineage they belong to, so that a
// reader sees which lines of descent take over a population (population-based training: a trial
// that copied another's checkpoint continues that trial's line). Same inline SVG as chart.hpp.
#pragma once

#include <string>
#include <vector>

#include "phalanx/report/chart.hpp"

namespace phalanx::report {

struct LineagePoint {
  double x = 0, y = 0;
  int parent = -1;          // index of the point it descends from (-1: a root)
  std::size_t lineage = 0;  // index into the lineage names (its colour)
  std::string title{};      // hover text
};

// Segments (class "lineage-edge") from each point's parent to it, then the points (class
// "lineage-point"), each with data-lineage naming its lineage; the legend lists the lineages.
std::string lineage_chart(const Axes& axes, const std::vector<std::string>& lineage_names,
                          const std::vector<LineagePoint>& points);

}  // namespace phalanx::report
