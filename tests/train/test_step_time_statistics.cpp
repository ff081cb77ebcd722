// Step-time percentiles (nearest rank) and the skew between ranks.
#include <gtest/gtest.h>

#include "reporting/breakdown_table.hpp"
#include "reporting/step_time_statistics.hpp"

namespace phalanx::train {
namespace {

TEST(StepTimeStatistics, NearestRankPercentiles) {
  StepTimeStatistics statistics;
  for (int index = 100; index >= 1; --index) statistics.add(index / 1000.0);  // 1..100 ms, any order
  const auto json = statistics.to_json();
  EXPECT_EQ(json["steps"], 100);
  EXPECT_DOUBLE_EQ(json["min_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(json["p50_ms"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(json["p90_ms"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(json["p99_ms"].get<double>(), 99.0);
  EXPECT_DOUBLE_EQ(json["max_ms"].get<double>(), 100.0);
  EXPECT_NEAR(json["mean_ms"].get<double>(), 50.5, 1e-9);
}

TEST(StepTimeStatistics, OneStepAndNone) {
  StepTimeStatistics one;
  one.add(0.004);
  EXPECT_DOUBLE_EQ(one.to_json()["p99_ms"].get<double>(), 4.0);
  EXPECT_FALSE(StepTimeStatistics().to_json().contains("p50_ms"));
}

TEST(StepTimeSkew, NamesSlowestAndFastestRank) {
  const nlohmann::json ranks = nlohmann::json::array({{{"rank", 0}, {"step_time_ms", {{"p50_ms", 10.0}}}},
                                                      {{"rank", 1}, {"step_time_ms", {{"p50_ms", 15.0}}}},
                                                      {{"rank", 2}, {"step_time_ms", {{"p50_ms", 12.0}}}}});
  const auto skew = step_time_skew(ranks);
  EXPECT_EQ(skew["slowest_rank"], 1);
  EXPECT_EQ(skew["fastest_rank"], 0);
  EXPECT_DOUBLE_EQ(skew["p50_ratio"].get<double>(), 1.5);
  EXPECT_TRUE(step_time_skew(nlohmann::json::array()).empty());
}

TEST(BreakdownTable, OneRowPerRankWithTheStageMilliseconds) {
  const nlohmann::json breakdown = {{"step_ms", 12.5},
                                    {"forward", {{"ms_per_step", 3.25}}},
                                    {"allreduce_wait", {{"ms_per_step", 0.5}}},
                                    {"allreduce_total", {{"ms_per_step", 2.0}}},
                                    {"optimizer", {{"ms_per_step", 0.25}}},
                                    {"sync_wait", {{"ms_per_step", 1.75}}},
                                    {"other", {{"ms_per_step", 0.5}}}};
  const auto table = breakdown_table({breakdown, breakdown});
  EXPECT_NE(table.find("\n     0      12.50"), std::string::npos) << table;
  EXPECT_NE(table.find("\n     1      12.50"), std::string::npos) << table;
  EXPECT_NE(table.find("3.25"), std::string::npos);
  EXPECT_NE(table.find("0.50 / 2.00"), std::string::npos) << table;
  // The last three columns: optimizer, the wait for peers after it (sync), other.
  EXPECT_NE(table.find("0.25   1.75   0.50\n"), std::string::npos) << table;
  EXPECT_NE(table.find("optimizer   sync  other"), std::string::npos) << table;
}

}  // namespace
}  // namespace phalanx::train
