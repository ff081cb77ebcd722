// StepPrediction: one training step of a data-parallel job as a timeline. Forward, then backward
// layer by layer in reverse; each gradient bucket (the real BucketPlan cut) becomes ready when
// backward has finished every layer whose gradients it holds, and its all-reduce starts once it is
// ready and the previous bucket's all-reduce has finished (collectives run one after the other, in
// the same order on every rank); then the update. The timeline is the slowest rank's (a bucket is
// summed once every rank has it): where the compute times carry the ranks' steps
// (ComputeTimes::spread), it is stretched to the slowest rank's median step. What a typical rank
// waits after its own backward, for the slowest rank and for the all-reduce, is exposed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "phalanx/scaling/allreduce_cost_model.hpp"
#include "phalanx/scaling/compute_times.hpp"
#include "phalanx/scaling/layer_costs.hpp"
#include "phalanx/scaling/measured_transport.hpp"

namespace phalanx::scaling {

// Whose gradient buckets the prediction cuts (the published studies ran other frameworks):
// - Phalanx: the flat gradient buffer cut from its end (comm::BucketPlan), a layer split where a
//   bucket ends;
// - Ddp: PyTorch DDP's, whole tensors from the last layer back, a bucket closed once it holds at
//   least its cap (the first's 1 MiB, then bucket_bytes), the tensor that reached it included;
// - Horovod: Horovod's tensor fusion, every `fusion_cycle` seconds the tensors that became ready
//   since the last cycle, whole, fused in order while the sum stays within bucket_bytes (a larger
//   tensor alone); a bucket is ready at its cycle.
enum class BucketCut { Phalanx, Ddp, Horovod };
std::string name_of(BucketCut cut);
// "phalanx", "ddp" or "horovod"; throws InvalidInput naming `option` otherwise.
BucketCut parse_bucket_cut(const std::string& text, const std::string& option);

struct StepSettings {
  int local_batch = 1;                               // the largest rank's: it sets the pace
  std::int64_t global_batch = 1;                     // images per step over all ranks
  std::size_t bucket_bytes = std::size_t{25} << 20;  // distributed.bucket_mb
  std::size_t first_bucket_bytes = std::size_t{1} << 20;
  std::size_t wire_bytes_per_element = 4;  // what a gradient travels as (fp32, or bf16 over NCCL)
  BucketCut bucket_cut = BucketCut::Phalanx;
  double fusion_cycle = 0.005;  // seconds; Horovod's cycle (HOROVOD_CYCLE_TIME, 5 ms)
};

struct BucketTiming {
  std::int64_t begin = 0, end = 0;          // element range in the gradient buffer
  std::size_t bytes = 0;                    // on the wire
  double ready = 0, start = 0, finish = 0;  // seconds from the start of the step
  AllreduceEstimate ring, tree, chosen;
};

struct StepPrediction {
  Topology topology;
  double forward = 0, backward = 0;  // seconds of compute (and MPI calls in it), the slowest rank's
  double optimizer = 0;              // seconds of the update after the all-reduce, the slowest rank's
  double allreduce = 0;              // seconds of all-reduce in all (overlapped or not)
  double exposed = 0;                // seconds a typical rank waits after its backward (straggler included)
  double straggler = 0;              // of which waiting for the slowest rank to finish its backward
  RankSpread spread;                 // the ranks' steps against the profile's rank 0 (ComputeTimes::spread)
  double step = 0;
  double images_per_second = 0;
  double single_device_images_per_second = 0;  // one device, the same local batch, no all-reduce or wait
  double efficiency = 0;                       // images/s over (ranks x one device's images/s)
  std::vector<BucketTiming> buckets;           // in the order their all-reduces start

  double exposed_share() const { return step > 0 ? exposed / step : 0; }
};

// What one bucket's all-reduce of `bytes` costs: its ring and tree estimates and the one it uses;
// on a transport that advances only inside MPI calls, how (CallStages; empty where not measured).
struct BucketAllreduce {
  AllreduceEstimate ring, tree, chosen;
  CallStages stages;
};
using AllreduceCosting = std::function<BucketAllreduce(std::size_t bytes)>;

// `times` are for settings.local_batch; throws InvalidInput when the ranks span nodes on a fabric
// without a network. NCCL's cost model on `fabric` (per bucket the faster of the `allowed`
// algorithms; both are estimated for the printout).
StepPrediction predict_step(const LayerCosts& costs, const ComputeTimes& times, const StepSettings& settings,
                            const Topology& topology, const Fabric& fabric, AlgorithmChoice allowed = {});
// The same timeline with each bucket's all-reduce costed by `costing` (a measured transport). Where
// the transport does not progress during backward (MPI, MeasuredTransport), an all-reduce advances
// only at MPI calls: the slowest rank's one test per layer report in backward (GradSync), then its
// wait. Each of its stages starts at the first call after the one before it has run (the first at
// its launch), and a call that does the moving itself holds its rank for the stage's
// seconds_in_calls (backward grows by them). Without stages, no all-reduce starts before the slowest
// rank's backward has ended.
StepPrediction predict_step(const LayerCosts& costs, const ComputeTimes& times, const StepSettings& settings,
                            const Topology& topology, const AllreduceCosting& costing,
                            bool progresses_during_backward = true);

}  // namespace phalanx::scaling
