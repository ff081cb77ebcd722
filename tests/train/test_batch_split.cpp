// split_by_throughput: the global batch cut in proportion to measured rates. The tests recompute
// the exact shares and check the properties the trainer relies on: the sizes add up to the global
// batch, none is below 1, each is its exact share rounded down or up, and the same rates give the
// same split (every rank computes it on its own).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "phalanx/core/error.hpp"
#include "setup/batch_split.hpp"

namespace phalanx::train {
namespace {

TEST(BatchSplit, ProportionalToTheRates) {
  EXPECT_EQ(split_by_throughput(64, {1.0, 1.0}), (std::vector<int>{32, 32}));
  EXPECT_EQ(split_by_throughput(256, {9100.0, 1020.0}), (std::vector<int>{230, 26}));
  // 64 * 2/3 = 42.67 and 21.33: the larger remainder takes the last sample.
  EXPECT_EQ(split_by_throughput(64, {2.0, 1.0}), (std::vector<int>{43, 21}));
  // Equal remainders: the lower rank first.
  EXPECT_EQ(split_by_throughput(10, {1.0, 1.0, 1.0, 1.0}), (std::vector<int>{3, 3, 2, 2}));
}

TEST(BatchSplit, EveryRankKeepsAtLeastOneSample) {
  EXPECT_EQ(split_by_throughput(64, {1e6, 1.0}), (std::vector<int>{63, 1}));
  EXPECT_EQ(split_by_throughput(3, {1e9, 1.0, 1.0}), (std::vector<int>{1, 1, 1}));
  // A rank that measured nothing usable still trains one sample.
  const auto split = split_by_throughput(32, {0.0, std::nan(""), 100.0});
  EXPECT_EQ(split, (std::vector<int>{1, 1, 30}));
  // No usable rate anywhere: an equal split.
  EXPECT_EQ(split_by_throughput(12, {0.0, -1.0, 0.0}), (std::vector<int>{4, 4, 4}));
}

TEST(BatchSplit, RandomRatesGiveExactSharesRounded) {
  std::mt19937 generator(11);
  std::uniform_real_distribution<double> rate(0.1, 5000.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const int ranks = 1 + trial % 7;
    const std::int64_t global = ranks + static_cast<std::int64_t>(generator() % 500);
    std::vector<double> rates(static_cast<std::size_t>(ranks));
    for (auto& value : rates) value = rate(generator);
    const auto split = split_by_throughput(global, rates);
    ASSERT_EQ(split.size(), rates.size());
    EXPECT_EQ(std::accumulate(split.begin(), split.end(), std::int64_t{0}), global);
    const double total = std::accumulate(rates.begin(), rates.end(), 0.0);
    // Ranks whose share is below one sample may each take one from a larger rank.
    const auto raised = std::count_if(rates.begin(), rates.end(), [&](double value) {
      return static_cast<double>(global) * value / total < 1.0;
    });
    for (std::size_t rank = 0; rank < split.size(); ++rank) {
      EXPECT_GE(split[rank], 1);
      const double share = static_cast<double>(global) * rates[rank] / total;
      // Rounded down or up, less what ranks raised to 1 took.
      if (share >= 1.0) {
        EXPECT_GE(split[rank], std::floor(share) - static_cast<double>(raised)) << "trial " << trial;
        EXPECT_LE(split[rank], std::ceil(share)) << "trial " << trial;
      }
    }
    EXPECT_EQ(split_by_throughput(global, rates), split) << "not a pure function of the rates";
  }
}

TEST(BatchSplit, DescribesAndReportsTheSplit) {
  BatchSplit split;
  split.method = "throughput";
  split.local_batches = {230, 26};
  split.devices = {"cuda", "cpu"};
  split.images_per_second = {9100.4, 1019.6};
  split.probe_seconds = 1.5;
  EXPECT_EQ(split.description(), "rank 0 cuda 230 (9100 img/s), rank 1 cpu 26 (1020 img/s)");
  EXPECT_EQ(split.global_batch(), 256);
  const auto json = split.to_json();
  EXPECT_EQ(json["method"], "throughput");
  EXPECT_EQ(json["local_batches"], (std::vector<int>{230, 26}));
  EXPECT_EQ(json["global_batch"], 256);
  EXPECT_DOUBLE_EQ(json["probe_seconds"].get<double>(), 1.5);
}

TEST(BatchSplit, FewerSamplesThanRanksIsAnInternalError) {
  EXPECT_THROW(split_by_throughput(2, {1.0, 1.0, 1.0}), Error);
  EXPECT_THROW(split_by_throughput(4, {}), Error);
}

}  // namespace
}  // namespace phalanx::train
