// Calibration: the measurements `phalanx scaling --profile` predicts from, taken on this machine.
// Per transport, the all-reduce's latency and inverse bandwidth fitted by least squares to the
// times of several sizes; per layer of a model, its forward and backward time on this rank's device;
// per gradient bucket, when backward makes it ready. Written as one JSON profile (docs/SCALING.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "phalanx/benchmark/allreduce_benchmark.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/scaling/layer_costs.hpp"

namespace phalanx::benchmark {

// time = latency + bytes x seconds_per_byte, fitted to the measured sizes.
struct TransportFit {
  std::string name;  // shared_memory, network (MPI between hosts) or nccl
  int ranks = 0;
  double latency = 0, seconds_per_byte = 0;
  std::vector<AllreduceResult> measured;
};

// Least squares of seconds on bytes in relative terms (each size weighted by 1 / its time squared,
// so the small sizes that set the latency count as much as the large ones that set the bandwidth),
// with the latency held at 0 or above (a negative intercept, which noise at the small sizes can
// give, is refitted through the origin). Needs two sizes or more.
TransportFit fit_transport(const std::string& name, int ranks, const std::vector<AllreduceResult>& measured);

struct LayerTiming {
  std::string name;
  double forward = 0, backward = 0;  // seconds at the calibration's batch
};

struct BucketReady {
  std::int64_t begin = 0, end = 0;
  double ready = 0;  // seconds after backward began
};

struct ModelTimings {
  int batch = 0, iterations = 0;
  double forward = 0;                // median of the passes
  double backward = 0;               // the median pass's
  std::vector<LayerTiming> layers;   // the LayerCosts layers, forward order
  std::vector<BucketReady> buckets;  // BucketPlan order
};

// Times `iterations` forward and backward passes of `model` at `batch` (after two untimed ones) on
// its backend. Backward reports each layer's gradients final as it finishes them (the callback
// gradient syncs use): the time between two reports is the backward of the layer reported (with
// the parameter-free layers run since); each pass waits for the device there, so a GPU's times are
// the device's. Layers and buckets are those of the pass with the median backward time (buckets cut
// as training cuts them). Forward has no such reports: its median is shared among the layers by
// multiply-adds.
ModelTimings time_model(nn::Model& model, const scaling::LayerCosts& costs, int batch, int iterations,
                        std::size_t bucket_bytes, std::size_t first_bucket_bytes = std::size_t{1} << 20);

nlohmann::json profile_json(const std::string& model_name, const std::string& device,
                            const ModelTimings& timings, const std::vector<TransportFit>& transports);

}  // namespace phalanx::benchmark
