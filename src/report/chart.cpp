// SVG rendering of the (x, y) and stacked bar charts on the shared frame (chart_frame.hpp):
// axes, legend, then the marks. Pure string building: no state, no I/O.
#include "phalanx/report/chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "chart_frame.hpp"
#include "phalanx/report/html_page.hpp"

namespace phalanx::report {
namespace {

using frame::coordinate;
using frame::Frame;
using frame::usable;

Frame frame_for(const Axes& axes, const std::vector<Series>& series) {
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min;
  double y_min = x_min, y_max = -x_min;
  bool whole_x = true;
  for (const auto& one : series)
    for (std::size_t index = 0; index < std::min(one.x.size(), one.y.size()); ++index) {
      if (!usable(one.x[index], axes.x_scale) || !usable(one.y[index], axes.y_scale)) continue;
      x_min = std::min(x_min, one.x[index]);
      whole_x = whole_x && one.x[index] == std::floor(one.x[index]);
      x_max = std::max(x_max, one.x[index]);
      y_min = std::min(y_min, one.y[index]);
      y_max = std::max(y_max, one.y[index]);
    }
  if (axes.y_from_zero && axes.y_scale == Scale::Linear && y_min <= y_max) {
    y_min = std::min(y_min, 0.0);
    y_max = std::max(y_max, 0.0);
  }
  return {
      frame::make_axis(axes.x_scale, x_min, x_max, frame::left_margin, axes.width - frame::right_margin,
                       whole_x),
      frame::make_axis(axes.y_scale, y_min, y_max, axes.height - frame::bottom_margin, frame::top_margin)};
}

bool has_points(const Axes& axes, const std::vector<Series>& series) {
  for (const auto& one : series)
    for (std::size_t index = 0; index < std::min(one.x.size(), one.y.size()); ++index)
      if (usable(one.x[index], axes.x_scale) && usable(one.y[index], axes.y_scale)) return true;
  return false;
}

std::string colour_of(const Series& series, std::size_t index) {
  return series.colour.empty() ? palette_colour(index) : series.colour;
}

std::string point_title(const Series& series, std::size_t point) {
  if (point < series.point_titles.size()) return escape_html(series.point_titles[point]);
  return escape_html(series.name) + ": " + format_number(series.x[point]) + ", " +
         format_number(series.y[point]);
}

std::string render(const Axes& axes, const std::vector<Series>& series, const char* kind) {
  std::ostringstream svg;
  frame::open_svg(svg, axes, kind);
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::size_t index = 0; index < series.size(); ++index)
    if (series[index].in_legend) entries.emplace_back(series[index].name, colour_of(series[index], index));
  frame::legend(svg, axes, entries);
  if (!has_points(axes, series)) return frame::no_data(svg, axes);
  const Frame frame = frame_for(axes, series);
  frame::draw_axes(svg, axes, frame, true);
  for (std::size_t index = 0; index < series.size(); ++index) {
    const auto& one = series[index];
    const bool lines = one.mark == Mark::Line;
    const std::string colour = colour_of(one, index);
    std::ostringstream points;
    std::size_t count = 0;
    for (std::size_t point = 0; point < std::min(one.x.size(), one.y.size()); ++point) {
      if (!usable(one.x[point], axes.x_scale) || !usable(one.y[point], axes.y_scale)) continue;
      const double x = frame.x.map(one.x[point]), y = frame.y.map(one.y[point]);
      if (lines)
        points << (count ? " " : "") << coordinate(x) << ',' << coordinate(y);
      else
        points << "<circle class=\"point\" cx=\"" << coordinate(x) << "\" cy=\"" << coordinate(y)
               << "\" r=\"3.5\" fill=\"" << colour << "\" fill-opacity=\"0.8\"><title>"
               << point_title(one, point) << "</title></circle>";
      ++count;
    }
    if (lines) {
      svg << "<polyline class=\"series\" data-series=\"" << escape_html(one.name) << "\" data-points=\""
          << count << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.8\" points=\""
          << points.str() << "\"/>\n";
      if (count == 1)  // a single point draws no line: mark it
        svg << "<circle class=\"point\" cx=\"" << points.str().substr(0, points.str().find(',')) << "\" cy=\""
            << points.str().substr(points.str().find(',') + 1) << "\" r=\"3\" fill=\"" << colour << "\"/>\n";
    } else {
      svg << "<g class=\"series\" data-series=\"" << escape_html(one.name) << "\" data-points=\"" << count
          << "\">" << points.str() << "</g>\n";
    }
  }
  svg << "</svg>\n";
  return svg.str();
}

std::vector<Series> marked(std::vector<Series> series, Mark mark) {
  for (auto& one : series) one.mark = mark;
  return series;
}

}  // namespace

