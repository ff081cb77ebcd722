// The TPE estimator (see tpe_sampler.hpp). Numbers follow Optuna's multivariate TPESampler so that
// the two can be compared: bandwidth 0.2 n^(-1/(d+4)) of the range, clipped to [range / min(100,
// 1 + kernels), range]; truncated Gaussians in the transformed space (an int's kernel gives the
// probability of its unit bin); categorical kernels with prior_weight / kernels on every choice.
#include "phalanx/sweep/tpe_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "phalanx/core/error.hpp"

namespace phalanx::sweep {
namespace {

constexpr double log_of_zero = -1e300;  // a probability below double's range, kept finite

// The standard normal CDF, accurate in both tails.
double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::numbers::sqrt2);
}

// log(exp(a) + exp(b) + ...) without overflow.
double log_sum_exp(const std::vector<double>& terms) {
  const double largest = *std::max_element(terms.begin(), terms.end());
  if (largest <= log_of_zero) return log_of_zero;
  double sum = 0;
  for (const double term : terms) sum += std::exp(term - largest);
  return largest + std::log(sum);
}

// The domain of a numeric parameter in estimator coordinates; an int's reaches half a step past
// its ends so that every integer has a bin of width 1.
struct Domain {
  double low = 0, high = 0;
};

Domain domain_of(const config::SearchParameter& parameter) {
  switch (parameter.type) {
    case config::ParameterType::LogUniform: return {std::log(parameter.low), std::log(parameter.high)};
    case config::ParameterType::Int: return {parameter.low - 0.5, parameter.high + 0.5};
    default: return {parameter.low, parameter.high};
  }
}

bool is_fixed(const config::SearchParameter& parameter) {
  if (parameter.type == config::ParameterType::Choice) return parameter.values.size() <= 1;
  return parameter.low == parameter.high;
}

// Optuna's default_weights: 1 for each of the newest 25 observations, a ramp from 1/n up to 1 for
// the older ones.
std::vector<double> observation_weights(std::size_t count) {
  std::vector<double> weights(count, 1.0);
  if (count <= 25) return weights;
  const std::size_t ramp = count - 25;
  const double first = 1.0 / static_cast<double>(count);
  for (std::size_t index = 0; index < ramp; ++index)
    weights[index] = ramp == 1
                         ? first
                         : first + (1.0 - first) * static_cast<double>(index) / static_cast<double>(ramp - 1);
  return weights;
}

double standard_normal(RandomStream& stream) {
  // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
  const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform_double(stream)));
  return radius * std::cos(2.0 * std::numbers::pi * uniform_double(stream));
}

}  // namespace

double uniform_double(RandomStream& stream) {
  const std::uint64_t high = stream.next_u32() >> 5, low = stream.next_u32() >> 6;
  return static_cast<double>((high << 26) | low) / 9007199254740992.0;
}

// One Parzen estimator: a mixture of joint kernels, one per observation plus the prior.
class TpeSampler::Mixture {
 public:
  Mixture(const std::vector<config::SearchParameter>& space, const std::vector<const TpeObservation*>& points,
          double prior_weight)
      : space_(space) {
    const std::size_t count = points.size();
    const std::size_t kernels = count + 1;
    weights_ = observation_weights(count);
    weights_.push_back(prior_weight);
    double total = 0;
    for (const double weight : weights_) total += weight;
    for (double& weight : weights_) weight /= total;
    const double dimensions = static_cast<double>(space.size());
    dimensions_.resize(space.size());
    for (std::size_t dimension = 0; dimension < space.size(); ++dimension) {
      const auto& parameter = space[dimension];
      Dimension& kernel = dimensions_[dimension];
      if (is_fixed(parameter)) continue;
      if (parameter.type == config::ParameterType::Choice) {
        const std::size_t choices = parameter.values.size();
        // Every kernel puts prior_weight / kernels on each choice and 1 more on its own; the prior
        // kernel's row is then uniform.
        kernel.choice_log_probabilities.assign(kernels, std::vector<double>(choices));
        for (std::size_t index = 0; index < kernels; ++index) {
          std::vector<double> row(choices, prior_weight / static_cast<double>(kernels));
          if (index < count) row[static_cast<std::size_t>(points[index]->point[dimension])] += 1.0;
          double sum = 0;
          for (const double value : row) sum += value;
          for (std::size_t choice = 0; choice < choices; ++choice)
            kernel.choice_log_probabilities[index][choice] = std::log(row[choice] / sum);
        }
        continue;
      }
      const Domain domain = domain_of(parameter);
      const double range = domain.high - domain.low;
      const double bandwidth =
          0.2 * std::pow(static_cast<double>(std::max<std::size_t>(count, 1)), -1.0 / (dimensions + 4.0)) *
          range;
      const double smallest = range / std::min(100.0, 1.0 + static_cast<double>(kernels));
      for (std::size_t index = 0; index < count; ++index) {
        kernel.means.push_back(points[index]->point[dimension]);
        kernel.sigmas.push_back(std::clamp(bandwidth, smallest, range));
      }
      kernel.means.push_back(0.5 * (domain.low + domain.high));
      kernel.sigmas.push_back(range);
      for (std::size_t index = 0; index < kernels; ++index)
        kernel.log_mass.push_back(
            std::log(normal_cdf((domain.high - kernel.means[index]) / kernel.sigmas[index]) -
                     normal_cdf((domain.low - kernel.means[index]) / kernel.sigmas[index])));
    }
  }

