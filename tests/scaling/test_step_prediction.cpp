// The step timeline: bucket ready times from backward's reverse layer order, all-reduces queued
// one behind the other, the exposed remainder, efficiency against one device; and the layer costs of
// a real model plan (its gradient layout and multiply-adds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

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

// Four layers of 100 multiply-adds each at 200 images/s and batch 120: forward 0.2 s, then backward
// ends "d" (last in forward, 3 Mi floats) at 0.3 s, "c" (1 Mi) at 0.4 s, "b" (256 Ki) at 0.5 s and
// "a" (256 Ki) at 0.6 s.
LayerCosts four_tensors() {
  LayerCosts costs;
  costs.model = "four";
  costs.layers = {{"a", 0, 1 << 18, 100},
                  {"b", 1 << 18, 1 << 18, 100},
                  {"c", 1 << 19, 1 << 20, 100},
                  {"d", 3 << 19, 3 << 20, 100}};
  costs.gradient_elements = costs.parameters = (3 << 19) + (3 << 20);
  return costs;
}

StepPrediction predict_four(BucketCut cut, std::size_t bucket_bytes, double cycle = 0.005) {
  const LayerCosts costs = four_tensors();
  const ComputeTimes times = compute_from_throughput(costs, 200, 120);  // 0.6 s: 0.2 forward, 0.4 back
  StepSettings settings;
  settings.local_batch = 120;
  settings.global_batch = 240;
  settings.bucket_bytes = bucket_bytes;
  settings.bucket_cut = cut;
  settings.fusion_cycle = cycle;
  return predict_step(costs, times, settings, {2, 1}, network(1));
}

std::vector<std::pair<std::int64_t, std::int64_t>> ranges(const StepPrediction& prediction) {
  std::vector<std::pair<std::int64_t, std::int64_t>> result;
  for (const BucketTiming& bucket : prediction.buckets) result.emplace_back(bucket.begin, bucket.end);
  return result;
}

TEST(StepPrediction, DdpBucketsHoldWholeTensorsAndCloseOnceTheyReachTheirCap) {
  using Ranges = std::vector<std::pair<std::int64_t, std::int64_t>>;
  const std::int64_t d = 3 << 19, c = 1 << 19, b = 1 << 18;
  // The first bucket (1 MiB cap) closes at once with "d" (12 MiB) whole; the next takes "c" (4 MiB),
  // reaches 4 MiB and closes; "b" and "a" fill the last.
  EXPECT_EQ(ranges(predict_four(BucketCut::Ddp, std::size_t{4} << 20)),
            (Ranges{{d, d + (3 << 20)}, {c, d}, {0, c}}));
  // A 5 MiB cap: "c" (4 MiB) stays open for "b" (1 MiB), which reaches it.
  EXPECT_EQ(ranges(predict_four(BucketCut::Ddp, std::size_t{5} << 20)),
            (Ranges{{d, d + (3 << 20)}, {b, d}, {0, b}}));
  // Small last layers fill the first bucket until it holds 1 MiB: w (256 KiB), z (256 KiB), then
  // y (512 KiB) reaches exactly 1 MiB and closes it; x goes in the next.
  LayerCosts small;
  small.model = "small";
  small.layers = {{"x", 0, 1 << 20, 100},
                  {"y", 1 << 20, 1 << 17, 100},
                  {"z", (1 << 20) + (1 << 17), 1 << 16, 100},
                  {"w", (1 << 20) + (3 << 16), 1 << 16, 100}};
  small.gradient_elements = small.parameters = (1 << 20) + (1 << 18);
  StepSettings settings;
  settings.local_batch = 8;
  settings.global_batch = 16;
  settings.bucket_cut = BucketCut::Ddp;
  const StepPrediction filled =
      predict_step(small, compute_from_throughput(small, 100, 8), settings, {2, 1}, network(1));
  EXPECT_EQ(ranges(filled), (Ranges{{1 << 20, (1 << 20) + (1 << 18)}, {0, 1 << 20}}));
  // phalanx's own cut splits "d" where 4 MiB buckets end.
  const StepPrediction flat = predict_four(BucketCut::Phalanx, std::size_t{4} << 20);
  EXPECT_GT(flat.buckets.size(), 3u);
  EXPECT_EQ(flat.buckets[0].end - flat.buckets[0].begin, 1 << 18);  // the 1 MiB first bucket
}

