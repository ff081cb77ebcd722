// The SVG charts: the marks land where the data says (scaled into the plot area), every series
// and segment is present and named, bad points are skipped, and text is escaped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>
#include <string>

#include "phalanx/report/chart.hpp"
#include "phalanx/report/html_page.hpp"

namespace phalanx::report {
namespace {

int count(const std::string& text, const std::string& needle) {
  int found = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++found;
  return found;
}

std::vector<std::pair<double, double>> polyline_points(const std::string& svg, const std::string& series) {
  const std::regex pattern("data-series=\"" + series + "\"[^>]*points=\"([^\"]*)\"");
  std::smatch match;
  EXPECT_TRUE(std::regex_search(svg, match, pattern)) << series;
  std::vector<std::pair<double, double>> points;
  std::istringstream stream(match[1].str());
  std::string pair;
  while (stream >> pair) {
    const auto comma = pair.find(',');
    points.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return points;
}

TEST(Chart, LineChartPlacesPointsInOrderInsideThePlot) {
  Axes axes{"Loss", "step", "loss"};
  const auto svg =
      line_chart(axes, {{"train", {0, 10, 20, 30}, {2.0, 1.0, 0.5, 0.25}}, {"test", {10, 30}, {1.2, 0.4}}});
  EXPECT_EQ(count(svg, "<svg"), 1);
  EXPECT_EQ(count(svg, "class=\"series\""), 2);
  EXPECT_EQ(count(svg, "class=\"legend\""), 2);
  const auto train = polyline_points(svg, "train");
  ASSERT_EQ(train.size(), 4u);
  for (std::size_t index = 1; index < train.size(); ++index) {
    EXPECT_GT(train[index].first, train[index - 1].first);    // x grows to the right
    EXPECT_LT(train[index - 1].second, train[index].second);  // lower loss is lower on screen (larger y)
  }
  for (const auto& [x, y] : train) {
    EXPECT_GE(x, 0);
    EXPECT_LE(x, axes.width);
    EXPECT_GE(y, 0);
    EXPECT_LE(y, axes.height);
  }
  // Equal spacing in x maps to equal spacing in pixels on a linear axis.
  EXPECT_NEAR(train[1].first - train[0].first, train[3].first - train[2].first, 0.02);
}

TEST(Chart, LogarithmicAxisSpacesDecadesEvenlyAndSkipsNonPositivePoints) {
  Axes axes{"Bandwidth", "bytes", "GB/s"};
  axes.x_scale = Scale::Logarithmic;
  const auto svg = line_chart(axes, {{"mpi", {1e3, 1e4, 1e5, 0, -5}, {0.1, 0.5, 1.0, 2.0, 3.0}}});
  const auto points = polyline_points(svg, "mpi");
  ASSERT_EQ(points.size(), 3u);
  EXPECT_NEAR(points[1].first - points[0].first, points[2].first - points[1].first, 0.02);
}

// Values a double's spacing cannot step between (1e17 and 1e17 + 32: the tick step, 5, adds
// nothing there) took memory without end; values of +-1e308, whose span is inf, drew "-nan".
TEST(Chart, ValuesAtTheEdgesOfADoubleGiveAFiniteChart) {
  const auto close = line_chart({"t", "x", "y"}, {{"a", {1, 2}, {1e17, 1e17 + 32}}});
  EXPECT_EQ(polyline_points(close, "a").size(), 2u);
  EXPECT_LT(count(close, "<line"), 40);
  const auto wide = line_chart({"t", "x", "y"}, {{"a", {1e308, -1e308}, {1e308, -1e308}}});
  EXPECT_EQ(wide.find("nan"), std::string::npos);
  EXPECT_EQ(wide.find("inf"), std::string::npos);
  for (const auto& [x, y] : polyline_points(wide, "a")) {
    EXPECT_TRUE(std::isfinite(x));
    EXPECT_TRUE(std::isfinite(y));
  }
}

TEST(Chart, NonFiniteValuesAreSkippedAndAnEmptyChartSaysSo) {
  const auto svg = line_chart({"t", "x", "y"}, {{"a", {1, 2, 3}, {1, std::nan(""), 3}}});
  EXPECT_EQ(polyline_points(svg, "a").size(), 2u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  const auto empty = line_chart({"t", "x", "y"}, {{"a", {}, {}}});
  EXPECT_NE(empty.find("class=\"no-data\""), std::string::npos);
}

TEST(Chart, StackedBarsStackSegmentsToTheBarTotal) {
  Axes axes{"Time per step", "rank", "ms"};
  const auto svg = stacked_bar_chart(axes, {"forward", "backward", "other"},
                                     {{"rank 0", {10, 20, 5}}, {"rank 1", {10, 30, 0}}});
  EXPECT_EQ(count(svg, "class=\"bar\""), 2);
  EXPECT_EQ(count(svg, "class=\"segment\""), 5);  // a zero segment draws nothing
  // Heights are proportional to the values: backward of rank 1 is 3x forward.
  const std::regex pattern("data-segment=\"(\\w+)\"[^>]*height=\"([0-9.]+)\"");
  std::vector<std::pair<std::string, double>> heights;
  for (std::sregex_iterator it(svg.begin(), svg.end(), pattern), end; it != end; ++it)
    heights.emplace_back((*it)[1].str(), std::stod((*it)[2].str()));
  ASSERT_EQ(heights.size(), 5u);
  EXPECT_NEAR(heights[1].second / heights[0].second, 2.0, 0.01);
  EXPECT_NEAR(heights[4].second / heights[3].second, 3.0, 0.01);
  // The tallest bar (40 ms) reaches at least the top tick's share of the plot: the axis covers it.
  EXPECT_GT(heights[3].second + heights[4].second, heights[0].second + heights[1].second + heights[2].second);
}

TEST(Chart, WholeNumberDataGetsWholeNumberTicks) {
  const auto svg = scatter_chart({"per rank", "rank", "ms"}, {{"p50", {0, 1}, {10, 12}}});
  const std::regex tick(">(-?[0-9.]+)</text>");
  std::vector<double> labels;
  for (std::sregex_iterator it(svg.begin(), svg.end(), tick), end; it != end; ++it)
    labels.push_back(std::stod((*it)[1].str()));
  ASSERT_FALSE(labels.empty());
  // Ranks 0 and 1: no tick between them (the y ticks are 10 and up).
  EXPECT_EQ(std::count_if(labels.begin(), labels.end(), [](double value) { return value > 0 && value < 1; }),
            0);
  const auto fractional = line_chart({"t", "x", "y"}, {{"s", {0, 0.5, 1}, {1, 2, 3}}});
  EXPECT_NE(fractional.find(">0.2</text>"), std::string::npos);  // fractional data keep fine ticks
}

TEST(Chart, ScatterDrawsOnePointPerValidSample) {
  const auto svg =
      scatter_chart({"trials", "lr", "accuracy", Scale::Logarithmic},
                    {{"done", {1e-3, 1e-2, 1e-1}, {0.8, 0.9, 0.85}}, {"stopped", {3e-2}, {0.5}}});
  EXPECT_EQ(count(svg, "class=\"point\""), 4);
}

TEST(Chart, XyChartDrawsEachSeriesByItsMarkWithItsOwnColourAndTitles) {
  std::vector<Series> series{
      {"trial 1", {0, 1}, {0.5, 0.7}, Mark::Line, "#bbbbbb", false},
      {"rung 0", {0, 0, 0}, {0.5, 0.6, 0.4}, Mark::Points, "#123456", true, {"trial 1 <a>", "trial 2"}},
      {"best so far", {0, 1}, {0.6, 0.7}}};
  const auto svg = xy_chart({"ladder", "rung", "accuracy"}, series);
  EXPECT_EQ(svg.find("data-kind=\"xy\""), svg.find("data-kind="));
  EXPECT_EQ(count(svg, "<polyline"), 2);                // the two Line series
  EXPECT_EQ(count(svg, "<circle class=\"point\""), 3);  // the three points of the Points series
  EXPECT_EQ(count(svg, "fill=\"#123456\""), 4);         // its points and its legend entry
  EXPECT_NE(svg.find("stroke=\"#bbbbbb\""), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"legend\""), 2);  // "trial 1" stays out of the legend
  EXPECT_EQ(svg.find("data-series=\"trial 1\"><rect"), std::string::npos);
  EXPECT_NE(svg.find("<title>trial 1 &lt;a&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>trial 2</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>rung 0: 0, 0.4</title>"), std::string::npos);  // no title given: name: x, y
  // A series without a colour takes the palette colour of its position (third: index 2).
  EXPECT_NE(
      svg.find("data-series=\"best so far\" data-points=\"2\" fill=\"none\" stroke=\"" + palette_colour(2)),
      std::string::npos);
  // line_chart and scatter_chart override the mark the series carries.
  EXPECT_EQ(count(scatter_chart({"t", "x", "y"}, series), "<polyline"), 0);
  EXPECT_EQ(count(line_chart({"t", "x", "y"}, series), "<polyline"), 3);
}

TEST(HtmlPage, FormatsNumbersWithFourSignificantDigits) {
  EXPECT_EQ(format_number(0.123456), "0.1235");
  EXPECT_EQ(format_number(1234.56), "1235");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(2.5e7), "2.5e+07");
  EXPECT_EQ(format_number(-4e-5), "-4e-05");
  EXPECT_EQ(format_number(std::nan("")), "-");
  EXPECT_EQ(format_number(INFINITY), "-");
}

TEST(HtmlPage, EscapesTextAndKeepsChartsAsMarkup) {
  HtmlPage page("run <a & b>");
  page.paragraph("x < y & \"z\"");
  page.table({"rank", "ms"}, {{"0", "1.5"}}, "ranks");
  page.figure(line_chart({"c", "x", "y"}, {{"s", {1, 2}, {1, 2}}}), "curve");
  const auto html = page.render();
  EXPECT_NE(html.find("<title>run &lt;a &amp; b&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("x &lt; y &amp; &quot;z&quot;"), std::string::npos);
  EXPECT_NE(html.find("<table id=\"ranks\">"), std::string::npos);
  EXPECT_NE(html.find("<figure id=\"curve\"><svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // only the SVG namespace
}

}  // namespace
}  // namespace phalanx::report