  SpacePoint sample(RandomStream& stream) const {
    // One kernel for all dimensions: the joint (multivariate) draw.
    const double pick = uniform_double(stream);
    std::size_t component = 0;
    for (double sum = weights_[0]; component + 1 < weights_.size() && pick >= sum;
         sum += weights_[++component]) {
    }
    SpacePoint point(space_.size());
    for (std::size_t dimension = 0; dimension < space_.size(); ++dimension) {
      const auto& parameter = space_[dimension];
      const Dimension& kernel = dimensions_[dimension];
      if (is_fixed(parameter)) {
        point[dimension] = parameter.type == config::ParameterType::Choice       ? 0.0
                           : parameter.type == config::ParameterType::LogUniform ? std::log(parameter.low)
                                                                                 : parameter.low;
        continue;
      }
      if (parameter.type == config::ParameterType::Choice) {
        const auto& row = kernel.choice_log_probabilities[component];
        const double draw = uniform_double(stream);
        std::size_t choice = 0;
        for (double sum = std::exp(row[0]); choice + 1 < row.size() && draw >= sum;
             sum += std::exp(row[++choice])) {
        }
        point[dimension] = static_cast<double>(choice);
        continue;
      }
      // Rejection from the untruncated Gaussian: its mean lies in the domain and its sigma is at
      // most the domain's width, so at least 38% of the draws land inside.
      const Domain domain = domain_of(parameter);
      const double mean = kernel.means[component], sigma = kernel.sigmas[component];
      double value = mean;
      for (int attempt = 0; attempt < 1000; ++attempt) {
        const double draw = mean + sigma * standard_normal(stream);
        if (draw >= domain.low && draw <= domain.high) {
          value = draw;
          break;
        }
      }
      if (parameter.type == config::ParameterType::Int)
        value = std::clamp(std::round(value), parameter.low, parameter.high);
      point[dimension] = value;
    }
    return point;
  }

  double log_density(const SpacePoint& point) const {
    std::vector<double> terms(weights_.size());
    for (std::size_t component = 0; component < weights_.size(); ++component) {
      double term = std::log(weights_[component]);
      for (std::size_t dimension = 0; dimension < space_.size(); ++dimension) {
        const auto& parameter = space_[dimension];
        if (is_fixed(parameter)) continue;
        const Dimension& kernel = dimensions_[dimension];
        const double x = point[dimension];
        if (parameter.type == config::ParameterType::Choice) {
          term += kernel.choice_log_probabilities[component][static_cast<std::size_t>(x)];
          continue;
        }
        const double mean = kernel.means[component], sigma = kernel.sigmas[component];
        if (parameter.type == config::ParameterType::Int) {
          // The probability of the integer's unit bin.
          const double above = (x + 0.5 - mean) / sigma, below = (x - 0.5 - mean) / sigma;
          // Far out on the right, 1 - CDF keeps the digits the CDF itself rounds away.
          const double mass =
              below > 0 ? normal_cdf(-below) - normal_cdf(-above) : normal_cdf(above) - normal_cdf(below);
          term += (mass > 0 ? std::log(mass) : log_of_zero) - kernel.log_mass[component];
        } else {
          const double z = (x - mean) / sigma;
          term += -0.5 * z * z - std::log(sigma) - 0.5 * std::log(2.0 * std::numbers::pi) -
                  kernel.log_mass[component];
        }
      }
      terms[component] = term;
    }
    return log_sum_exp(terms);
  }

