// SVG rendering of the report charts: axes with "nice" ticks (1, 2, 5 x 10^k, or decades on a
// logarithmic axis), a legend row under the title, and the marks. Pure string building: no
// state, no I/O, so the same chart renders identically on every machine.
#include "phalanx/report/chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "phalanx/report/html_page.hpp"

namespace phalanx::report {
namespace {

constexpr double left_margin = 64, right_margin = 16, top_margin = 52, bottom_margin = 44;
constexpr double character_width = 6.5;  // rough width of one 11px sans-serif character

std::string number(double value) {
  char text[32];
  if (value != 0 && (std::fabs(value) >= 1e6 || std::fabs(value) < 1e-3))
    std::snprintf(text, sizeof(text), "%.3g", value);
  else
    std::snprintf(text, sizeof(text), "%.4g", value);
  return text;
}

std::string coordinate(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

bool usable(double value, Scale scale) {
  return std::isfinite(value) && (scale == Scale::Linear || value > 0);
}

// One axis: data range -> pixel range, plus its tick values.
struct Axis {
  Scale scale = Scale::Linear;
  double low = 0, high = 1;  // data range (log10 of it on a logarithmic axis)
  double pixel_low = 0, pixel_high = 1;
  std::vector<double> ticks;  // data values

  double transform(double value) const { return scale == Scale::Logarithmic ? std::log10(value) : value; }
  double map(double value) const {
    const double t = (transform(value) - low) / (high - low);
    return pixel_low + t * (pixel_high - pixel_low);
  }
};

// `whole_steps`: the data are whole numbers (ranks, epochs), so ticks never fall between them.
Axis make_axis(Scale scale, double minimum, double maximum, double pixel_low, double pixel_high,
               bool whole_steps = false) {
  Axis axis;
  axis.scale = scale;
  axis.pixel_low = pixel_low;
  axis.pixel_high = pixel_high;
  if (!(minimum <= maximum)) minimum = maximum = scale == Scale::Logarithmic ? 1 : 0;
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
  for (double tick = axis.low; tick <= axis.high + step * 0.5; tick += step)
    axis.ticks.push_back(std::fabs(tick) < step * 1e-9 ? 0.0 : tick);
  return axis;
}

struct Frame {
  Axis x, y;
};

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

// Legend entries in rows under the title; wraps to a second row when they do not fit.
void legend(std::ostringstream& svg, const Axes& axes, const std::vector<std::string>& names) {
  double x = left_margin, y = 32;
  for (std::size_t index = 0; index < names.size(); ++index) {
    const double width = 18 + character_width * static_cast<double>(names[index].size()) + 14;
    if (x + width > axes.width - right_margin && x > left_margin) {
      x = left_margin;
      y += 14;
    }
    svg << "<g class=\"legend\" data-series=\"" << escape_html(names[index]) << "\"><rect x=\""
        << coordinate(x) << "\" y=\"" << coordinate(y - 8) << "\" width=\"12\" height=\"8\" fill=\""
        << palette_colour(index) << "\"/><text x=\"" << coordinate(x + 16) << "\" y=\"" << coordinate(y)
        << "\">" << escape_html(names[index]) << "</text></g>\n";
    x += width;
  }
}

void draw_axes(std::ostringstream& svg, const Axes& axes, const Frame& frame, bool x_ticks) {
  const double plot_left = left_margin, plot_right = axes.width - right_margin;
  const double plot_top = top_margin, plot_bottom = axes.height - bottom_margin;
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
        << "\" text-anchor=\"end\">" << number(tick) << "</text>\n";
  if (x_ticks)
    for (const double tick : frame.x.ticks)
      svg << "<text x=\"" << coordinate(frame.x.map(tick)) << "\" y=\"" << coordinate(plot_bottom + 14)
          << "\" text-anchor=\"middle\">" << number(tick) << "</text>\n";
  svg << "</g>\n";
  svg << "<text class=\"x-label\" x=\"" << coordinate((plot_left + plot_right) / 2) << "\" y=\""
      << coordinate(axes.height - 8.0) << "\" text-anchor=\"middle\">" << escape_html(axes.x_label)
      << "</text>\n";
  svg << "<text class=\"y-label\" transform=\"translate(14 " << coordinate((plot_top + plot_bottom) / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape_html(axes.y_label) << "</text>\n";
}

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
  return {make_axis(axes.x_scale, x_min, x_max, left_margin, axes.width - right_margin, whole_x),
          make_axis(axes.y_scale, y_min, y_max, axes.height - bottom_margin, top_margin)};
}

bool has_points(const Axes& axes, const std::vector<Series>& series) {
  for (const auto& one : series)
    for (std::size_t index = 0; index < std::min(one.x.size(), one.y.size()); ++index)
      if (usable(one.x[index], axes.x_scale) && usable(one.y[index], axes.y_scale)) return true;
  return false;
}

void no_data(std::ostringstream& svg, const Axes& axes) {
  svg << "<text class=\"no-data\" x=\"" << coordinate(axes.width / 2.0) << "\" y=\""
      << coordinate(axes.height / 2.0) << "\" text-anchor=\"middle\" fill=\"#777777\">no data</text>\n";
}

std::string points_chart(const Axes& axes, const std::vector<Series>& series, bool lines) {
  std::ostringstream svg;
  open_svg(svg, axes, lines ? "line" : "scatter");
  std::vector<std::string> names;
  for (const auto& one : series) names.push_back(one.name);
  legend(svg, axes, names);
  if (!has_points(axes, series)) {
    no_data(svg, axes);
    svg << "</svg>\n";
    return svg.str();
  }
  const Frame frame = frame_for(axes, series);
  draw_axes(svg, axes, frame, true);
  for (std::size_t index = 0; index < series.size(); ++index) {
    const auto& one = series[index];
    const std::string colour = palette_colour(index);
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
               << escape_html(one.name) << ": " << number(one.x[point]) << ", " << number(one.y[point])
               << "</title></circle>";
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

}  // namespace

std::string palette_colour(std::size_t index) {
  static const char* const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colours[index % (sizeof(colours) / sizeof(colours[0]))];
}

std::string line_chart(const Axes& axes, const std::vector<Series>& series) {
  return points_chart(axes, series, true);
}

std::string scatter_chart(const Axes& axes, const std::vector<Series>& series) {
  return points_chart(axes, series, false);
}

std::string stacked_bar_chart(const Axes& axes, const std::vector<std::string>& segment_names,
                              const std::vector<StackedBar>& bars) {
  std::ostringstream svg;
  open_svg(svg, axes, "stacked-bars");
  legend(svg, axes, segment_names);
  double highest = 0;
  for (const auto& bar : bars) {
    double total = 0;
    for (const double value : bar.values)
      if (std::isfinite(value) && value > 0) total += value;
    highest = std::max(highest, total);
  }
  if (bars.empty()) {
    no_data(svg, axes);
    svg << "</svg>\n";
    return svg.str();
  }
  Axes linear = axes;
  linear.y_scale = Scale::Linear;
  Frame frame{
      make_axis(Scale::Linear, 0, static_cast<double>(bars.size()), left_margin, axes.width - right_margin),
      make_axis(Scale::Linear, 0, highest > 0 ? highest : 1, axes.height - bottom_margin, top_margin)};
  frame.x.low = 0;
  frame.x.high = static_cast<double>(bars.size());
  draw_axes(svg, linear, frame, false);
  const double slot = (axes.width - left_margin - right_margin) / static_cast<double>(bars.size());
  const double bar_width = std::min(slot * 0.7, 80.0);
  for (std::size_t index = 0; index < bars.size(); ++index) {
    const auto& bar = bars[index];
    const double centre = left_margin + slot * (static_cast<double>(index) + 0.5);
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
          << escape_html(segment_names[segment]) << ": " << number(value) << "</title></rect>";
      base += value;
    }
    svg << "<text x=\"" << coordinate(centre) << "\" y=\"" << coordinate(axes.height - bottom_margin + 14)
        << "\" text-anchor=\"middle\">" << escape_html(bar.label) << "</text></g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace phalanx::report
