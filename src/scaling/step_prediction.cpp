// The step timeline: bucket ready times from backward's layer order, all-reduces queued behind each
// other, the exposed remainder after backward.
#include "phalanx/scaling/step_prediction.hpp"

#include <algorithm>

#include "phalanx/comm/bucket_plan.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::scaling {

StepPrediction predict_step(const LayerCosts& costs, const ComputeTimes& times, const StepSettings& settings,
                            const Topology& topology, const Fabric& fabric) {
  // Checked once up front, so a fabric without a network is refused even when no bucket is cut.
  bottleneck_bus_bandwidth(topology, fabric);
  return predict_step(costs, times, settings, topology, [&](std::size_t bytes) {
    BucketAllreduce allreduce;
    allreduce.ring = best_protocol(Algorithm::Ring, bytes, topology, fabric);
    allreduce.tree = best_protocol(Algorithm::Tree, bytes, topology, fabric);
    allreduce.chosen = allreduce.tree.seconds < allreduce.ring.seconds ? allreduce.tree : allreduce.ring;
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
  const double backward_end = prediction.forward + prediction.backward;

  // When the slowest rank's backward finishes each layer: it runs the layers in reverse.
  std::vector<double> finished(costs.layers.size());
  double clock = prediction.forward;
  for (std::size_t index = costs.layers.size(); index-- > 0;) {
    clock += spread.slowest * times.backward[index];
    finished[index] = clock;
  }

  comm::BucketPlan plan(costs.gradient_elements, settings.bucket_bytes, settings.first_bucket_bytes);
  double previous_finish = 0;
  for (std::size_t index = 0; index < plan.size(); ++index) {
    const comm::BucketPlan::Bucket& bucket = plan[index];
    BucketTiming timing;
    timing.begin = bucket.begin;
    timing.end = bucket.end;
    timing.bytes = static_cast<std::size_t>(bucket.elements()) * settings.wire_bytes_per_element;
    // Whole once every layer holding one of its gradients is done; a range no layer holds (none in
    // a real model) waits for the end of backward, as GradSync starts the rest there.
    timing.ready = 0;
    bool held = false;
    for (std::size_t layer = 0; layer < costs.layers.size(); ++layer) {
      const LayerCost& cost = costs.layers[layer];
      if (cost.gradient_elements == 0) continue;
      if (cost.gradient_offset < bucket.end && cost.gradient_offset + cost.gradient_elements > bucket.begin) {
        timing.ready = std::max(timing.ready, finished[layer]);
        held = true;
      }
    }
    if (!held) timing.ready = backward_end;
    const BucketAllreduce allreduce = costing(timing.bytes);
    timing.ring = allreduce.ring;
    timing.tree = allreduce.tree;
    timing.chosen = allreduce.chosen;
    const double earliest = progresses_during_backward ? timing.ready : std::max(timing.ready, backward_end);
    timing.start = std::max(earliest, previous_finish);
    timing.finish = timing.start + timing.chosen.seconds;
    previous_finish = timing.finish;
    prediction.allreduce += timing.chosen.seconds;
    prediction.buckets.push_back(timing);
  }
  const double synced = std::max(backward_end, topology.ranks() > 1 ? previous_finish : 0.0);
  prediction.step = synced + prediction.optimizer;
  const double typical_backward_end = spread.typical * own_compute;
  prediction.straggler = backward_end - typical_backward_end;
  prediction.exposed = synced - typical_backward_end;
  prediction.images_per_second = settings.global_batch / prediction.step;
  prediction.single_device_images_per_second = settings.local_batch / (own_compute + times.optimizer);
  prediction.efficiency =
      prediction.images_per_second / (topology.ranks() * prediction.single_device_images_per_second);
  return prediction;
}

}  // namespace phalanx::scaling
