// Shared chart drawing: axes with "nice" ticks (1, 2, 5 x 10^k, or decades on a logarithmic
// axis), the title and the legend. Pure string building, so a chart renders identically on
// every machine.
#include "chart_frame.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "phalanx/report/html_page.hpp"

namespace phalanx::report::frame {

std::string coordinate(double value) {
  // A value far off the chart (a metric of 1e308) maps to a coordinate far outside it: clamped,
  // it stays a number the SVG can hold (it is clipped the same), not "inf" or "-nan".
  if (std::isnan(value)) value = 0;
  value = std::clamp(value, -1e6, 1e6);
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

bool usable(double value, Scale scale) {
  return std::isfinite(value) && (scale == Scale::Linear || value > 0);
}

double Axis::transform(double value) const {
  return scale == Scale::Logarithmic ? std::log10(value) : value;
}

double Axis::map(double value) const {
  const double t = (transform(value) - low) / (high - low);
  return pixel_low + t * (pixel_high - pixel_low);
}

Axis make_axis(Scale scale, double minimum, double maximum, double pixel_low, double pixel_high,
               bool whole_steps) {
  Axis axis;
  axis.scale = scale;
  axis.pixel_low = pixel_low;
  axis.pixel_high = pixel_high;
  if (!(minimum <= maximum)) minimum = maximum = scale == Scale::Logarithmic ? 1 : 0;
  // Values a double cannot take the span of (1e308 and -1e308): an axis about zero instead.
  if (!std::isfinite(maximum - minimum)) minimum = maximum = scale == Scale::Logarithmic ? 1 : 0;
  if (scale == Scale::Logarithmic) {
    double low = std::floor(std::log10(minimum)), high = std::ceil(std::log10(maximum));
    if (high <= low) high = low + 1;
    axis.low = low;
    axis.high = high;
    const int decades = static_cast<int>(high - low);
    const int stride = std::max(1, decades / 6);
    for (int power = static_cast<int>(low); power <= static_cast<int>(high); power += stride)
      axis.ticks.push_back(std::pow(10.0, power));
    return axis;
  }
  if (maximum == minimum) {
    const double pad = minimum == 0 ? 1 : std::fabs(minimum) * 0.1;
    minimum -= pad;
    maximum += pad;
  }
  const double rough = (maximum - minimum) / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  const double fraction = rough / magnitude;
  double step = (fraction < 1.5 ? 1 : fraction < 3.5 ? 2 : fraction < 7.5 ? 5 : 10) * magnitude;
  if (whole_steps) step = std::max(step, 1.0);
  axis.low = std::floor(minimum / step) * step;
  axis.high = std::ceil(maximum / step) * step;
  // Counted, not stepped until past the end: where the step is below a double's spacing (values
  // of 1e17 that differ by 32) adding it changes nothing, and that loop never ended.
  const double count = std::round((axis.high - axis.low) / step);
  if (!(count >= 1 && count <= 1000) || axis.low + step == axis.low) {
    axis.ticks = {axis.low, axis.high};
    if (!(axis.high > axis.low)) axis.high = axis.low + 1;
    return axis;
  }
  for (int index = 0; index <= static_cast<int>(count); ++index) {
    const double tick = axis.low + index * step;
    axis.ticks.push_back(std::fabs(tick) < step * 1e-9 ? 0.0 : tick);
  }
  return axis;
}

void open_svg(std::ostringstream& svg, const Axes& axes, const char* kind) {
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"phalanx-chart\" data-kind=\"" << kind
      << "\" width=\"" << axes.width << "\" height=\"" << axes.height << "\" viewBox=\"0 0 " << axes.width
      << ' ' << axes.height << "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" aria-label=\""
      << escape_html(axes.title) << "\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  svg << "<text class=\"chart-title\" x=\"" << coordinate(axes.width / 2.0)
      << "\" y=\"16\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">"
      << escape_html(axes.title) << "</text>\n";
}

void legend(std::ostringstream& svg, const Axes& axes,
            const std::vector<std::pair<std::string, std::string>>& entries) {
  double x = left_margin, y = 32;
  for (const auto& [name, colour] : entries) {
    const double width = 18 + character_width * static_cast<double>(name.size()) + 14;
    if (x + width > axes.width - right_margin && x > left_margin) {
      x = left_margin;
      y += 14;
    }
    svg << "<g class=\"legend\" data-series=\"" << escape_html(name) << "\"><rect x=\"" << coordinate(x)
        << "\" y=\"" << coordinate(y - 8) << "\" width=\"12\" height=\"8\" fill=\"" << colour
        << "\"/><text x=\"" << coordinate(x + 16) << "\" y=\"" << coordinate(y) << "\">" << escape_html(name)
        << "</text></g>\n";
    x += width;
  }
}

void legend(std::ostringstream& svg, const Axes& axes, const std::vector<std::string>& segment_names) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::size_t index = 0; index < segment_names.size(); ++index)
    entries.emplace_back(segment_names[index], palette_colour(index));
  legend(svg, axes, entries);
}