TEST(StepPrediction, HorovodFusesTheTensorsReadyInEachCycleWholeUpToItsThreshold) {
  using Ranges = std::vector<std::pair<std::int64_t, std::int64_t>>;
  const std::int64_t d = 3 << 19, c = 1 << 19, b = 1 << 18;
  // Cycles of 5 ms: each layer goes at the first cycle after it ends, alone; "d" (12 MiB) would go
  // alone past an 8 MiB threshold anyway.
  const StepPrediction each = predict_four(BucketCut::Horovod, std::size_t{8} << 20);
  EXPECT_EQ(ranges(each), (Ranges{{d, d + (3 << 20)}, {c, d}, {b, c}, {0, b}}));
  EXPECT_GE(each.buckets[0].ready, 0.3 - 1e-12);
  EXPECT_LE(each.buckets[0].ready, 0.305 + 1e-12);
  EXPECT_GE(each.buckets[3].ready, 0.6 - 1e-12);
  EXPECT_LE(each.buckets[3].ready, 0.605 + 1e-12);
  // 0.35 s cycles: at 0.35 "d"; at 0.7 "c", "b" and "a" fused (6 MiB within 8).
  StepPrediction slow = predict_four(BucketCut::Horovod, std::size_t{8} << 20, 0.35);
  EXPECT_EQ(ranges(slow), (Ranges{{d, d + (3 << 20)}, {0, d}}));
  EXPECT_NEAR(slow.buckets[0].ready, 0.35, 1e-9);
  EXPECT_NEAR(slow.buckets[1].ready, 0.7, 1e-9);
  // A 5 MiB threshold: "c" and "b" fit (5 MiB), "a" starts the next, in the same cycle.
  slow = predict_four(BucketCut::Horovod, std::size_t{5} << 20, 0.35);
  EXPECT_EQ(ranges(slow), (Ranges{{d, d + (3 << 20)}, {b, d}, {0, b}}));
  EXPECT_NEAR(slow.buckets[2].ready, 0.7, 1e-9);
  // 0.45 s cycles: "d" and "c" end by 0.45 but do not fit together; "b" and "a" wait for the cycle
  // at 0.9, 0.3 s after backward: exposed.
  const StepPrediction late = predict_four(BucketCut::Horovod, std::size_t{8} << 20, 0.45);
  EXPECT_EQ(ranges(late), (Ranges{{d, d + (3 << 20)}, {c, d}, {0, c}}));
  EXPECT_NEAR(late.buckets[1].ready, 0.45, 1e-9);
  EXPECT_NEAR(late.buckets[2].ready, 0.9, 1e-9);
  EXPECT_GT(late.exposed, 0.3);
}

