// Random and grid sampling of the search space, and the values of a trial in TPE's coordinates
// (see search_space.hpp).
#include "phalanx/sweep/search_space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"

namespace phalanx::sweep {
namespace {

// Value number `index` of a choice or int parameter in a grid (int ranges are never listed: one
// can span 2^32 values).
std::string listed_value(const config::SearchParameter& parameter, std::int64_t index) {
  if (parameter.type == config::ParameterType::Choice)
    return parameter.values[static_cast<std::size_t>(index)];
  return std::to_string(static_cast<std::int64_t>(parameter.low) + index);
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
  if (sweep.search != config::Search::Grid) return sweep.trials;
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
    trial.values.emplace_back(parameter.key, draw_value(parameter, stream));
  }
  return trial;
}

SpacePoint point_of(const config::SweepConfig& sweep, const TrialParameters& trial) {
  PHALANX_CHECK(trial.values.size() == sweep.space.size(), "a trial with ", trial.values.size(),
                " values for a space of ", sweep.space.size());
  SpacePoint point;
  for (std::size_t index = 0; index < sweep.space.size(); ++index) {
    const auto& parameter = sweep.space[index];
    const auto& [key, text] = trial.values[index];
    PHALANX_CHECK(key == parameter.key, "a trial's value for '", key, "' where the space has '",
                  parameter.key, "'");
    if (parameter.type == config::ParameterType::Choice) {
      const auto found = std::find(parameter.values.begin(), parameter.values.end(), text);
      PHALANX_CHECK(found != parameter.values.end(), key, ": '", text, "' is not one of the choices");
      point.push_back(static_cast<double>(found - parameter.values.begin()));
      continue;
    }
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    // Nine digits of a bound with more can fall just outside it: within a billionth, it is the bound.
    const double slack = 1e-9 * std::max({std::fabs(parameter.low), std::fabs(parameter.high), 1e-300});
    PHALANX_CHECK(end && *end == '\0' && !text.empty() && value >= parameter.low - slack &&
                      value <= parameter.high + slack,
                  key, ": '", text, "' is not a number in [", parameter.low, ", ", parameter.high, "]");
    const double inside = std::clamp(value, parameter.low, parameter.high);
    point.push_back(parameter.type == config::ParameterType::LogUniform ? std::log(inside) : inside);
  }
  return point;
}

TrialParameters trial_at(const config::SweepConfig& sweep, int trial_id, const SpacePoint& point) {
  PHALANX_CHECK(point.size() == sweep.space.size(), "a point of ", point.size(),
                " coordinates for a space of ", sweep.space.size());
  TrialParameters trial;
  trial.seed = trial_seed(sweep, trial_id);
  for (std::size_t index = 0; index < sweep.space.size(); ++index) {
    const auto& parameter = sweep.space[index];
    std::string value;
    if (parameter.type == config::ParameterType::Choice) {
      const auto choice = static_cast<std::size_t>(
          std::clamp<double>(point[index], 0, static_cast<double>(parameter.values.size() - 1)));
      value = parameter.values[choice];
    } else if (parameter.type == config::ParameterType::Int) {
      value = std::to_string(
          static_cast<long long>(std::clamp(std::round(point[index]), parameter.low, parameter.high)));
    } else {
      const double number = std::clamp(
          parameter.type == config::ParameterType::LogUniform ? std::exp(point[index]) : point[index],
          parameter.low, parameter.high);
      value = format_real(number);
      // Nine digits can round past a bound that has more: then all of them.
      const double written = std::strtod(value.c_str(), nullptr);
      if (written < parameter.low || written > parameter.high) {
        char text[40];
        std::snprintf(text, sizeof(text), "%.17g", number);
        value = text;
      }
    }
    trial.values.emplace_back(parameter.key, value);
  }
  return trial;
}

std::string draw_value(const config::SearchParameter& parameter, RandomStream& stream) {
  switch (parameter.type) {
    case config::ParameterType::Choice: return parameter.values[stream.next_below(parameter.values.size())];
    case config::ParameterType::Int: {
      const auto span = static_cast<std::uint64_t>(parameter.high - parameter.low) + 1;
      return std::to_string(static_cast<long long>(parameter.low) +
                            static_cast<long long>(stream.next_below(span)));
    }
    case config::ParameterType::Uniform:
      return format_real(parameter.low + (parameter.high - parameter.low) * uniform_double(stream));
    case config::ParameterType::LogUniform: {
      const double low = std::log(parameter.low), high = std::log(parameter.high);
      return format_real(std::exp(low + (high - low) * uniform_double(stream)));
    }
  }
  PHALANX_CHECK(false, parameter.key, ": a parameter of unknown type");
  return {};
}

std::string format_real(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

}  // namespace phalanx::sweep