void draw_axes(std::ostringstream& svg, const Axes& axes, const Frame& frame, bool x_ticks) {
  const double plot_left = frame.x.pixel_low, plot_right = frame.x.pixel_high;
  const double plot_top = frame.y.pixel_high, plot_bottom = frame.y.pixel_low;
  svg << "<g class=\"axes\" stroke=\"#999999\" stroke-width=\"1\">\n";
  for (const double tick : frame.y.ticks) {
    const double y = frame.y.map(tick);
    svg << "<line x1=\"" << coordinate(plot_left) << "\" x2=\"" << coordinate(plot_right) << "\" y1=\""
        << coordinate(y) << "\" y2=\"" << coordinate(y) << "\" stroke=\"#e6e6e6\"/>\n";
  }
  svg << "<line x1=\"" << coordinate(plot_left) << "\" x2=\"" << coordinate(plot_left) << "\" y1=\""
      << coordinate(plot_top) << "\" y2=\"" << coordinate(plot_bottom) << "\"/>\n";
  svg << "<line x1=\"" << coordinate(plot_left) << "\" x2=\"" << coordinate(plot_right) << "\" y1=\""
      << coordinate(plot_bottom) << "\" y2=\"" << coordinate(plot_bottom) << "\"/>\n</g>\n";
  svg << "<g class=\"tick-labels\" fill=\"#333333\">\n";
  for (const double tick : frame.y.ticks)
    svg << "<text x=\"" << coordinate(plot_left - 4) << "\" y=\"" << coordinate(frame.y.map(tick) + 4)
        << "\" text-anchor=\"end\">" << format_number(tick) << "</text>\n";
  if (x_ticks)
    for (const double tick : frame.x.ticks)
      svg << "<text x=\"" << coordinate(frame.x.map(tick)) << "\" y=\"" << coordinate(plot_bottom + 14)
          << "\" text-anchor=\"middle\">" << format_number(tick) << "</text>\n";
  svg << "</g>\n";
  svg << "<text class=\"x-label\" x=\"" << coordinate((plot_left + plot_right) / 2) << "\" y=\""
      << coordinate(axes.height - 8.0) << "\" text-anchor=\"middle\">" << escape_html(axes.x_label)
      << "</text>\n";
  svg << "<text class=\"y-label\" transform=\"translate(14 " << coordinate((plot_top + plot_bottom) / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape_html(axes.y_label) << "</text>\n";
}

std::string no_data(std::ostringstream& svg, const Axes& axes) {
  svg << "<text class=\"no-data\" x=\"" << coordinate(axes.width / 2.0) << "\" y=\""
      << coordinate(axes.height / 2.0)
      << "\" text-anchor=\"middle\" fill=\"#777777\">no data</text>\n</svg>\n";
  return svg.str();
}

}  // namespace phalanx::report::frame
