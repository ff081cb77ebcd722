// Parallel coordinates: one axis per dimension, one line per profile through the right place on
// every axis (linear, logarithmic, categorical), missing values leave their axis out, stronger
// profiles are bolder, text is escaped.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>
#include <string>

#include "phalanx/report/parallel_coordinates_chart.hpp"

namespace phalanx::report {
namespace {

struct Line {
  std::vector<std::pair<double, double>> points;
  double width = 0;
};

Line profile_line(const std::string& svg, const std::string& label) {
  const std::regex pattern("data-label=\"" + label +
                           "\"[^>]*points=\"([^\"]*)\"[^>]*stroke-width=\"([0-9.]+)\"");
  std::smatch match;
  EXPECT_TRUE(std::regex_search(svg, match, pattern)) << label;
  Line line;
  line.width = match.empty() ? 0 : std::stod(match[2].str());
  std::istringstream stream(match.empty() ? std::string() : match[1].str());
  std::string pair;
  while (stream >> pair) {
    const auto comma = pair.find(',');
    line.points.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return line;
}

const std::vector<Dimension> dimensions{{"learning rate", Scale::Logarithmic},
                                        {"optimizer", Scale::Linear, {"\"adam\"", "\"sgd\""}},
                                        {"accuracy"}};

TEST(ParallelCoordinatesChart, EachProfileCrossesEveryAxisAtItsValue) {
  const auto svg = parallel_coordinates_chart({"Trials", "", ""}, dimensions,
                                              {{"trial 0", {1e-3, 0, 0.80}, 0.0},
                                               {"trial 1", {1e-2, 1, 0.90}, 1.0},
                                               {"trial 2", {1e-1, 1, 0.85}, 0.5}});
  EXPECT_EQ(svg.find("data-kind=\"parallel-coordinates\""), svg.find("data-kind="));
  std::size_t axes = 0;
  for (std::size_t at = svg.find("class=\"dimension\""); at != std::string::npos;
       at = svg.find("class=\"dimension\"", at + 1))
    ++axes;
  EXPECT_EQ(axes, 3u);
  const auto zero = profile_line(svg, "trial 0"), one = profile_line(svg, "trial 1"),
             two = profile_line(svg, "trial 2");
  ASSERT_EQ(zero.points.size(), 3u);
  ASSERT_EQ(one.points.size(), 3u);
  ASSERT_EQ(two.points.size(), 3u);
  // Axes left to right, evenly spaced, the same x for every profile.
  EXPECT_LT(zero.points[0].first, zero.points[1].first);
  EXPECT_NEAR(zero.points[1].first - zero.points[0].first, zero.points[2].first - zero.points[1].first, 0.02);
  EXPECT_DOUBLE_EQ(zero.points[2].first, one.points[2].first);
  // Logarithmic axis: 1e-3, 1e-2, 1e-1 equally spaced, larger values higher (smaller y).
  EXPECT_GT(zero.points[0].second, one.points[0].second);
  EXPECT_NEAR(zero.points[0].second - one.points[0].second, one.points[0].second - two.points[0].second,
              0.02);
  // Categories: "sgd" (slot 1) above "adam" (slot 0); equal slots at equal heights.
  EXPECT_GT(zero.points[1].second, one.points[1].second);
  EXPECT_DOUBLE_EQ(one.points[1].second, two.points[1].second);
  // Linear metric axis: 0.85 halfway between 0.80 and 0.90.
  EXPECT_NEAR(two.points[2].second, (zero.points[2].second + one.points[2].second) / 2, 0.02);
  // Strength: the strongest line is the boldest.
  EXPECT_LT(zero.width, two.width);
  EXPECT_LT(two.width, one.width);
  // Category labels are on the page, escaped.
  EXPECT_NE(svg.find(">&quot;sgd&quot;</text>"), std::string::npos);
}

TEST(ParallelCoordinatesChart, MissingValuesLeaveTheirAxisOutAndNoProfilesSaysNoData) {
  const auto svg =
      parallel_coordinates_chart({"Trials", "", ""}, dimensions,
                                 {{"a", {std::nan(""), 5, 0.5}}, {"b", {-1, 1, 0.6}}, {"c", {1e-2, 0, 0.7}}});
  EXPECT_EQ(profile_line(svg, "a").points.size(), 1u);  // no value, and category 5 does not exist
  EXPECT_EQ(profile_line(svg, "b").points.size(), 2u);  // -1 has no place on a logarithmic axis
  EXPECT_EQ(profile_line(svg, "c").points.size(), 3u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  const auto empty = parallel_coordinates_chart({"Trials", "", ""}, dimensions, {});
  EXPECT_NE(empty.find("class=\"no-data\""), std::string::npos);
  EXPECT_EQ(empty.find("class=\"profile\""), std::string::npos);
}

TEST(ParallelCoordinatesChart, LabelsAreEscaped) {
  const auto svg = parallel_coordinates_chart({"<t>", "", ""}, {{"a<b"}}, {{"trial \"1\" & 2", {1}}});
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b"), std::string::npos);
  EXPECT_NE(svg.find("<title>trial &quot;1&quot; &amp; 2</title>"), std::string::npos);
  EXPECT_NE(svg.find("aria-label=\"&lt;t&gt;\""), std::string::npos);
}

}  // namespace
}  // namespace phalanx::report
