// Random and grid sampling of the search space (see search_space.hpp).
#include "phalanx/sweep/search_space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "phalanx/core/random.hpp"

namespace phalanx::sweep {
namespace {

std::string format_real(double value) {
  // Nine significant digits: exact enough for any hyperparameter and readable in the table.
  char text[40];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

// Value number `index` of a choice or int parameter in a grid (int ranges are never listed: one
// can span 2^32 values).
std::string listed_value(const config::SearchParameter& parameter, std::int64_t index) {
  if (parameter.type == config::ParameterType::Choice) return parameter.values[static_cast<std::size_t>(index)];
  return std::to_string(static_cast<std::int64_t>(parameter.low) + index);
}

double uniform_double(RandomStream& stream) {
  // 53 random bits: next_uniform() is a float and would give only 2^24 distinct values.
  const std::uint64_t high = stream.next_u32() >> 5, low = stream.next_u32() >> 6;
  return static_cast<double>((high << 26) | low) / 9007199254740992.0;
}

}  // namespace

std::vector<std::string> TrialParameters::assignments() const {
  std::vector<std::string> result;
  bool seed_searched = false;
  for (const auto& [key, value] : values) {
    result.push_back(key + "=" + value);
    seed_searched = seed_searched || key == "seed";
  }
  if (!seed_searched) result.push_back("seed=" + std::to_string(seed));
  return result;
}

nlohmann::json TrialParameters::to_json() const {
  nlohmann::json result = nlohmann::json::object();
  for (const auto& [key, value] : values) {
    const auto parsed = nlohmann::json::parse(value, nullptr, false);
    result[key] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
  }
  return result;
}

int trial_count(const config::SweepConfig& sweep) {
  if (sweep.search == config::Search::Random) return sweep.trials;
  // load_sweep refused a grid larger than largest_grid unless `trials` caps it.
  const std::int64_t size = config::grid_points(sweep);
  if (sweep.trials > 0 && sweep.trials < size) return sweep.trials;
  return static_cast<int>(std::min(size, config::largest_grid));
}

std::uint64_t trial_seed(const config::SweepConfig& sweep, int trial_id) {
  // Below 2^31 so that the seed reads back through any YAML tool as an ordinary integer.
  return mix_seed(mix_seed(sweep.seed, 0x7472'6961'6cULL), static_cast<std::uint64_t>(trial_id)) &
         0x7fffffffULL;
}

TrialParameters sample_trial(const config::SweepConfig& sweep, int trial_id) {
  TrialParameters trial;
  trial.seed = trial_seed(sweep, trial_id);
  if (sweep.search == config::Search::Grid) {
    // Mixed radix over the space in file order, the last key varying fastest.
    std::int64_t rest = trial_id;
    std::vector<std::pair<std::string, std::string>> reversed;
    for (auto parameter = sweep.space.rbegin(); parameter != sweep.space.rend(); ++parameter) {
      const std::int64_t count = config::grid_value_count(*parameter);
      reversed.emplace_back(parameter->key, listed_value(*parameter, rest % count));
      rest /= count;
    }
    trial.values.assign(reversed.rbegin(), reversed.rend());
    return trial;
  }
  for (const auto& parameter : sweep.space) {
    RandomStream stream(mix_seed(sweep.seed, static_cast<std::uint64_t>(trial_id)),
                        fnv1a_hash(parameter.key));
    std::string value;
    if (parameter.type == config::ParameterType::Choice) {
      value = parameter.values[stream.next_below(parameter.values.size())];
    } else if (parameter.type == config::ParameterType::Int) {
      const auto span = static_cast<std::uint64_t>(parameter.high - parameter.low) + 1;
      value = std::to_string(static_cast<long long>(parameter.low) +
                             static_cast<long long>(stream.next_below(span)));
    } else if (parameter.type == config::ParameterType::Uniform) {
      value = format_real(parameter.low + (parameter.high - parameter.low) * uniform_double(stream));
    } else {  // loguniform
      const double low = std::log(parameter.low), high = std::log(parameter.high);
      value = format_real(std::exp(low + (high - low) * uniform_double(stream)));
    }
    trial.values.emplace_back(parameter.key, value);
  }
  return trial;
}

}  // namespace phalanx::sweep
