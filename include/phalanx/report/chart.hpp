// SVG charts for self-contained HTML reports (run reports, sweep reports): line charts with
// several series, scatter plots, both mixed in one chart, and stacked bars, rendered to inline <svg> text
// with no scripts, fonts or network references, so a report opens anywhere, offline, years later.
//
// Every element carries a class (and data-* attributes naming its series) so that tests and
// users can find the plotted things in the page's DOM.
#pragma once

#include <string>
#include <vector>

namespace phalanx::report {

enum class Scale { Linear, Logarithmic };

struct Axes {
  std::string title;
  std::string x_label;
  std::string y_label;
  Scale x_scale = Scale::Linear;
  Scale y_scale = Scale::Linear;
  int width = 640;  // pixels of the whole chart
  int height = 300;
  bool y_from_zero = false;  // include 0 in the y range (throughput, shares)
};

// How xy_chart draws a series: a line through its points, or the points alone.
enum class Mark { Line, Points };

// One named series of (x, y) points; non-finite points (and, on a logarithmic axis,
// non-positive ones) are skipped.
struct Series {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
  Mark mark = Mark::Line;                   // xy_chart only; line_chart and scatter_chart set it themselves
  std::string colour{};                     // empty: the palette colour of the series' position
  bool in_legend = true;                    // false for many unnamed lines of one kind (a sweep's trials)
  std::vector<std::string> point_titles{};  // hover text of point i; "name: x, y" where missing
};

// One bar of a stacked bar chart: its label and one value per segment (same order as the
// segment names given to stacked_bar_chart).
struct StackedBar {
  std::string label;
  std::vector<double> values;
};

// Lines through each series' points, in x order as given; a legend names the series.
std::string line_chart(const Axes& axes, const std::vector<Series>& series);
// Points only (e.g. a sweep's trials: learning rate against accuracy).
std::string scatter_chart(const Axes& axes, const std::vector<Series>& series);
// Each series drawn by its own mark, in the order given (later ones on top).
std::string xy_chart(const Axes& axes, const std::vector<Series>& series);
// Vertical bars, each split into segments stacked from the bottom in `segment_names` order.
std::string stacked_bar_chart(const Axes& axes, const std::vector<std::string>& segment_names,
                              const std::vector<StackedBar>& bars);

// The colour of series/segment `index` (a fixed palette that stays readable when printed).
std::string palette_colour(std::size_t index);

}  // namespace phalanx::report
