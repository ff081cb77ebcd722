// The batch split: the largest-remainder rounding of measured rates, the throughput probe, and
// the checks that keep a resumed run on the split it was trained with (the data order and the
// gradient weights depend on it).
#include "setup/batch_split.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "phalanx/core/error.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/input_size.hpp"
#include "setup/probe_step.hpp"

namespace phalanx::train {
namespace {

constexpr int probe_warmup_steps = 2;  // the first steps build primitive caches and allocate
constexpr int probe_maximum_steps = 200;

std::string list_text(const std::vector<int>& values) {
  std::string text = "[";
  for (std::size_t index = 0; index < values.size(); ++index)
    text += (index ? ", " : "") + std::to_string(values[index]);
  return text + "]";
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::int64_t BatchSplit::global_batch() const {
  return std::accumulate(local_batches.begin(), local_batches.end(), std::int64_t{0});
}

std::string BatchSplit::description() const {
  std::string text;
  for (std::size_t rank = 0; rank < local_batches.size(); ++rank) {
    text += (rank ? ", rank " : "rank ") + std::to_string(rank) + " ";
    if (rank < devices.size()) text += devices[rank] + " ";
    text += std::to_string(local_batches[rank]);
    if (rank < images_per_second.size())
      text += " (" + std::to_string(static_cast<long long>(std::lround(images_per_second[rank]))) + " img/s)";
  }
  return text;
}

nlohmann::json BatchSplit::to_json() const {
  nlohmann::json result = {
      {"method", method}, {"local_batches", local_batches}, {"global_batch", global_batch()}};
  if (!checkpoint_local_batches.empty()) result["checkpoint_local_batches"] = checkpoint_local_batches;
  if (!devices.empty()) result["devices"] = devices;
  if (!images_per_second.empty()) result["images_per_sec"] = images_per_second;
  if (probe_seconds > 0) result["probe_seconds"] = probe_seconds;
  if (!stored_in.empty()) result["stored_in"] = stored_in;
  return result;
}

std::vector<int> split_by_throughput(std::int64_t global_batch, const std::vector<double>& rates) {
  const auto ranks = static_cast<std::int64_t>(rates.size());
  PHALANX_CHECK(ranks >= 1 && global_batch >= ranks, "global batch ", global_batch, " over ", ranks,
                " ranks");
  // A rank that measured nothing usable (0, negative, NaN) counts as the slowest possible.
  std::vector<double> usable(rates.size());
  std::transform(rates.begin(), rates.end(), usable.begin(),
                 [](double rate) { return std::isfinite(rate) && rate > 0 ? rate : 0.0; });
  const double total = std::accumulate(usable.begin(), usable.end(), 0.0);
  if (total <= 0) std::fill(usable.begin(), usable.end(), 1.0);
  const double sum = total > 0 ? total : static_cast<double>(ranks);

  std::vector<int> batches(rates.size());
  std::vector<double> remainders(rates.size());
  std::int64_t assigned = 0;
  for (std::size_t rank = 0; rank < rates.size(); ++rank) {
    const double share = static_cast<double>(global_batch) * usable[rank] / sum;
    batches[rank] = static_cast<int>(std::min<double>(std::floor(share), static_cast<double>(global_batch)));
    remainders[rank] = share - batches[rank];
    assigned += batches[rank];
  }
  std::vector<std::size_t> order(rates.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
  for (std::size_t index = 0; assigned < global_batch; ++index, ++assigned)
    ++batches[order[index % order.size()]];
  while (assigned > global_batch) {  // floating-point excess: take back from the largest
    --*std::max_element(batches.begin(), batches.end());
    --assigned;
  }
  // Every rank trains at least one sample: it must take part in every step's all-reduce anyway.
  for (auto& batch : batches)
    if (batch < 1) {
      ++batch;
      --*std::max_element(batches.begin(), batches.end());
    }
  return batches;
}

ThroughputProbe measure_throughput(const config::Config& config, backend::Backend& backend, int batch,
                                   int minimum_steps, double minimum_seconds) {
  const double start = now();
  const data::DatasetInfo info = data::read_source_info(config.data);
  const auto* split = info.find_split(config.data.train_split);
  PHALANX_REQUIRE_INPUT(split != nullptr, config.data.path, ": no split '", config.data.train_split,
                        "' (data.train_split)");
  ProbeStep step(config, backend,
                 model_sample_shape(config.data, split->height, split->width, split->channels,
                                    data::source_name(config.data)),
                 static_cast<int>(info.classes.size()), batch);
  for (int warmup = 0; warmup < probe_warmup_steps; ++warmup) step.run();
  ThroughputProbe probe;
  const double timed_start = now();
  double timed = 0;
  while (probe.timed_steps < probe_maximum_steps &&
         (probe.timed_steps < minimum_steps || timed < minimum_seconds)) {
    step.run();
    ++probe.timed_steps;
    timed = now() - timed_start;
  }
  probe.images_per_second = timed > 0 ? static_cast<double>(probe.timed_steps) * batch / timed : 0.0;
  probe.seconds = now() - start;
  return probe;
}

void require_split_fits(const config::Config& config, int world_size) {
  const auto& local_batches = config.distributed.local_batches;
  PHALANX_REQUIRE_INPUT(local_batches.empty() || static_cast<int>(local_batches.size()) == world_size,
                        "distributed.local_batches has ", local_batches.size(), " entries ",
                        list_text(local_batches), " but the job has ", world_size,
                        " ranks: give one local batch per rank");
}

bool is_elastic_resume(const CheckpointHeader& header, int world_size) {
  return header.world_size != world_size;
}

std::vector<int> elastic_split(const CheckpointHeader& header, const config::Config& config, int world_size,
                               const std::vector<double>& rates) {
  const std::string& checkpoint = header.path;
  const std::int64_t global_batch = stored_global_batch(header);
  const std::string written = checkpoint + ": written by " + std::to_string(header.world_size) +
                              " ranks with global batch " + std::to_string(global_batch) + ", resumed on " +
                              std::to_string(world_size) + " ranks";
  PHALANX_REQUIRE_INPUT(global_batch >= world_size, written,
                        ": the global batch cannot give every rank a sample; resume on at most ",
                        global_batch,
                        " ranks, or set elastic.global_batch: change to train with another global batch");
  const auto& explicit_split = config.distributed.local_batches;
  if (!explicit_split.empty()) {
    const std::int64_t sum = std::accumulate(explicit_split.begin(), explicit_split.end(), std::int64_t{0});
    PHALANX_REQUIRE_INPUT(sum == global_batch, written, ": distributed.local_batches ",
                          list_text(explicit_split), " adds up to ", sum,
                          ", not the checkpoint's global batch; give local batches that add "
                          "up to ",
                          global_batch, ", drop the key, or set elastic.global_batch: change");
    return explicit_split;
  }
  // Equal rates give the even split: the largest-remainder rule hands the leftover samples to the
  // lower ranks.
  const bool measured =
      config.distributed.batch_split == config::BatchSplitRule::Throughput && static_cast<int>(rates.size()) == world_size;
  return split_by_throughput(
      global_batch, measured ? rates : std::vector<double>(static_cast<std::size_t>(world_size), 1.0));
}

std::vector<int> stored_split(const CheckpointHeader& header, const config::Config& config, int world_size) {
  const std::string& checkpoint = header.path;
  std::vector<int> stored = header.local_batches;
  if (stored.empty())
    stored.assign(static_cast<std::size_t>(std::max(header.world_size, 0)),
                  config::parse(header.config_text, checkpoint + ":/config").train.batch_size);
  PHALANX_REQUIRE_INPUT(header.world_size == world_size, checkpoint, ": written by ", header.world_size,
                        " ranks with local batches ", list_text(stored), "; resume it with ",
                        header.world_size, " ranks (now ", world_size,
                        ") so the data order and the batch split continue exactly");
  const auto& explicit_split = config.distributed.local_batches;
  PHALANX_REQUIRE_INPUT(explicit_split.empty() || explicit_split == stored, checkpoint,
                        ": trained with local batches ", list_text(stored),
                        " but distributed.local_batches is ", list_text(explicit_split),
                        "; a resumed run keeps its split (drop the key or give ", list_text(stored), ")");
  // The even cut of an elastic resume (the global batch not divisible by the ranks) is not a
  // measured split: it needs no throughput setting.
  const bool stored_equal =
      std::all_of(stored.begin(), stored.end(), [&](int batch) { return batch == stored[0]; }) ||
      stored == split_by_throughput(std::accumulate(stored.begin(), stored.end(), std::int64_t{0}),
                                    std::vector<double>(stored.size(), 1.0));
  PHALANX_REQUIRE_INPUT(
      stored_equal || !explicit_split.empty() || config.distributed.batch_split == config::BatchSplitRule::Throughput, checkpoint,
      ": trained with the uneven batch split ", list_text(stored),
      " but distributed.batch_split is equal; resume with distributed.batch_split: "
      "throughput (the stored split is reused, not measured again)");
  return stored;
}

bool asks_for_split(const config::Config& config) {
  return config.distributed.batch_split == config::BatchSplitRule::Throughput || !config.distributed.local_batches.empty();
}

SplitPlan plan_batch_split(const config::Config& config, const CheckpointHeader* resume, int world_size) {
  require_split_fits(config, world_size);
  SplitPlan plan;
  // With elastic.global_batch: change the checkpoint's split does not matter: the split is made as
  // for a new run.
  plan.fresh = !resume || config.elastic.global_batch == config::ResumeGlobalBatch::Change;
  plan.elastic = !plan.fresh && is_elastic_resume(*resume, world_size);
  plan.measure = (plan.fresh || plan.elastic) && config.distributed.local_batches.empty() &&
                 config.distributed.batch_split == config::BatchSplitRule::Throughput;
  return plan;
}

BatchSplit decide_batch_split(const config::Config& config, const CheckpointHeader* resume,
                              const SplitPlan& plan, const SplitMeasurements& measured) {
  BatchSplit split;
  const int world_size = static_cast<int>(measured.gpu.size());
  if (plan.elastic) {
    split.method = !config.distributed.local_batches.empty() ? "explicit" : plan.measure ? "throughput" : "equal";
    split.local_batches = elastic_split(*resume, config, world_size, measured.rates);
    split.checkpoint_local_batches = resume->local_batches;
    if (split.checkpoint_local_batches.empty())
      split.checkpoint_local_batches.assign(static_cast<std::size_t>(resume->world_size),
                                            static_cast<int>(stored_global_batch(*resume) / resume->world_size));
    split.stored_in = resume->path;
  } else if (!plan.fresh) {
    const std::vector<int> stored = stored_split(*resume, config, world_size);
    // Stored splits of equal runs at train.batch_size need no mention; anything else (an uneven
    // split, or the even split of an elastic resume) is reused as stored.
    if (std::all_of(stored.begin(), stored.end(), [&](int batch) { return batch == config.train.batch_size; }) &&
        !asks_for_split(config))
      return split;
    split.method =
        config.distributed.local_batches.empty() ? config::name_of(config.distributed.batch_split) : "explicit";
    split.local_batches = stored;
    split.stored_in = resume->path;
  } else if (!config.distributed.local_batches.empty()) {
    split.method = "explicit";
    split.local_batches = config.distributed.local_batches;
  } else if (plan.measure) {
    split.method = "throughput";
    split.local_batches = split_by_throughput(static_cast<std::int64_t>(config.train.batch_size) * world_size,
                                              measured.rates);
  } else {
    return split;
  }
  if (plan.measure) {
    split.images_per_second = measured.rates;
    split.probe_seconds = measured.probe_seconds;
  }
  for (const bool gpu : measured.gpu) split.devices.push_back(gpu ? "cuda" : "cpu");
  return split;
}

}  // namespace phalanx::train