std::string palette_colour(std::size_t index) {
  static const char* const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colours[index % (sizeof(colours) / sizeof(colours[0]))];
}

std::string line_chart(const Axes& axes, const std::vector<Series>& series) {
  return render(axes, marked(series, Mark::Line), "line");
}

std::string scatter_chart(const Axes& axes, const std::vector<Series>& series) {
  return render(axes, marked(series, Mark::Points), "scatter");
}

std::string xy_chart(const Axes& axes, const std::vector<Series>& series) {
  return render(axes, series, "xy");
}

std::string stacked_bar_chart(const Axes& axes, const std::vector<std::string>& segment_names,
                              const std::vector<StackedBar>& bars) {
  std::ostringstream svg;
  frame::open_svg(svg, axes, "stacked-bars");
  frame::legend(svg, axes, segment_names);
  double highest = 0;
  for (const auto& bar : bars) {
    double total = 0;
    for (const double value : bar.values)
      if (std::isfinite(value) && value > 0) total += value;
    highest = std::max(highest, total);
  }
  if (bars.empty()) return frame::no_data(svg, axes);
  Frame frame{frame::make_axis(Scale::Linear, 0, static_cast<double>(bars.size()), frame::left_margin,
                               axes.width - frame::right_margin),
              frame::make_axis(Scale::Linear, 0, highest > 0 ? highest : 1,
                               axes.height - frame::bottom_margin, frame::top_margin)};
  frame.x.low = 0;
  frame.x.high = static_cast<double>(bars.size());
  frame::draw_axes(svg, axes, frame, false);
  const double slot =
      (axes.width - frame::left_margin - frame::right_margin) / static_cast<double>(bars.size());
  const double bar_width = std::min(slot * 0.7, 80.0);
  for (std::size_t index = 0; index < bars.size(); ++index) {
    const auto& bar = bars[index];
    const double centre = frame::left_margin + slot * (static_cast<double>(index) + 0.5);
    svg << "<g class=\"bar\" data-bar=\"" << escape_html(bar.label) << "\">";
    double base = 0;
    for (std::size_t segment = 0; segment < std::min(bar.values.size(), segment_names.size()); ++segment) {
      const double value = bar.values[segment];
      if (!std::isfinite(value) || value <= 0) continue;
      const double top = frame.y.map(base + value), bottom = frame.y.map(base);
      svg << "<rect class=\"segment\" data-segment=\"" << escape_html(segment_names[segment]) << "\" x=\""
          << coordinate(centre - bar_width / 2) << "\" y=\"" << coordinate(top) << "\" width=\""
          << coordinate(bar_width) << "\" height=\"" << coordinate(std::max(bottom - top, 0.0))
          << "\" fill=\"" << palette_colour(segment) << "\"><title>" << escape_html(bar.label) << ", "
          << escape_html(segment_names[segment]) << ": " << format_number(value) << "</title></rect>";
      base += value;
    }
    svg << "<text x=\"" << coordinate(centre) << "\" y=\""
        << coordinate(axes.height - frame::bottom_margin + 14) << "\" text-anchor=\"middle\">"
        << escape_html(bar.label) << "</text></g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace phalanx::report