TEST(StepPrediction, BucketCutsAreNamedAndAnUnknownOneIsRefused) {
  EXPECT_EQ(parse_bucket_cut("ddp", "--buckets-as"), BucketCut::Ddp);
  EXPECT_EQ(name_of(parse_bucket_cut("horovod", "--buckets-as")), "horovod");
  try {
    parse_bucket_cut("deepspeed", "--buckets-as");
    FAIL() << "accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("--buckets-as"), std::string::npos) << error.what();
  }
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
        return BucketAllreduce{estimate, estimate, estimate, {}};
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

// Between two timed sizes the line through them; below the smallest, from the fitted latency; above
// the largest, the fitted time per byte on from it.
// Two ranks over the network: 10 us and 100 MB/s fitted to `measured`.
MeasuredTransport network_transport(std::vector<std::pair<double, double>> measured) {
  MeasuredTransport transport;
  transport.name = "network";
  transport.ranks = 2;
  transport.latency = 1e-5;
  transport.seconds_per_byte = 1e-8;
  transport.measured = std::move(measured);
  return transport;
}

TEST(StepPrediction, AMeasuredTransportInterpolatesItsTimedSizes) {
  MeasuredTransport transport = network_transport({{1000, 1e-4}, {2000, 3e-4}, {4000, 1e-3}});
  EXPECT_NEAR(estimate_allreduce(transport, 1500).seconds, 2e-4, 1e-15);
  EXPECT_NEAR(estimate_allreduce(transport, 3000).seconds, 6.5e-4, 1e-15);
  EXPECT_NEAR(estimate_allreduce(transport, 2000).seconds, 3e-4, 1e-15);
  EXPECT_NEAR(estimate_allreduce(transport, 500).seconds, 1e-5 + 0.5 * (1e-4 - 1e-5), 1e-15);
  EXPECT_NEAR(estimate_allreduce(transport, 6000).seconds, 1e-3 + 2000 * 1e-8, 1e-15);
  EXPECT_FALSE(transport.progresses_during_backward());
  transport.name = "nccl";
  EXPECT_TRUE(transport.progresses_during_backward());
}

// MPI's all-reduce advances only inside MPI calls: a bucket ready early in backward still starts at
// its end, and the whole all-reduce is exposed; the update follows it.
TEST(StepPrediction, AnMpiAllreduceStartsWhenBackwardEndsAndTheUpdateFollowsIt) {
  const LayerCosts costs = two_layers();
  ComputeTimes times = compute_from_throughput(costs, 100, 30);
  times.optimizer = 0.01;
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 60;
  settings.bucket_bytes = std::size_t{4} << 20;
  const auto costing = [](std::size_t bytes) {
    AllreduceEstimate estimate;
    estimate.seconds = static_cast<double>(bytes) * 1e-9;
    return BucketAllreduce{estimate, estimate, estimate, {}};
  };
  const StepPrediction overlapped = predict_step(costs, times, settings, Topology{1, 2}, costing, true);
  const StepPrediction waiting = predict_step(costs, times, settings, Topology{1, 2}, costing, false);
  ASSERT_GE(waiting.buckets.size(), 2u);
  EXPECT_LT(overlapped.buckets.front().start, 0.3);
  for (const BucketTiming& bucket : waiting.buckets) EXPECT_GE(bucket.start, 0.3 - 1e-12);
  EXPECT_NEAR(waiting.exposed, waiting.allreduce, 1e-12);
  EXPECT_NEAR(waiting.step, 0.3 + waiting.allreduce + 0.01, 1e-12);
  EXPECT_LT(overlapped.step, waiting.step);
  // One rank: forward, backward and the update.
  settings.global_batch = 30;
  const StepPrediction one = predict_step(costs, times, settings, Topology{1, 1}, costing, false);
  EXPECT_NEAR(one.step, 0.31, 1e-12);
  EXPECT_NEAR(one.efficiency, 1.0, 1e-12);
}

// Four layers of 1 Mi floats, 10 ms of forward and of backward each; the last one's gradients fill
// the first bucket, the other three the second.
LayerCosts four_layers() {
  LayerCosts costs;
  costs.model = "four";
  for (int index = 0; index < 4; ++index)
    costs.layers.push_back({"layer" + std::to_string(index), std::int64_t{index} << 20, 1 << 20, 100});
  costs.gradient_elements = costs.parameters = 4 << 20;
  return costs;
}

// Every bucket's all-reduce costs `seconds`, advancing in `stages` at MPI calls (none: it does not
// advance before backward ends).
AllreduceCosting staged_costing(double seconds, CallStages stages) {
  return [seconds, stages](std::size_t) {
    AllreduceEstimate estimate;
    estimate.seconds = seconds;
    return BucketAllreduce{estimate, estimate, estimate, stages};
  };
}

// An MPI all-reduce in stages: each starts at a call (a layer report in backward, or at once in the
// wait) after the one before it has run, and a call that moves data itself holds the rank.
TEST(StepPrediction, AnMpiAllreduceAdvancesAStageAtEachCall) {
  const LayerCosts costs = four_layers();
  ComputeTimes times;
  times.forward = {0.01, 0.01, 0.01, 0.01};
  times.backward = {0.01, 0.01, 0.01, 0.01};
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 60;
  settings.bucket_bytes = std::size_t{16} << 20;
  settings.first_bucket_bytes = std::size_t{4} << 20;
  // A handshake (1 ms), a transfer started at the next call (15 ms, its call held 2 ms), a second
  // handshake that needs no time, a second transfer (15 ms).
  const AllreduceCosting staged =
      staged_costing(0.031, CallStages{{0.001, 0.015, 0.0, 0.015}, {0, 0.002, 0, 0}});
  const StepPrediction prediction = predict_step(costs, times, settings, Topology{1, 2}, staged, false);
  ASSERT_EQ(prediction.buckets.size(), 2u);
  // Reports (calls) at 50, 60, 70 and 80 ms; layer3's bucket is launched at 50 ms, its handshake
  // done at 51 ms, its transfer starts at the 60 ms call, which holds the rank 2 ms: the later
  // reports come at 72 and 82 ms. The transfer ends at 75 ms, the next call is at 82 ms (backward's
  // end), and the rest runs in the wait: 82 + 15 = 97 ms.
  EXPECT_NEAR(prediction.buckets[0].ready, 0.05, 1e-12);
  EXPECT_NEAR(prediction.buckets[0].start, 0.05, 1e-12);
  EXPECT_NEAR(prediction.buckets[0].finish, 0.097, 1e-12);
  // The second bucket is ready at 82 ms and goes after the first, all of it in the wait.
  EXPECT_NEAR(prediction.buckets[1].ready, 0.082, 1e-12);
  EXPECT_NEAR(prediction.buckets[1].start, 0.097, 1e-12);
  EXPECT_NEAR(prediction.buckets[1].finish, 0.128, 1e-12);
  EXPECT_NEAR(prediction.backward, 0.042, 1e-12);
  EXPECT_NEAR(prediction.step, 0.128, 1e-12);
  EXPECT_NEAR(prediction.exposed, 0.128 - 0.082, 1e-12);
  // Without stages nothing starts before backward ends: 80 ms + 2 x 31 ms.
  const StepPrediction waiting =
      predict_step(costs, times, settings, Topology{1, 2}, staged_costing(0.031, {}), false);
  EXPECT_NEAR(waiting.step, 0.142, 1e-12);
  EXPECT_NEAR(waiting.exposed, 0.062, 1e-12);
  // Two stages, the second started by the next report: 10 ms after the launch, not at backward's
  // end.
  times.backward = {0.01, 0.01, 0.01, 0.001};
  const StepPrediction late = predict_step(costs, times, settings, Topology{1, 2},
                                           staged_costing(0.031, CallStages{{0.0, 0.031}, {0, 0}}), false);
  // layer3 reports at 41 ms, then 51, 61, 71 ms. The launch at 41 ms starts nothing, so the test
  // GradSync makes right after it starts the second stage: it ends at 72 ms (without stages it
  // would start at 71 ms and end at 102 ms).
  EXPECT_NEAR(late.buckets[0].finish, 0.072, 1e-12);
  // A launch whose own stage takes time (a 1 ms handshake) leaves the second stage to the next
  // report, 51 ms: 51 + 30 = 81 ms.
  const StepPrediction handshake =
      predict_step(costs, times, settings, Topology{1, 2},
                   staged_costing(0.031, CallStages{{0.001, 0.030}, {0, 0}}), false);
  EXPECT_NEAR(handshake.buckets[0].finish, 0.081, 1e-12);
  // One rank calls no MPI: nothing holds its backward, whatever the stages say.
  settings.global_batch = 30;
  times.backward = {0.01, 0.01, 0.01, 0.01};
  const StepPrediction one = predict_step(costs, times, settings, Topology{1, 1}, staged, false);
  EXPECT_NEAR(one.backward, 0.04, 1e-12);
  EXPECT_NEAR(one.step, 0.08, 1e-12);
  EXPECT_NEAR(one.efficiency, 1.0, 1e-12);
}

// The last layer's report comes as backward's compute ends, but its launch and test are still in
// the trainer's backward stage: what they hold the rank counts as backward, not as exposed.
TEST(StepPrediction, TheLastReportsCallsAreBackwardsTime) {
  const LayerCosts costs = four_layers();
  ComputeTimes times;
  times.forward = {0.01, 0.01, 0.01, 0.01};
  times.backward = {0.01, 0.01, 0.01, 0.01};
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 60;
  settings.bucket_bytes = settings.first_bucket_bytes = std::size_t{64} << 20;  // one bucket
  // The launch starts nothing; its test starts 4 ms that hold the rank 3 ms; a last 1 ms stage.
  const AllreduceCosting staged = staged_costing(0.005, CallStages{{0.0, 0.004, 0.001}, {0, 0.003, 0}});
  const StepPrediction prediction = predict_step(costs, times, settings, Topology{1, 2}, staged, false);
  ASSERT_EQ(prediction.buckets.size(), 1u);
  // Ready at the last report, 80 ms; the test after the launch holds the rank to 83 ms; the stages
  // end at 80 + 4 + 1 = 85 ms, 2 ms after backward's end.
  EXPECT_NEAR(prediction.buckets[0].ready, 0.08, 1e-12);
  EXPECT_NEAR(prediction.buckets[0].finish, 0.085, 1e-12);
  EXPECT_NEAR(prediction.backward, 0.043, 1e-12);
  EXPECT_NEAR(prediction.exposed, 0.002, 1e-12);
  EXPECT_NEAR(prediction.step, 0.085, 1e-12);
}

// A size between the timed ones takes the stages of the nearest (by ratio), scaled to its time.
TEST(StepPrediction, CallStagesComeFromTheNearestTimedSize) {
  MeasuredTransport transport = network_transport({{1000, 1e-4}, {4000, 1e-3}});
  EXPECT_TRUE(call_stages(transport, 1000).stages.empty());
  transport.progress = {{{2e-5, 8e-5}, {0, 1e-5}}, {{1e-4, 4e-4, 5e-4}, {0, 0, 2e-4}}};
  const CallStages small = call_stages(transport, 1000);
  EXPECT_EQ(small.stages, (std::vector<double>{2e-5, 8e-5}));
  // 3000 bytes: nearer 4000 than 1000 by ratio; 7e-4 s of the line between them.
  const CallStages large = call_stages(transport, 3000);
  ASSERT_EQ(large.stages.size(), 3u);
  EXPECT_NEAR(large.stages[0], 1e-4 * 0.7, 1e-15);
  EXPECT_NEAR(large.stages[2], 5e-4 * 0.7, 1e-15);
  EXPECT_NEAR(large.seconds_in_calls[2], 2e-4 * 0.7, 1e-15);
  // 1900 bytes: nearer 1000 (1.9x) than 4000 (2.1x).
  EXPECT_EQ(call_stages(transport, 1900).stages.size(), 2u);
}

// Ranks stepping like draws from their calibrated steps: the step's median is the slowest rank's,
// the smallest time at which every rank is done in more than half the steps.
TEST(StepPrediction, TheSlowestRankSetsTheStepFromTheRanksStepDistributions) {
  ComputeTimes times;
  std::vector<double> ten;
  for (int value = 1; value <= 10; ++value) ten.push_back(value);
  times.rank_steps = {ten};
  EXPECT_EQ(times.spread(1).slowest, 1.0);
  // Two like it: F(t)^2 >= 1/2 first at t = 8 (0.8^2; 0.7^2 < 1/2), against a median of 6 (the
  // upper middle of an even count, phalanx::median).
  EXPECT_NEAR(times.spread(2).slowest, 8 / 6.0, 1e-12);
  EXPECT_NEAR(times.spread(2).typical, 1.0, 1e-12);
  // Four: 0.9^4 = 0.656, 0.8^4 = 0.41.
  EXPECT_NEAR(times.spread(4).slowest, 9 / 6.0, 1e-12);
  // A second rank twice as slow, timed together with rank 0: it is each step's slowest and sets the
  // pace at its median, 12; the ranks' own medians average 1.5 of rank 0's.
  std::vector<double> twice;
  for (const double value : ten) twice.push_back(2 * value);
  times.rank_steps = {ten, twice};
  const RankSpread spread = times.spread(2);
  EXPECT_NEAR(spread.slowest, 12 / 6.0, 1e-12);
  EXPECT_NEAR(spread.typical, 1.5, 1e-12);
  // As independent draws (a job of four, two like each): rank 1's distribution squared is 0.49 at 14
  // and 0.64 at 16, where rank 0's is 1.
  EXPECT_NEAR(times.spread(4).slowest, 16 / 6.0, 1e-12);
  // Timed together (the profile's own two ranks): each step's slower rank, then their median. Rank 1
  // slow where rank 0 is fast: the slowest of each step is 6, 7, 8 against rank 0's median of 2.
  times.rank_steps = {{1, 2, 3}, {8, 7, 6}};
  EXPECT_NEAR(times.spread(2).slowest, 7.0 / 2.0, 1e-12);
  // Four ranks are not the profile's count: independent draws, two like each profiled rank; rank 1's
  // distribution squared is 4/9 at 7, so every rank is done in half the steps first at 8.
  EXPECT_NEAR(times.spread(4).slowest, 8.0 / 2.0, 1e-12);

  // The timeline is the slowest rank's; a typical rank waits the difference after its backward.
  const LayerCosts costs = two_layers();
  ComputeTimes profile = compute_from_throughput(costs, 100, 30);
  profile.rank_steps = {ten, ten, ten};  // three profiled ranks, a job of two: independent draws
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 60;
  const auto free_allreduce = [](std::size_t) { return BucketAllreduce{}; };
  const StepPrediction prediction =
      predict_step(costs, profile, settings, Topology{1, 2}, free_allreduce, false);
  EXPECT_NEAR(prediction.step, 0.3 * 8 / 6.0, 1e-12);
  EXPECT_NEAR(prediction.straggler, 0.3 * (8 / 6.0 - 1), 1e-12);
  EXPECT_NEAR(prediction.exposed, prediction.straggler, 1e-12);
  EXPECT_NEAR(prediction.single_device_images_per_second, 100, 1e-9);
}

// A rank's median is the upper middle of an even count; the slowest rank's search took the lower one,
// so two steps (0.01, 0.1) made a typical rank slower than the slowest and the straggler and exposed
// times negative. Both read the same middle now, and slowest >= typical at any rank count.
TEST(StepPrediction, TheSlowestRankIsNeverFasterThanATypicalOne) {
  ComputeTimes times = compute_from_throughput(two_layers(), 100, 30);
  times.rank_steps = {{0.01, 0.01}, {0.01, 0.1}};
  const RankSpread three = times.spread(3);  // ranks 0 and 2 like profile rank 0, rank 1 like rank 1
  EXPECT_NEAR(three.typical, (2 * 0.01 + 0.1) / 3 / 0.01, 1e-12);
  EXPECT_NEAR(three.slowest, 0.1 / 0.01, 1e-12);
  for (std::int64_t ranks = 2; ranks <= 64; ++ranks)
    EXPECT_GE(times.spread(ranks).slowest, times.spread(ranks).typical) << ranks;
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 90;
  const auto free_allreduce = [](std::size_t) { return BucketAllreduce{}; };
  const StepPrediction prediction =
      predict_step(two_layers(), times, settings, Topology{3, 1}, free_allreduce, false);
  EXPECT_GT(prediction.straggler, 0);
  EXPECT_GE(prediction.exposed, prediction.straggler);
  // Ranks all alike wait for nobody: exactly 0, not a rounding's -1e-19.
  times.rank_steps = {{0.1, 0.3, 0.7}};
  const StepPrediction alike =
      predict_step(two_layers(), times, settings, Topology{1, 1}, free_allreduce, false);
  EXPECT_EQ(alike.straggler, 0.0);
  EXPECT_EQ(alike.exposed, 0.0);
}

// Ranks are 64-bit: 65536 nodes of 32768 GPUs are 2^31 ranks, not a negative int.
TEST(StepPrediction, TopologyCountsRanksIn64Bits) {
  EXPECT_EQ((Topology{65536, 32768}.ranks()), std::int64_t{1} << 31);
}

// A bucket size far below the gradients (1e-9 MiB, or bytes wrapped to 0) would cut a bucket per
// float, millions of them; refused with exit 2 by their count. A step of no time is refused too,
// not printed as inf images/s and nan efficiency.
TEST(StepPrediction, TooManyBucketsAndAStepOfNoTimeAreRefused) {
  const LayerCosts costs = two_layers();
  StepSettings settings;
  settings.local_batch = 30;
  settings.global_batch = 60;
  settings.bucket_bytes = 0;
  const ComputeTimes times = compute_from_throughput(costs, 100, 30);
  try {
    predict_step(costs, times, settings, Topology{1, 2}, network(10));
    ADD_FAILURE() << "accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2) << error.what();
    EXPECT_NE(std::string(error.what()).find("--bucket-mb"), std::string::npos) << error.what();
  }
  settings.bucket_bytes = 25 << 20;
  ComputeTimes nothing;
  nothing.forward = nothing.backward = {0, 0};
  try {
    predict_step(costs, nothing, settings, Topology{1, 1}, network(10));
    ADD_FAILURE() << "accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2) << error.what();
  }
}

// --images-per-second inf or 1e-320 printed a step of 0 or inf ms: refused naming the option.
TEST(StepPrediction, ThroughputOutOfBoundsIsRefused) {
  for (const double rate : {std::numeric_limits<double>::infinity(), 1e-320, -5.0,
                            std::numeric_limits<double>::quiet_NaN(), 1e12}) {
    try {
      compute_from_throughput(two_layers(), rate, 32);
      ADD_FAILURE() << rate << " accepted";
    } catch (const Error& error) {
      EXPECT_EQ(error.exit_status(), 2) << error.what();
      EXPECT_NE(std::string(error.what()).find("--images-per-second"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace phalanx::testing