 private:
  struct Dimension {
    std::vector<double> means, sigmas, log_mass;                // numeric: per kernel
    std::vector<std::vector<double>> choice_log_probabilities;  // choice: per kernel, per value
  };
  const std::vector<config::SearchParameter>& space_;
  std::vector<double> weights_;  // per kernel, the prior last; summing to 1
  std::vector<Dimension> dimensions_;
};

TpeSampler::TpeSampler(std::vector<config::SearchParameter> space, bool maximize, TpeOptions options)
    : space_(std::move(space)), maximize_(maximize), options_(options) {
  PHALANX_CHECK(options_.candidates >= 1 && options_.prior_weight > 0, "invalid TPE options");
}

int TpeSampler::good_count(int count) {
  return std::max(1, std::min((count + 9) / 10, 25));
}

void TpeSampler::split(const std::vector<TpeObservation>& observations,
                       std::vector<const TpeObservation*>& good,
                       std::vector<const TpeObservation*>& bad) const {
  std::vector<const TpeObservation*> order;
  for (const auto& observation : observations) order.push_back(&observation);
  // Best first: a metric that is not a number is the worst, then the higher rung, then the better
  // metric; ties go to the older trial.
  std::stable_sort(order.begin(), order.end(), [this](const TpeObservation* a, const TpeObservation* b) {
    const bool a_number = !std::isnan(a->metric), b_number = !std::isnan(b->metric);
    if (a_number != b_number) return a_number;
    if (a->rung != b->rung) return a->rung > b->rung;
    if (a_number && a->metric != b->metric) return maximize_ ? a->metric > b->metric : a->metric < b->metric;
    return a->trial < b->trial;
  });
  const std::size_t good_size = static_cast<std::size_t>(good_count(static_cast<int>(order.size())));
  good.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(std::min(good_size, order.size())));
  bad.assign(order.begin() + static_cast<std::ptrdiff_t>(good.size()), order.end());
  // In trial order: the weights favour the newest observations.
  const auto by_trial = [](const TpeObservation* a, const TpeObservation* b) { return a->trial < b->trial; };
  std::sort(good.begin(), good.end(), by_trial);
  std::sort(bad.begin(), bad.end(), by_trial);
}

double TpeSampler::score(const std::vector<TpeObservation>& observations, const SpacePoint& point) const {
  std::vector<const TpeObservation*> good, bad;
  split(observations, good, bad);
  const Mixture below(space_, good, options_.prior_weight), above(space_, bad, options_.prior_weight);
  return below.log_density(point) - above.log_density(point);
}

SpacePoint TpeSampler::propose(const std::vector<TpeObservation>& observations, RandomStream& stream) const {
  PHALANX_CHECK(!observations.empty(), "TPE needs at least one observation");
  for (const auto& observation : observations)
    PHALANX_CHECK(observation.point.size() == space_.size(), "observation of trial ", observation.trial,
                  " has ", observation.point.size(), " coordinates for ", space_.size(), " parameters");
  std::vector<const TpeObservation*> good, bad;
  split(observations, good, bad);
  const Mixture below(space_, good, options_.prior_weight), above(space_, bad, options_.prior_weight);
  SpacePoint best;
  double best_score = -std::numeric_limits<double>::infinity();
  for (int candidate = 0; candidate < options_.candidates; ++candidate) {
    SpacePoint point = below.sample(stream);
    const double score = below.log_density(point) - above.log_density(point);
    if (best.empty() || score > best_score) {
      best_score = score;
      best = std::move(point);
    }
  }
  return best;
}

}  // namespace phalanx::sweep
