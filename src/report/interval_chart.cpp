// The interval (timeline) chart on the shared frame: a linear time axis with nice ticks, one
// band per row with its label in a left margin sized to the longest label, one rect per interval.
#include "phalanx/report/interval_chart.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "chart_frame.hpp"
#include "phalanx/report/html_page.hpp"

namespace phalanx::report {
namespace {

using frame::coordinate;

bool drawable(const Interval& interval) {
  return std::isfinite(interval.start) && std::isfinite(interval.stop) && interval.stop >= interval.start;
}

}  // namespace

std::string interval_chart(const Axes& axes, const std::vector<std::string>& segment_names,
                           const std::vector<IntervalRow>& rows) {
  std::ostringstream svg;
  frame::open_svg(svg, axes, "intervals");
  frame::legend(svg, axes, segment_names);
  double latest = 0;
  bool any = false;
  std::size_t longest_label = 0;
  for (const auto& row : rows) {
    longest_label = std::max(longest_label, row.label.size());
    for (const auto& interval : row.intervals)
      if (drawable(interval)) {
        latest = std::max(latest, interval.stop);
        any = true;
      }
  }
  if (rows.empty() || !any) return frame::no_data(svg, axes);
  const double left =
      std::max(frame::left_margin, 12 + frame::character_width * static_cast<double>(longest_label));
  frame::Frame frame{frame::make_axis(Scale::Linear, 0, latest, left, axes.width - frame::right_margin), {}};
  frame.y.pixel_low = axes.height - frame::bottom_margin;
  frame.y.pixel_high = frame::top_margin;
  frame::draw_axes(svg, axes, frame, true);
  const double band = (frame.y.pixel_low - frame.y.pixel_high) / static_cast<double>(rows.size());
  const double bar_height = std::max(band - 6, 1.0);
  for (std::size_t row_index = 0; row_index < rows.size(); ++row_index) {
    const auto& row = rows[row_index];
    const double top = frame.y.pixel_high + band * static_cast<double>(row_index) + (band - bar_height) / 2;
    svg << "<g class=\"row\" data-row=\"" << escape_html(row.label) << "\"><text x=\"" << coordinate(left - 6)
        << "\" y=\"" << coordinate(top + bar_height / 2 + 4) << "\" text-anchor=\"end\">"
        << escape_html(row.label) << "</text>";
    for (const auto& interval : row.intervals) {
      if (!drawable(interval)) continue;
      const std::string segment =
          interval.segment < segment_names.size() ? segment_names[interval.segment] : std::string();
      const double x0 = frame.x.map(interval.start), x1 = frame.x.map(interval.stop);
      // Half a pixel at least, so that a very short job is still visible.
      svg << "<rect class=\"interval\" data-segment=\"" << escape_html(segment) << "\" x=\"" << coordinate(x0)
          << "\" y=\"" << coordinate(top) << "\" width=\"" << coordinate(std::max(x1 - x0, 0.5))
          << "\" height=\"" << coordinate(bar_height) << "\" fill=\"" << palette_colour(interval.segment)
          << "\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>"
          << (interval.title.empty() ? escape_html(segment) + ": " + format_number(interval.start) + "-" +
                                           format_number(interval.stop)
                                     : escape_html(interval.title))
          << "</title></rect>";
    }
    svg << "</g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace phalanx::report
