// The parts every report chart shares: the <svg> element with its title, the legend, scaled
// axes with "nice" ticks and their drawing. Internal to the report module; each chart kind
// (chart.cpp, parallel_coordinates_chart.cpp, interval_chart.cpp) builds its marks on these.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "phalanx/report/chart.hpp"

namespace phalanx::report::frame {

constexpr double left_margin = 64, right_margin = 16, top_margin = 52, bottom_margin = 44;
constexpr double character_width = 6.5;  // rough width of one 11px sans-serif character

// A pixel coordinate with two decimals: enough for any screen, short in the page.
std::string coordinate(double value);

// Finite, and positive on a logarithmic scale.
bool usable(double value, Scale scale);

// One axis: data range -> pixel range, plus its tick values.
struct Axis {
  Scale scale = Scale::Linear;
  double low = 0, high = 1;  // data range (log10 of it on a logarithmic axis)
  double pixel_low = 0, pixel_high = 1;
  std::vector<double> ticks;  // data values

  double transform(double value) const;
  double map(double value) const;
};

// Ticks at 1, 2, 5 x 10^k (decades on a logarithmic axis) covering [minimum, maximum].
// `whole_steps`: the data are whole numbers (ranks, epochs, rungs), so ticks never fall between.
Axis make_axis(Scale scale, double minimum, double maximum, double pixel_low, double pixel_high,
               bool whole_steps = false);

struct Frame {
  Axis x, y;
};

void open_svg(std::ostringstream& svg, const Axes& axes, const char* kind);

// Legend entries (name, colour) in rows under the title; wraps when they do not fit.
void legend(std::ostringstream& svg, const Axes& axes,
            const std::vector<std::pair<std::string, std::string>>& entries);
// Legend of segments coloured in palette order (stacked bars, intervals).
void legend(std::ostringstream& svg, const Axes& axes, const std::vector<std::string>& segment_names);

// Grid lines at the y ticks, the two axis lines, tick labels (x ones when `x_ticks`) and the
// axis titles, all within the frame's pixel ranges.
void draw_axes(std::ostringstream& svg, const Axes& axes, const Frame& frame, bool x_ticks);

// Closes a chart that has nothing to plot with a "no data" note; returns the whole SVG.
std::string no_data(std::ostringstream& svg, const Axes& axes);

}  // namespace phalanx::report::frame
