// Calibration: the measurements `phalanx scaling --profile` predicts from, taken on this machine.
// Per transport, the all-reduce's latency and inverse bandwidth fitted by least squares to the
// times of several sizes; per layer of a model, its forward and backward time on this rank's device;
// per gradient bucket, when backward makes it ready. Written as one JSON profile (docs/SCALING.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phalanx/benchmark/allreduce_benchmark.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/optimizer.hpp"
#include "phalanx/scaling/layer_costs.hpp"

namespace phalanx::benchmark {

// time = latency + bytes x seconds_per_byte, fitted to the measured sizes.
struct TransportFit {
  std::string name;  // shared_memory, network (MPI between hosts) or nccl
  int ranks = 0;
  double latency = 0, seconds_per_byte = 0;
  std::vector<AllreduceResult> measured;
  // MPI transports: how each measured size advances at sparse MPI calls (same sizes, same order);
  // empty for NCCL, which runs on its own stream.
  std::vector<ProgressStages> progress;
};

// Least squares of seconds on bytes in relative terms (each size weighted by 1 / its time squared,
// so the small sizes that set the latency count as much as the large ones that set the bandwidth),
// with the latency held at 0 or above (a negative intercept, which noise at the small sizes can
// give, is refitted through the origin). Needs two sizes or more.
TransportFit fit_transport(const std::string& name, int ranks, const std::vector<AllreduceResult>& measured);

struct LayerTiming {
  std::string name;
  double forward = 0, backward = 0;  // seconds at the calibration's batch
  std::int64_t multiply_adds = 0;    // per image: the scaling command refuses a profile of another shape
};

struct BucketReady {
  std::int64_t begin = 0, end = 0;
  double ready = 0;  // seconds after backward began
};

struct ModelTimings {
  int batch = 0, iterations = 0;
  double forward = 0;                // median of the whole passes (the loss included)
  double backward = 0;               // median of the whole passes
  double optimizer = 0;              // median of the updates; 0 without an optimizer
  std::vector<double> steps;         // each whole step: forward + backward + update, in run order
  std::vector<LayerTiming> layers;   // the LayerCosts layers, forward order
  std::vector<BucketReady> buckets;  // BucketPlan order
};

// Times `model` at `batch` on its backend, after two untimed steps, in two kinds of pass:
// - `iterations` layer passes: backward reports each layer's gradients final as it finishes them
//   (the callback gradient syncs use); the time between two reports is the backward of the layer
//   reported (with the parameter-free layers run since). Each report waits for the device, so a
//   GPU's times are the device's. Layers and buckets are read from the pass with the median backward
//   time (buckets cut as training cuts them).
// - `iterations` whole steps as training runs them: forward with the loss, backward with no wait
//   inside it, and `optimizer`'s update (when given), each waited for at its end. Their medians are
//   the step's; the layers' backward times and the buckets' ready times are scaled to the median
//   whole backward (a wait per layer costs a GPU its queued launches, and a CPU nothing), and
//   forward, which has no reports, is shared among the layers by multiply-adds.
// `optimizer` updates the model's weights: time a copy of the run's model, not the run's own.
// `align`, when given, runs before each whole step untimed: a barrier over the ranks, so that they
// step in lockstep as training's all-reduce holds them, and contend for the memory and caches they
// share in the same phases.
ModelTimings time_model(nn::Model& model, const scaling::LayerCosts& costs, int batch, int iterations,
                        std::size_t bucket_bytes, std::size_t first_bucket_bytes = std::size_t{1} << 20,
                        optim::Optimizer* optimizer = nullptr, const std::function<void()>& align = {});

// One rank's whole-step times, for the profile's `ranks` (what the slowest of N ranks costs a step).
struct RankSteps {
  int rank = 0;
  std::string host;
  std::vector<double> steps;
};

// The profile (docs/SCALING.md): `timings` are the writing rank's, `ranks` every rank's steps as they
// ran side by side, `precision` the arithmetic they ran in.
nlohmann::json profile_json(const std::string& model_name, const std::string& device,
                            const std::string& precision, const ModelTimings& timings,
                            const std::vector<RankSteps>& ranks, const std::vector<TransportFit>& transports);

}  // namespace phalanx::benchmark
