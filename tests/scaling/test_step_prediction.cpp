// The step timeline: bucket ready times from backward's reverse layer order, all-reduces queued
// one behind the other, the exposed remainder, efficiency against one device; and the layer costs of
// a real model plan (its gradient layout and multiply-adds).
#include <gtest/gtest.h>

#include <algorithm>

#include "phalanx/core/error.hpp"
#include "phalanx/scaling/measured_transport.hpp"
#include "phalanx/scaling/step_prediction.hpp"

namespace phalanx::testing {
namespace {

using namespace phalanx::scaling;

// Two layers of 1 Mi and 3 Mi floats; the second (last in forward) finishes backward first.
LayerCosts two_layers() {
  LayerCosts costs;
  costs.model = "two";
  costs.layers = {{"first", 0, 1 << 20, 300}, {"second", 1 << 20, 3 << 20, 100}};
  costs.gradient_elements = costs.parameters = 4 << 20;
  return costs;
}

Fabric network(double gbytes) {
  Fabric fabric;
  fabric.name = "test";
  fabric.intra_node_bandwidth = 1e12;
  fabric.network_bandwidth_per_node = gbytes * 1e9;
  return fabric;
}

TEST(StepPrediction, ThroughputSplitsAThirdForwardAndTwoThirdsBackwardByMultiplyAdds) {
  const ComputeTimes times = compute_from_throughput(two_layers(), 100, 30);  // 0.3 s a step
  ASSERT_EQ(times.forward.size(), 2u);
  EXPECT_NEAR(times.forward[0], 0.1 * 0.75, 1e-12);
  EXPECT_NEAR(times.forward[1], 0.1 * 0.25, 1e-12);
  EXPECT_NEAR(times.backward[0], 0.2 * 0.75, 1e-12);
  EXPECT_NEAR(times.backward[1], 0.2 * 0.25, 1e-12);
}

TEST(StepPrediction, BucketsStartWhenReadyAndAfterThePreviousOneAndTheRestIsExposed) {
  const LayerCosts costs = two_layers();
  const ComputeTimes times = compute_from_throughput(costs, 100, 30);
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 60;
  settings.bucket_bytes = std::size_t{8} << 20;  // 2 Mi floats
  settings.first_bucket_bytes = std::size_t{4} << 20;
  const Topology topology{2, 1};
  const Fabric fabric = network(1);
  const StepPrediction prediction = predict_step(costs, times, settings, topology, fabric);
  // Buckets from the end: [3Mi,4Mi), [1Mi,3Mi), [0,1Mi).
  ASSERT_EQ(prediction.buckets.size(), 3u);
  EXPECT_EQ(prediction.buckets[0].begin, 3 << 20);
  EXPECT_EQ(prediction.buckets[1].begin, 1 << 20);
  EXPECT_EQ(prediction.buckets[2].begin, 0);
  // "second" ends backward at 0.1 + 0.05; "first" at 0.3.
  EXPECT_NEAR(prediction.buckets[0].ready, 0.15, 1e-12);
  EXPECT_NEAR(prediction.buckets[1].ready, 0.15, 1e-12);
  EXPECT_NEAR(prediction.buckets[2].ready, 0.30, 1e-12);
  const double first = fastest_allreduce(std::size_t{4} << 20, topology, fabric).seconds;
  const double second = fastest_allreduce(std::size_t{8} << 20, topology, fabric).seconds;
  const double third = fastest_allreduce(std::size_t{4} << 20, topology, fabric).seconds;
  EXPECT_NEAR(prediction.buckets[1].start, 0.15 + first, 1e-12);
  EXPECT_NEAR(prediction.buckets[2].start, std::max(0.30, 0.15 + first + second), 1e-12);
  EXPECT_NEAR(prediction.step, prediction.buckets[2].start + third, 1e-12);
  EXPECT_NEAR(prediction.exposed, prediction.step - 0.3, 1e-12);
  EXPECT_NEAR(prediction.single_device_images_per_second, 100, 1e-9);
  EXPECT_NEAR(prediction.efficiency, 0.3 / prediction.step, 1e-12);
  EXPECT_NEAR(prediction.images_per_second, 60 / prediction.step, 1e-9);
}

TEST(StepPrediction, OneDeviceHasNoAllreduceAndASlowNetworkExposesMore) {
  const LayerCosts costs = two_layers();
  const ComputeTimes times = compute_from_throughput(costs, 100, 30);
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 30;
  const StepPrediction one = predict_step(costs, times, settings, {1, 1}, network(1));
  EXPECT_NEAR(one.step, 0.3, 1e-12);
  EXPECT_EQ(one.exposed, 0.0);
  EXPECT_NEAR(one.efficiency, 1.0, 1e-12);
  settings.global_batch = 240;
  const StepPrediction fast = predict_step(costs, times, settings, {8, 1}, network(10));
  const StepPrediction slow = predict_step(costs, times, settings, {8, 1}, network(0.1));
  EXPECT_LT(fast.exposed, slow.exposed);
  EXPECT_GT(fast.efficiency, slow.efficiency);
  // 16 MB by ring at 0.1 GB/s x 8/14 take 0.29 s, starting at 0.15 s at the earliest: the step lasts
  // 0.44 s at least, of which 0.14 s after backward.
  EXPECT_GT(slow.step, 0.44);
  EXPECT_GT(slow.exposed_share(), 0.14 / 0.44);
}

// A measured transport (bench calibrate's fit) costs each bucket latency + bytes x seconds_per_byte;
// the timeline around it is the same: ready, queued behind the previous bucket, the rest exposed.
TEST(StepPrediction, AMeasuredTransportCostsEachBucketByItsFit) {
  const LayerCosts costs = two_layers();
  const ComputeTimes times = compute_from_throughput(costs, 100, 30);
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 60;
  settings.bucket_bytes = std::size_t{4} << 20;
  MeasuredTransport transport;
  transport.name = "shared_memory";
  transport.ranks = 2;
  transport.latency = 2e-3;
  transport.seconds_per_byte = 1e-8;  // 100 MB/s: slow enough to expose some of it
  const StepPrediction prediction =
      predict_step(costs, times, settings, Topology{1, 2}, [&](std::size_t bytes) {
        const AllreduceEstimate estimate = estimate_allreduce(transport, bytes);
        return BucketAllreduce{estimate, estimate, estimate};
      });
  ASSERT_GE(prediction.buckets.size(), 3u);
  double previous_finish = 0, total = 0;
  for (const BucketTiming& bucket : prediction.buckets) {
    EXPECT_DOUBLE_EQ(bucket.chosen.seconds, 2e-3 + static_cast<double>(bucket.bytes) * 1e-8);
    EXPECT_DOUBLE_EQ(bucket.start, std::max(bucket.ready, previous_finish));
    EXPECT_DOUBLE_EQ(bucket.finish, bucket.start + bucket.chosen.seconds);
    previous_finish = bucket.finish;
    total += bucket.chosen.seconds;
  }
  EXPECT_DOUBLE_EQ(prediction.allreduce, total);
  EXPECT_DOUBLE_EQ(prediction.step, previous_finish);
  EXPECT_NEAR(prediction.exposed, previous_finish - 0.3, 1e-12);
  EXPECT_GT(prediction.exposed, 0.0);
  EXPECT_NEAR(prediction.efficiency, 0.3 / prediction.step, 1e-12);
  // One rank: nothing to all-reduce, whatever the fit.
  transport.ranks = 1;
  EXPECT_EQ(estimate_allreduce(transport, 1 << 20).seconds, 0.0);
}

}  // namespace
}  // namespace phalanx::testing
