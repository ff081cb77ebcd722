// The interval chart: one row per resource in order, one rect per interval placed and sized by
// its start and stop on a shared time axis, coloured by segment, bad intervals skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>

#include "phalanx/report/chart.hpp"
#include "phalanx/report/interval_chart.hpp"

namespace phalanx::report {
namespace {

struct Box {
  std::string segment;
  double x, y, width;
};

std::vector<Box> boxes(const std::string& svg) {
  const std::regex pattern(
      "class=\"interval\" data-segment=\"([^\"]*)\" x=\"([0-9.]+)\" y=\"([0-9.]+)\" width=\"([0-9.]+)\"");
  std::vector<Box> found;
  for (std::sregex_iterator it(svg.begin(), svg.end(), pattern), end; it != end; ++it)
    found.push_back(
        {(*it)[1].str(), std::stod((*it)[2].str()), std::stod((*it)[3].str()), std::stod((*it)[4].str())});
  return found;
}

TEST(IntervalChart, OneBarPerIntervalPlacedOnTheTimeAxis) {
  Axes axes{"Jobs", "seconds", ""};
  const auto svg =
      interval_chart(axes, {"rung 0", "rung 1"},
                     {{"worker 0", {{0, 10, 0, "trial 1"}, {10, 30, 1}}}, {"worker 1", {{5, 20, 0}}}});
  EXPECT_EQ(svg.find("data-kind=\"intervals\""), svg.find("data-kind="));
  const auto found = boxes(svg);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].segment, "rung 0");
  EXPECT_EQ(found[1].segment, "rung 1");
  // Widths proportional to durations (10, 20, 15 s); starts in time order on one axis.
  EXPECT_NEAR(found[1].width / found[0].width, 2.0, 0.01);
  EXPECT_NEAR(found[2].width / found[0].width, 1.5, 0.01);
  EXPECT_NEAR(found[1].x, found[0].x + found[0].width, 0.02);      // job 2 starts where job 1 stops
  EXPECT_NEAR(found[2].x - found[0].x, found[0].width / 2, 0.02);  // 5 s is half of 10 s
  EXPECT_DOUBLE_EQ(found[0].y, found[1].y);                        // one row per worker
  EXPECT_GT(found[2].y, found[0].y);                               // rows top to bottom in order
  EXPECT_LE(found[1].x + found[1].width, axes.width);
  // Colours follow the segments, the legend names them, titles default to segment: start-stop.
  EXPECT_NE(svg.find("fill=\"" + palette_colour(1) + "\" stroke"), std::string::npos);
  EXPECT_NE(svg.find("class=\"legend\" data-series=\"rung 1\""), std::string::npos);
  EXPECT_NE(svg.find("<title>trial 1</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>rung 1: 10-30</title>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"row\" data-row=\"worker 1\""), std::string::npos);
}

TEST(IntervalChart, BadIntervalsAreSkippedAndNoIntervalSaysNoData) {
  const auto svg = interval_chart({"Jobs", "s", ""}, {"job"},
                                  {{"w", {{0, 1, 0}, {std::nan(""), 2, 0}, {3, 2, 0}, {1, INFINITY, 0}}}});
  EXPECT_EQ(boxes(svg).size(), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_NE(interval_chart({"Jobs", "s", ""}, {"job"}, {{"w", {}}}).find("class=\"no-data\""),
            std::string::npos);
  EXPECT_NE(interval_chart({"Jobs", "s", ""}, {"job"}, {}).find("class=\"no-data\""), std::string::npos);
}

TEST(IntervalChart, LongRowLabelsWidenTheLeftMarginAndAreEscaped) {
  const std::string label(40, 'w');
  const auto svg = interval_chart({"Jobs", "s", ""}, {"a"}, {{label, {{0, 1, 0}}}, {"<b>", {{0, 1, 0}}}});
  const auto found = boxes(svg);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_GT(found[0].x, 40 * 6.0);  // the bars start right of a 40-character label
  EXPECT_NE(svg.find("data-row=\"&lt;b&gt;\""), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::report
