// Per-layer compute times for the scaling model: from one device's throughput or from a profile.
#include "phalanx/scaling/compute_times.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "json_fields.hpp"
#include "phalanx/core/median.hpp"

namespace phalanx::scaling {

double ComputeTimes::forward_seconds() const {
  return std::accumulate(forward.begin(), forward.end(), 0.0);
}
double ComputeTimes::backward_seconds() const {
  return std::accumulate(backward.begin(), backward.end(), 0.0);
}

RankSpread ComputeTimes::spread(std::int64_t ranks) const {
  RankSpread spread;
  if (ranks <= 1 || rank_steps.empty() || rank_steps[0].empty()) return spread;
  const std::size_t profiled = rank_steps.size();
  const double own = median(rank_steps[0]);
  // How many of the job's ranks step like each profiled rank, and their own medians together.
  // Rank r steps like profile rank r mod (profile ranks): profile rank p stands for the ranks
  // p, p + profiled, ... below `ranks`.
  const auto cycle = static_cast<std::int64_t>(profiled);
  std::vector<double> copies(profiled, 0.0);
  for (std::size_t rank = 0; rank < profiled; ++rank)
    copies[rank] = static_cast<double>((ranks - static_cast<std::int64_t>(rank) + cycle - 1) / cycle);
  double medians = 0, largest_median = 0;
  for (std::size_t rank = 0; rank < profiled; ++rank) {
    if (copies[rank] == 0) continue;
    medians += copies[rank] * median(rank_steps[rank]);
    largest_median = std::max(largest_median, median(rank_steps[rank]));
  }
  // The mean of the medians is at most the largest of them, and so at most the slowest rank's
  // median step below; rounding in the sum must not make a typical rank slower than the slowest.
  spread.typical = std::min(medians / static_cast<double>(ranks), largest_median) / own;

  const bool lockstep = static_cast<std::size_t>(ranks) == profiled &&
                        std::all_of(rank_steps.begin(), rank_steps.end(),
                                    [&](const auto& steps) { return steps.size() == rank_steps[0].size(); });
  if (lockstep) {
    // The profile's own rank count: its steps were timed together, k-th with k-th, so the slowest
    // rank of each is read off directly, and what slowed every rank at once counts once.
    std::vector<double> slowest_of_each(rank_steps[0].size(), 0.0);
    for (const auto& steps : rank_steps)
      for (std::size_t step = 0; step < steps.size(); ++step)
        slowest_of_each[step] = std::max(slowest_of_each[step], steps[step]);
    spread.slowest = median(slowest_of_each) / own;
    return spread;
  }
  // Independent draws: the smallest step time at which every rank is done in more than half the
  // steps. "More than" matches median(), the upper middle of an even count: one rank's own median
  // is the smallest t with more than half its steps <= t, and where the product of the ranks'
  // distributions passes 1/2 each of them has, so the slowest is never below a rank's median.
  std::vector<std::vector<double>> sorted = rank_steps;
  std::vector<double> candidates;
  for (auto& steps : sorted) {
    std::sort(steps.begin(), steps.end());
    candidates.insert(candidates.end(), steps.begin(), steps.end());
  }
  std::sort(candidates.begin(), candidates.end());
  double slowest = candidates.back();
  for (const double time : candidates) {
    double log_probability = 0;
    for (std::size_t rank = 0; rank < profiled; ++rank) {
      const auto& steps = sorted[rank];
      const auto below =
          static_cast<double>(std::upper_bound(steps.begin(), steps.end(), time) - steps.begin());
      log_probability += copies[rank] * std::log(std::max(below, 1e-300) / static_cast<double>(steps.size()));
    }
    if (log_probability > std::log(0.5)) {
      slowest = time;
      break;
    }
  }
  spread.slowest = std::max(slowest, largest_median) / own;
  return spread;
}

ComputeTimes compute_from_throughput(const LayerCosts& costs, double images_per_second, int local_batch) {
  PHALANX_REQUIRE_INPUT(std::isfinite(images_per_second) && images_per_second >= least_images_per_second &&
                            images_per_second <= most_images_per_second,
                        "--images-per-second must be a finite number from ", least_images_per_second, " to ",
                        most_images_per_second, " (got ", images_per_second, ")");
  PHALANX_REQUIRE_INPUT(local_batch >= 1 && local_batch <= most_local_batch,
                        "the local batch must be from 1 to ", most_local_batch, " (got ", local_batch, ")");
  const double total = costs.multiply_adds();
  PHALANX_REQUIRE_INPUT(total > 0, "model ", costs.model,
                        " has no convolution or linear layer to share the time by");
  const double step = local_batch / images_per_second;
  ComputeTimes times;
  for (const LayerCost& layer : costs.layers) {
    const double share = layer.multiply_adds / total;
    times.forward.push_back(step / 3 * share);
    times.backward.push_back(step * 2 / 3 * share);
  }
  char text[96];
  std::snprintf(text, sizeof text, "one device at %g images/s, shared among the layers by multiply-adds",
                images_per_second);
  times.source = text;
  return times;
}

ComputeTimes compute_from_profile(const LayerCosts& costs, const std::string& path, int local_batch) {
  const nlohmann::json json = read_json_file(path, "profile");
  const auto profile_batch =
      static_cast<double>(required_count(json, "batch_size", path, "", 1, most_local_batch));
  const auto layers = json.find("layers");
  PHALANX_REQUIRE_INPUT(layers != json.end() && layers->is_array(), path,
                        ": field 'layers' is missing or not a list");
  struct MeasuredLayer {
    double forward = 0, backward = 0;
    std::int64_t multiply_adds = -1;  // -1: a profile from before the field
    std::string where;
  };
  std::map<std::string, MeasuredLayer> measured;
  for (std::size_t index = 0; index < layers->size(); ++index) {
    const nlohmann::json& layer = (*layers)[index];
    const std::string where = "layers[" + std::to_string(index) + "].";
    PHALANX_REQUIRE_INPUT(layer.is_object(), path, ": field '", where, "' must be an object");
    const std::string name = optional_text(layer, "name", path, where);
    PHALANX_REQUIRE_INPUT(!name.empty(), path, ": field '", where, "name' is missing");
    MeasuredLayer entry{required_number(layer, "forward_seconds", path, where, seconds_from_zero),
                        required_number(layer, "backward_seconds", path, where, seconds_from_zero), -1,
                        where};
    if (layer.contains("multiply_adds"))
      entry.multiply_adds = required_count(layer, "multiply_adds", path, where, 0, most_multiply_adds);
    const bool first = measured.emplace(name, std::move(entry)).second;
    PHALANX_REQUIRE_INPUT(first, path, ": field '", where, "name' repeats '", name,
                          "': which of its times would be the layer's?");
  }
  const double scale = local_batch / profile_batch;
  ComputeTimes times;
  times.optimizer = required_number(json, "optimizer_seconds", path, "", seconds_from_zero);
  // The ranks' steps: at the profile's batch, and only their ratios to rank 0's are used.
  const auto ranks = json.find("ranks");
  PHALANX_REQUIRE_INPUT(ranks != json.end() && ranks->is_array() && !ranks->empty(), path,
                        ": field 'ranks' is missing or empty (a profile of `phalanx bench calibrate` before "
                        "version 2? take it again)");
  for (std::size_t index = 0; index < ranks->size(); ++index) {
    const nlohmann::json& rank = (*ranks)[index];
    const std::string where = "ranks[" + std::to_string(index) + "].";
    PHALANX_REQUIRE_INPUT(rank.is_object(), path, ": field 'ranks[", index, "]' must be an object");
    times.rank_steps.push_back(required_seconds_list(rank, "step_seconds", path, where, positive_seconds));
  }
  for (const LayerCost& layer : costs.layers) {
    const auto found = measured.find(layer.name);
    PHALANX_REQUIRE_INPUT(found != measured.end(), path, ": field 'layers' has no entry named '", layer.name,
                          "' (a layer of model ", costs.model, "; was the profile taken of another model?)");
    // The same name at another image size (or another model's layer of that name) has other
    // times: the profile's multiply-adds say which it was taken of.
    const MeasuredLayer& entry = found->second;
    PHALANX_REQUIRE_INPUT(entry.multiply_adds < 0 || entry.multiply_adds == layer.multiply_adds, path,
                          ": field '", entry.where, "multiply_adds' is ", entry.multiply_adds,
                          ", but layer '", layer.name, "' of model ", costs.model, " has ",
                          layer.multiply_adds,
                          " per image here: the profile was taken of another model or image size");
    times.forward.push_back(entry.forward * scale);
    times.backward.push_back(entry.backward * scale);
  }
  // One device's images/s is the batch over these times: with none, a prediction would be inf.
  const double compute = (times.forward_seconds() + times.backward_seconds()) / scale;
  PHALANX_REQUIRE_INPUT(compute >= positive_seconds.least, path, ": fields 'layers[].forward_seconds' and ",
                        "'layers[].backward_seconds' of model ", costs.model, "'s layers add up to ", compute,
                        " seconds: no compute to predict from (take the profile again with `phalanx bench ",
                        "calibrate`)");
  // The update's time follows the parameters, not the batch: it stays as measured.
  times.source = "profile " + path;
  return times;
}

}  // namespace phalanx::scaling
