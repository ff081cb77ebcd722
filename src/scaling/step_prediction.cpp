// The step timeline: bucket ready times from backward's layer order, all-reduces queued behind each
// other, the exposed remainder after backward.
#include "phalanx/scaling/step_prediction.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "phalanx/comm/bucket_plan.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::scaling {
namespace {

// The timeline costs each bucket against every layer, and the printout has a row per bucket: past
// this many, the bucket size is a slip (1e-9 MiB), not a plan.
constexpr std::int64_t most_buckets = std::int64_t{1} << 16;

// One bucket as a framework cuts it: an element range of the gradient buffer, and where the cut
// fixes it, when it is ready (a Horovod cycle); otherwise it is ready when its layers are.
struct PlannedBucket {
  std::int64_t begin = 0, end = 0;
  std::optional<double> ready;
};

// Whole layers from the last back (the order backward finishes them), each bucket closed as `full`
// says: DDP's and Horovod's fusion never split a tensor.
std::vector<PlannedBucket> whole_layer_buckets(const LayerCosts& costs,
                                               const std::vector<std::size_t>& holders,
                                               const std::vector<double>& finished,
                                               const StepSettings& settings) {
  const auto elements_of = [](std::size_t bytes) { return static_cast<std::int64_t>(bytes / sizeof(float)); };
  std::vector<PlannedBucket> buckets;
  if (settings.bucket_cut == BucketCut::Ddp) {
    // DDP closes a bucket once it holds at least its cap: the first's, then the rest's.
    std::int64_t cap = elements_of(settings.first_bucket_bytes);
    for (auto holder = holders.rbegin(); holder != holders.rend(); ++holder) {
      const LayerCost& layer = costs.layers[*holder];
      if (buckets.empty() || buckets.back().end - buckets.back().begin >= cap) {
        if (!buckets.empty()) cap = elements_of(settings.bucket_bytes);
        buckets.push_back({layer.gradient_offset, layer.gradient_offset + layer.gradient_elements, {}});
      } else {
        buckets.back().begin = layer.gradient_offset;
      }
    }
    return buckets;
  }
  // Horovod: at each cycle the layers finished since the last, fused in order while the sum stays
  // within the threshold; a layer that does not fit starts the next, one larger than it goes alone.
  const std::int64_t cap = elements_of(settings.bucket_bytes);
  auto holder = holders.rbegin();
  while (holder != holders.rend()) {
    // The first cycle at or after the next layer's end (cycles from the step's start); skipping the
    // empty ones keeps a long backward from costing a loop per cycle.
    double cycle = std::ceil(finished[*holder] / settings.fusion_cycle) * settings.fusion_cycle;
    if (cycle < finished[*holder]) cycle += settings.fusion_cycle;
    bool fusing = false;
    for (; holder != holders.rend() && finished[*holder] <= cycle; ++holder) {
      const LayerCost& layer = costs.layers[*holder];
      const std::int64_t end = layer.gradient_offset + layer.gradient_elements;
      if (fusing && buckets.back().end - layer.gradient_offset <= cap) {
        buckets.back().begin = layer.gradient_offset;
      } else {
        buckets.push_back({layer.gradient_offset, end, cycle});
        fusing = true;
      }
    }
  }
  return buckets;
}

}  // namespace

std::string name_of(BucketCut cut) {
  return cut == BucketCut::Phalanx ? "phalanx" : cut == BucketCut::Ddp ? "ddp" : "horovod";
}

BucketCut parse_bucket_cut(const std::string& text, const std::string& option) {
  for (const BucketCut cut : {BucketCut::Phalanx, BucketCut::Ddp, BucketCut::Horovod})
    if (text == name_of(cut)) return cut;
  PHALANX_REQUIRE_INPUT(false, option, ": '", text, "' must be phalanx, ddp or horovod");
  return BucketCut::Phalanx;
}

StepPrediction predict_step(const LayerCosts& costs, const ComputeTimes& times, const StepSettings& settings,
                            const Topology& topology, const Fabric& fabric, AlgorithmChoice allowed) {
  // Checked once up front, so a fabric without a network is refused even when no bucket is cut.
  bottleneck_bus_bandwidth(topology, fabric);
  return predict_step(costs, times, settings, topology, [&](std::size_t bytes) {
    BucketAllreduce allreduce;
    allreduce.ring = best_protocol(Algorithm::Ring, bytes, topology, fabric);
    allreduce.tree = best_protocol(Algorithm::Tree, bytes, topology, fabric);
    allreduce.chosen = faster_allowed(allreduce.ring, allreduce.tree, allowed);
    return allreduce;
  });
}

