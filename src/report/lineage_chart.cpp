// SVG rendering of the lineage chart (see lineage_chart.hpp) on the shared frame.
#include "phalanx/report/lineage_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "chart_frame.hpp"
#include "phalanx/report/html_page.hpp"

namespace phalanx::report {

std::string lineage_chart(const Axes& axes, const std::vector<std::string>& lineage_names,
                          const std::vector<LineagePoint>& points) {
  using frame::coordinate;
  using frame::usable;
  std::ostringstream svg;
  frame::open_svg(svg, axes, "lineage");
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::size_t index = 0; index < lineage_names.size(); ++index)
    entries.emplace_back(lineage_names[index], palette_colour(index));
  frame::legend(svg, axes, entries);
  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min, y_min = x_min, y_max = -x_min;
  bool whole_x = true;
  auto drawable = [&](const LineagePoint& point) {
    return usable(point.x, axes.x_scale) && usable(point.y, axes.y_scale);
  };
  for (const auto& point : points) {
    if (!drawable(point)) continue;
    x_min = std::min(x_min, point.x);
    x_max = std::max(x_max, point.x);
    y_min = std::min(y_min, point.y);
    y_max = std::max(y_max, point.y);
    whole_x = whole_x && point.x == std::floor(point.x);
  }
  if (!(x_min <= x_max)) return frame::no_data(svg, axes);
  const frame::Frame chart{
      frame::make_axis(axes.x_scale, x_min, x_max, frame::left_margin, axes.width - frame::right_margin,
                       whole_x),
      frame::make_axis(axes.y_scale, y_min, y_max, axes.height - frame::bottom_margin, frame::top_margin)};
  frame::draw_axes(svg, axes, chart, true);
  auto lineage_of = [&](const LineagePoint& point) {
    return point.lineage < lineage_names.size() ? escape_html(lineage_names[point.lineage]) : std::string();
  };
  for (const auto& point : points) {
    if (point.parent < 0 || static_cast<std::size_t>(point.parent) >= points.size()) continue;
    const LineagePoint& parent = points[static_cast<std::size_t>(point.parent)];
    if (!drawable(point) || !drawable(parent)) continue;
    svg << "<line class=\"lineage-edge\" data-lineage=\"" << lineage_of(point) << "\" x1=\""
        << coordinate(chart.x.map(parent.x)) << "\" y1=\"" << coordinate(chart.y.map(parent.y)) << "\" x2=\""
        << coordinate(chart.x.map(point.x)) << "\" y2=\"" << coordinate(chart.y.map(point.y))
        << "\" stroke=\"" << palette_colour(point.lineage)
        << "\" stroke-width=\"1.6\" stroke-opacity=\"0.8\"/>\n";
  }
  for (const auto& point : points) {
    if (!drawable(point)) continue;
    svg << "<circle class=\"lineage-point\" data-lineage=\"" << lineage_of(point) << "\" cx=\""
        << coordinate(chart.x.map(point.x)) << "\" cy=\"" << coordinate(chart.y.map(point.y))
        << "\" r=\"3.5\" fill=\"" << palette_colour(point.lineage) << "\"><title>" << escape_html(point.title)
        << "</title></circle>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace phalanx::report
