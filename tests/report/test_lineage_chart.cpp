// The lineage chart: one mark per point at its place in the plot, one segment from each point's
// parent to it in the point's lineage colour, unplottable points and their segments left out,
// text escaped, and an empty chart that says so.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "phalanx/report/lineage_chart.hpp"

namespace phalanx::report {
namespace {

int count(const std::string& text, const std::string& what) {
  int found = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++found;
  return found;
}

Axes axes() {
  Axes chart{"population", "budget", "accuracy"};
  chart.width = 600;
  chart.height = 300;
  return chart;
}

}  // namespace

TEST(LineageChart, EachPointIsMarkedAndJoinedToItsParentInItsLineageColour) {
  // Two trials over two intervals; at the second, trial 1 continues trial 0's line.
  const std::vector<LineagePoint> points = {{1, 0.5, -1, 0, "trial 0 interval 0"},
                                            {1, 0.3, -1, 1, "trial 1 interval 0"},
                                            {2, 0.6, 0, 0, "trial 0 interval 1"},
                                            {2, 0.55, 0, 0, "trial 1 interval 1 <copied>"}};
  const std::string svg = lineage_chart(axes(), {"from trial 0", "from trial 1"}, points);
  EXPECT_EQ(count(svg, "class=\"lineage-point\""), 4);
  EXPECT_EQ(count(svg, "class=\"lineage-edge\""), 2);
  EXPECT_EQ(count(svg, "class=\"lineage-edge\" data-lineage=\"from trial 0\""), 2);
  EXPECT_EQ(count(svg, "class=\"lineage-point\" data-lineage=\"from trial 1\""), 1);
  EXPECT_NE(svg.find("&lt;copied&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<copied>"), std::string::npos);
  // Both edges start at the parent's mark: the same (x1, y1), and the higher metric drawn higher.
  const std::regex edge(R"re(x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)")re");
  std::vector<std::smatch> edges;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), edge); it != std::sregex_iterator(); ++it)
    edges.push_back(*it);
  ASSERT_EQ(edges.size(), 2u);
  EXPECT_EQ(edges[0][1], edges[1][1]);
  EXPECT_EQ(edges[0][2], edges[1][2]);
  EXPECT_LT(std::stod(edges[0][1]), std::stod(edges[0][3]));  // later budget further right
  EXPECT_LT(std::stod(edges[0][4]), std::stod(edges[1][4]));  // 0.6 above 0.55
}

TEST(LineageChart, UnplottablePointsAndTheirSegmentsAreLeftOutAndAnEmptyChartSaysSo) {
  const std::vector<LineagePoint> points = {{1, 0.5, -1, 0, "a"}, {2, NAN, 0, 0, "running"}};
  const std::string svg = lineage_chart(axes(), {"from trial 0"}, points);
  EXPECT_EQ(count(svg, "class=\"lineage-point\""), 1);
  EXPECT_EQ(count(svg, "class=\"lineage-edge\""), 0);
  const std::string empty = lineage_chart(axes(), {}, {});
  EXPECT_EQ(count(empty, "class=\"lineage-point\""), 0);
  EXPECT_NE(empty.find("no data"), std::string::npos);
}

}  // namespace phalanx::report