StepPrediction predict_step(const LayerCosts& costs, const ComputeTimes& times, const StepSettings& settings,
                            const Topology& topology, const AllreduceCosting& costing,
                            bool progresses_during_backward) {
  PHALANX_CHECK(times.forward.size() == costs.layers.size() && times.backward.size() == costs.layers.size(),
                "compute times for ", times.forward.size(), " layers, the model has ", costs.layers.size());
  StepPrediction prediction;
  prediction.topology = topology;
  prediction.spread = times.spread(topology.ranks());
  const RankSpread& spread = prediction.spread;
  const double own_compute = times.forward_seconds() + times.backward_seconds();
  prediction.forward = spread.slowest * times.forward_seconds();
  prediction.backward = spread.slowest * times.backward_seconds();
  prediction.optimizer = spread.slowest * times.optimizer;
  double backward_end = prediction.forward + prediction.backward;

  // When the slowest rank's backward finishes each layer: it runs the layers in reverse. A layer
  // with gradients reports them, and GradSync tests its all-reduces there: an MPI call.
  std::vector<double> finished(costs.layers.size());
  std::vector<double> calls;
  double clock = prediction.forward;
  for (std::size_t index = costs.layers.size(); index-- > 0;) {
    clock += spread.slowest * times.backward[index];
    finished[index] = clock;
    if (costs.layers[index].gradient_elements > 0) calls.push_back(clock);
  }
  backward_end = clock;  // the same sum, in the same order as the calls
  const double slowest_compute_end = clock;
  // The first MPI call at or after `time` and after the call at `after`: a layer report in backward,
  // or at once in the wait (which calls MPI until the all-reduces are done). The last report comes
  // as backward's last layer ends, but it is still backward's: the trainer's backward stage ends
  // after the report's launch and test, so what they hold the rank is backward's time, not the
  // wait's.
  struct Call {
    double time;
    bool report;  // a layer report in backward, where a call that moves data holds the rank
  };
  const auto next_call = [&](double time, double after) {
    const auto found =
        std::find_if(calls.begin(), calls.end(), [&](double call) { return call > after && call >= time; });
    if (found != calls.end()) return Call{*found, true};
    return Call{std::max(time, backward_end), false};
  };
  // A call at `time` in backward that holds the rank `seconds` delays all that comes after it.
  double held = 0;
  const auto hold = [&](double time, double seconds) {
    for (double& call : calls)
      if (call > time) call += seconds;
    for (double& layer : finished)
      if (layer > time) layer += seconds;
    backward_end += seconds;
    held += seconds;
  };

  // The layers that hold gradients, by offset: each bucket finds the ones it overlaps by a binary
  // search, not by a pass over all (layers x buckets was seconds for a table of 65,536 layers).
  std::vector<std::size_t> holders;
  for (std::size_t layer = 0; layer < costs.layers.size(); ++layer)
    if (costs.layers[layer].gradient_elements > 0) holders.push_back(layer);
  std::stable_sort(holders.begin(), holders.end(), [&](std::size_t left, std::size_t right) {
    return costs.layers[left].gradient_offset < costs.layers[right].gradient_offset;
  });
  std::vector<PlannedBucket> plan;
  if (settings.bucket_cut == BucketCut::Phalanx) {
    const auto bucket_elements =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(settings.bucket_bytes / sizeof(float)));
    const std::int64_t bucket_count = costs.gradient_elements / bucket_elements + 1;
    PHALANX_REQUIRE_INPUT(bucket_count <= most_buckets, "buckets of ", settings.bucket_bytes, " bytes cut ",
                          costs.gradient_elements, " gradients into ", bucket_count, " buckets, more than ",
                          most_buckets, ": give a larger --bucket-mb (or distributed.bucket_mb)");
    const comm::BucketPlan cut(costs.gradient_elements, settings.bucket_bytes, settings.first_bucket_bytes);
    for (std::size_t index = 0; index < cut.size(); ++index)
      plan.push_back({cut[index].begin, cut[index].end, {}});
  } else {
    PHALANX_CHECK(settings.fusion_cycle > 0, "a fusion cycle of ", settings.fusion_cycle, " s");
    plan = whole_layer_buckets(costs, holders, finished, settings);
  }
  const auto layer_end = [&](std::size_t layer) {
    return costs.layers[layer].gradient_offset + costs.layers[layer].gradient_elements;
  };
  double previous_finish = 0;
  for (std::size_t index = 0; index < plan.size(); ++index) {
    const PlannedBucket& bucket = plan[index];
    BucketTiming timing;
    timing.begin = bucket.begin;
    timing.end = bucket.end;
    timing.bytes = static_cast<std::size_t>(bucket.end - bucket.begin) * settings.wire_bytes_per_element;
    // Whole once every layer holding one of its gradients is done; a range no layer holds (none in
    // a real model) waits for the end of backward, as GradSync starts the rest there.
    timing.ready = 0;
    bool whole_layers = false;
    // Layers' ranges do not overlap, so by offset their ends rise too: the first that ends past
    // the bucket's begin, then each that starts before its end.
    auto holder = std::partition_point(holders.begin(), holders.end(),
                                       [&](std::size_t layer) { return layer_end(layer) <= bucket.begin; });
    for (; holder != holders.end() && costs.layers[*holder].gradient_offset < bucket.end; ++holder) {
      timing.ready = std::max(timing.ready, finished[*holder]);
      whole_layers = true;
    }
    if (!whole_layers) timing.ready = backward_end;
    if (bucket.ready) timing.ready = *bucket.ready;
    // One rank sums nothing: no all-reduce, whatever a measured transport's fit would charge.
    const BucketAllreduce allreduce = topology.ranks() > 1 ? costing(timing.bytes) : BucketAllreduce{};
    timing.ring = allreduce.ring;
    timing.tree = allreduce.tree;
    timing.chosen = allreduce.chosen;
    if (progresses_during_backward) {
      timing.start = std::max(timing.ready, previous_finish);
      timing.finish = timing.start + timing.chosen.seconds;
    } else if (allreduce.stages.stages.empty() || topology.ranks() <= 1) {  // one rank makes no MPI call
      timing.start = std::max({timing.ready, backward_end, previous_finish});
      timing.finish = timing.start + timing.chosen.seconds;
    } else {
      // Collectives one after the other: this one's first stage at the first call once it is
      // launched and the one before it is done.
      Call call = next_call(std::max(timing.ready, previous_finish), -1);
      timing.start = call.time;
      double time = call.time;
      const CallStages& stages = allreduce.stages;
      // GradSync tests its all-reduces right after it launches one (gradients_ready). Where this
      // bucket is launched at this call (not queued behind the one before it) and its launch starts
      // nothing that takes time, that test is the call that starts stage 1: the slowest rank
      // launches last, so the others' first messages are already there for it to find.
      const double stages_sum = std::accumulate(stages.stages.begin(), stages.stages.end(), 0.0);
      const bool launch_test_starts_stage_1 =
          timing.ready >= previous_finish && stages.stages.front() <= std::max(2e-6, 0.01 * stages_sum);
      for (std::size_t stage = 0; stage < stages.stages.size(); ++stage) {
        // A stage needs a call of its own: one that ends its stage at once leaves the next to the
        // call after it.
        if (stage > 0 && !(stage == 1 && launch_test_starts_stage_1)) {
          call = next_call(time, call.time);
          time = call.time;
        }
        if (call.report && stages.seconds_in_calls[stage] > 0)
          hold(call.time, stages.seconds_in_calls[stage]);
        time += stages.stages[stage];
      }
      timing.finish = time;
    }
    previous_finish = timing.finish;
    prediction.allreduce += timing.chosen.seconds;
    prediction.buckets.push_back(timing);
  }
  prediction.backward += held;
  const double synced = std::max(backward_end, topology.ranks() > 1 ? previous_finish : 0.0);
  prediction.step = synced + prediction.optimizer;
  // A typical rank makes the same calls in its backward, and is held as long in them.
  // A typical rank's compute is the slowest's scaled by typical / slowest (<= 1): from the same sum,
  // so one rank, or ranks all alike, wait exactly 0 for the slowest, and never less than 0.
  const double typical_backward_end = slowest_compute_end * (spread.typical / spread.slowest) + held;
  prediction.straggler = std::max(0.0, backward_end - typical_backward_end);
  prediction.exposed = std::max(0.0, synced - typical_backward_end);
  const double single_device_step = own_compute + times.optimizer;
  // The inputs' bounds keep these finite; a step of no time would print inf images/s and nan
  // efficiency, so it is refused here too rather than printed.
  PHALANX_REQUIRE_INPUT(prediction.step > 0 && single_device_step > 0 && std::isfinite(prediction.step) &&
                            std::isfinite(single_device_step) && std::isfinite(prediction.allreduce),
                        "the prediction at ", topology.ranks(), " rank(s) comes to a step of ",
                        prediction.step, " s (one device: ", single_device_step, " s) from compute ",
                        times.source, ": a figure of the model, the compute or the fabric is out of range");
  prediction.images_per_second = static_cast<double>(settings.global_batch) / prediction.step;
  prediction.single_device_images_per_second = settings.local_batch / single_device_step;
  prediction.efficiency = prediction.images_per_second / (static_cast<double>(topology.ranks()) *
                                                          prediction.single_device_images_per_second);
  return prediction;
}

}  // namespace phalanx::scaling
