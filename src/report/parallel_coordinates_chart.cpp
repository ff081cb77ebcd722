// Parallel coordinates on the shared frame: each dimension gets an axis from make_axis (nice
// ticks, decades when logarithmic) or evenly spaced category slots; profiles are drawn first so
// the axes and their labels stay readable on top.
#include "phalanx/report/parallel_coordinates_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "chart_frame.hpp"
#include "phalanx/report/html_page.hpp"

namespace phalanx::report {
namespace {

using frame::coordinate;

// Room beside the outer axes for their names, which are centred on them.
constexpr double side_padding = 80;

frame::Axis axis_for(const Dimension& dimension, std::size_t index, const std::vector<Profile>& profiles,
                     double bottom, double top) {
  if (!dimension.categories.empty()) {
    frame::Axis axis;
    axis.low = -0.5;
    axis.high = static_cast<double>(dimension.categories.size()) - 0.5;
    axis.pixel_low = bottom;
    axis.pixel_high = top;
    for (std::size_t slot = 0; slot < dimension.categories.size(); ++slot)
      axis.ticks.push_back(static_cast<double>(slot));
    return axis;
  }
  double minimum = std::numeric_limits<double>::infinity(), maximum = -minimum;
  for (const auto& profile : profiles)
    if (index < profile.values.size() && frame::usable(profile.values[index], dimension.scale)) {
      minimum = std::min(minimum, profile.values[index]);
      maximum = std::max(maximum, profile.values[index]);
    }
  return frame::make_axis(dimension.scale, minimum, maximum, bottom, top);
}

bool on_axis(const Dimension& dimension, const std::vector<double>& values, std::size_t index) {
  if (index >= values.size()) return false;
  if (dimension.categories.empty()) return frame::usable(values[index], dimension.scale);
  return values[index] >= 0 && values[index] < static_cast<double>(dimension.categories.size());
}

// Weak lines light orange and thin, strong ones dark blue and bold.
std::string stroke_of(double strength) {
  char colour[32];
  std::snprintf(colour, sizeof(colour), "rgb(%d,%d,%d)", static_cast<int>(220 - 180 * strength),
                static_cast<int>(120 - 60 * strength), static_cast<int>(60 + 120 * strength));
  return colour;
}

}  // namespace

std::string parallel_coordinates_chart(const Axes& axes, const std::vector<Dimension>& dimensions,
                                       const std::vector<Profile>& profiles) {
  std::ostringstream svg;
  frame::open_svg(svg, axes, "parallel-coordinates");
  if (dimensions.empty() || profiles.empty()) return frame::no_data(svg, axes);
  const double top = frame::top_margin - 16, bottom = axes.height - frame::bottom_margin;
  auto axis_x = [&](std::size_t index) {
    if (dimensions.size() == 1) return axes.width / 2.0;
    return side_padding + (axes.width - 2 * side_padding) * static_cast<double>(index) /
                              static_cast<double>(dimensions.size() - 1);
  };
  std::vector<frame::Axis> scales;
  for (std::size_t index = 0; index < dimensions.size(); ++index)
    scales.push_back(axis_for(dimensions[index], index, profiles, bottom, top));

  for (const auto& profile : profiles) {
    const double strength = std::isfinite(profile.strength) ? std::clamp(profile.strength, 0.0, 1.0) : 0.0;
    std::ostringstream points;
    std::size_t count = 0;
    for (std::size_t index = 0; index < dimensions.size(); ++index) {
      if (!on_axis(dimensions[index], profile.values, index)) continue;
      points << (count++ ? " " : "") << coordinate(axis_x(index)) << ','
             << coordinate(scales[index].map(profile.values[index]));
    }
    svg << "<polyline class=\"profile\" data-label=\"" << escape_html(profile.label) << "\" data-points=\""
        << count << "\" points=\"" << points.str() << "\" fill=\"none\" stroke=\"" << stroke_of(strength)
        << "\" stroke-opacity=\"0.75\" stroke-width=\"" << coordinate(1 + 1.5 * strength) << "\"><title>"
        << escape_html(profile.label) << "</title></polyline>\n";
  }

  for (std::size_t index = 0; index < dimensions.size(); ++index) {
    const auto& dimension = dimensions[index];
    const auto& scale = scales[index];
    const double x = axis_x(index);
    svg << "<g class=\"dimension\" data-dimension=\"" << escape_html(dimension.name) << "\">";
    svg << "<line x1=\"" << coordinate(x) << "\" x2=\"" << coordinate(x) << "\" y1=\"" << coordinate(top)
        << "\" y2=\"" << coordinate(bottom) << "\" stroke=\"#333333\"/>";
    for (std::size_t tick = 0; tick < scale.ticks.size(); ++tick) {
      const std::string text = dimension.categories.empty() ? format_number(scale.ticks[tick])
                                                            : escape_html(dimension.categories[tick]);
      svg << "<text x=\"" << coordinate(x + 4) << "\" y=\"" << coordinate(scale.map(scale.ticks[tick]) + 4)
          << "\" fill=\"#333333\">" << text << "</text>";
    }
    svg << "<text class=\"dimension-name\" x=\"" << coordinate(x) << "\" y=\"" << coordinate(bottom + 18)
        << "\" text-anchor=\"middle\" font-weight=\"bold\">" << escape_html(dimension.name)
        << "</text></g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace phalanx::report
