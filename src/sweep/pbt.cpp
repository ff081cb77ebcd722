// The PBT decisions (see pbt.hpp).
#include "phalanx/sweep/pbt.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "phalanx/core/error.hpp"

namespace phalanx::sweep {
namespace {

// The donor's value moved by `factor`: scaled and clipped to the range; an int rounded, and moved
// by one when rounding would undo the move; a choice to its neighbour in the factor's direction
// (below 1: the previous choice, else the next), or the other neighbour at either end.
std::string perturb(const config::SearchParameter& parameter, const std::string& value, double factor) {
  if (parameter.type == config::ParameterType::Choice) {
    const auto found = std::find(parameter.values.begin(), parameter.values.end(), value);
    const auto count = static_cast<long long>(parameter.values.size());
    if (found == parameter.values.end() || count < 2) return value;
    long long index = found - parameter.values.begin();
    index += factor < 1 ? -1 : 1;
    if (index < 0) index = 1;
    if (index >= count) index = count - 2;
    return parameter.values[static_cast<std::size_t>(index)];
  }
  const double current = std::stod(value);
  if (parameter.type == config::ParameterType::Int) {
    const auto current_int = static_cast<long long>(std::llround(current));
    auto moved = static_cast<long long>(std::llround(current * factor));
    if (moved == current_int && factor != 1) moved += factor < 1 ? -1 : 1;
    moved = std::clamp(moved, static_cast<long long>(parameter.low), static_cast<long long>(parameter.high));
    return std::to_string(moved);
  }
  return format_real(std::clamp(current * factor, parameter.low, parameter.high));
}

}  // namespace

const std::vector<std::string>& pbt_mutable_keys() {
  static const std::vector<std::string> keys = {
      "optimizer.learning_rate", "optimizer.momentum", "optimizer.weight_decay", "optimizer.beta1",
      "optimizer.beta2",         "optimizer.epsilon",  "train.label_smoothing"};
  return keys;
}

bool pbt_mutable(const std::string& key) {
  const auto& keys = pbt_mutable_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::vector<double> pbt_budgets(double interval, double max_budget) {
  PHALANX_CHECK(interval > 0 && max_budget >= interval, "invalid PBT interval ", interval, " for budget ",
                max_budget);
  std::vector<double> budgets;
  // A relative tolerance keeps 3 * 0.1 from counting as short of 0.3.
  for (int index = 1; static_cast<double>(index) * interval < max_budget * (1 - 1e-9); ++index)
    budgets.push_back(static_cast<double>(index) * interval);
  budgets.push_back(max_budget);
  return budgets;
}

Pbt::Pbt(const config::SweepConfig& sweep)
    : sweep_(sweep), budgets_(pbt_budgets(sweep.pbt.interval, sweep.max_budget)), results_(budgets_.size()) {}

Pbt::TrialState& Pbt::state(int trial) {
  return const_cast<TrialState&>(std::as_const(*this).state(trial));
}

const Pbt::TrialState& Pbt::state(int trial) const {
  PHALANX_CHECK(trial >= 0 && trial < started_trials(), "PBT: no trial ", trial, " (", started_trials(),
                " started)");
  return trials_[static_cast<std::size_t>(trial)];
}

bool Pbt::better(const std::pair<int, double>& a, const std::pair<int, double>& b) const {
  const bool maximize = sweep_.goal == config::Goal::Maximize;
  if (a.second != b.second) return maximize ? a.second > b.second : a.second < b.second;
  return a.first < b.first;
}

std::vector<std::pair<int, double>> Pbt::ranking(int interval) const {
  const auto& recorded = results_.at(static_cast<std::size_t>(interval));
  std::vector<std::pair<int, double>> order(recorded.begin(), recorded.end());
  std::sort(order.begin(), order.end(), [this](const auto& a, const auto& b) { return better(a, b); });
  return order;
}

int Pbt::unfinished() const {
  return static_cast<int>(std::count_if(trials_.begin(), trials_.end(), [this](const TrialState& trial) {
    return !trial.failed && trial.finished < last_interval();
  }));
}

std::vector<Job> Pbt::candidates() const {
  std::vector<Job> jobs;
  if (started_trials() < sweep_.trials && unfinished() < sweep_.pbt.population) jobs.push_back(Job{-1, 0});
  for (int trial = 0; trial < started_trials(); ++trial) {
    const TrialState& held = trials_[static_cast<std::size_t>(trial)];
    const int next = held.finished + 1;
    if (!held.taken && !held.failed && next <= last_interval() && static_cast<int>(held.steps.size()) > next)
      jobs.push_back(Job{trial, next});
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.rung < b.rung; });
  return jobs;
}

Job Pbt::take(Job job) {
  if (job.new_trial()) {
    PHALANX_CHECK(started_trials() < sweep_.trials, "PBT: no trials left to start");
    job.trial = started_trials();
    job.rung = 0;
    TrialState trial;
    trial.steps.push_back(PbtStep{job.trial, 0, -1, -1, sample_trial(sweep_, job.trial), std::nullopt});
    trial.taken = true;
    trials_.push_back(std::move(trial));
    return job;
  }
  TrialState& held = state(job.trial);
  PHALANX_CHECK(!held.taken && job.rung == held.finished + 1 && job.rung <= last_interval(), "PBT: trial ",
                job.trial, " cannot start interval ", job.rung);
  held.taken = true;
  return job;
}

std::vector<PbtStep> Pbt::fail(int trial) {
  TrialState& held = state(trial);
  held.failed = true;
  held.taken = false;
  return decide_ready();
}

std::vector<PbtStep> Pbt::record(int trial, int interval, double metric) {
  PHALANX_CHECK(interval >= 0 && interval <= last_interval(), "PBT: interval ", interval, " out of range");
  TrialState& held = state(trial);
  results_[static_cast<std::size_t>(interval)][trial] = metric;
  held.finished = std::max(held.finished, interval);
  held.taken = false;
  held.steps.resize(static_cast<std::size_t>(interval) + 1);
  return decide_ready();
}

// The trials waiting at an interval that every trial still training has finished (and no trial is
// yet to join the population), decided in the order (interval, trial).
std::vector<PbtStep> Pbt::decide_ready() {
  // A trial yet to start joins the population at interval 0.
  if (started_trials() < sweep_.trials && unfinished() < sweep_.pbt.population) return {};
  int slowest = last_interval();
  for (const auto& held : trials_)
    if (!held.failed) slowest = std::min(slowest, held.finished);
  std::vector<PbtStep> decided;
  for (int interval = 0; interval <= std::min(slowest, last_interval() - 1); ++interval)
    for (int trial = 0; trial < started_trials(); ++trial) {
      TrialState& held = trials_[static_cast<std::size_t>(trial)];
      if (held.failed || held.finished != interval || static_cast<int>(held.steps.size()) > interval + 1)
        continue;
      decided.push_back(decide(trial, interval));
      held.steps.push_back(decided.back());
    }
  return decided;
}

double Pbt::result(int trial, int interval) const {
  const auto& recorded = results_.at(static_cast<std::size_t>(interval));
  const auto found = recorded.find(trial);
  PHALANX_CHECK(found != recorded.end(), "PBT: trial ", trial, " has no result at interval ", interval);
  return found->second;
}

const PbtStep& Pbt::step(int trial, int interval) const {
  const TrialState& held = state(trial);
  PHALANX_CHECK(interval >= 0 && interval < static_cast<int>(held.steps.size()), "PBT: trial ", trial,
                " has no hyperparameters for interval ", interval, " yet");
  return held.steps[static_cast<std::size_t>(interval)];
}

PbtStep Pbt::decide(int trial, int interval) const {
  PbtStep step;
  step.trial = trial;
  step.interval = interval + 1;
  step.parameters = parameters(trial, interval);
  const auto order = ranking(interval);
  const auto count =
      static_cast<std::size_t>(std::floor(static_cast<double>(order.size()) * sweep_.pbt.quantile));
  if (count == 0) return step;
  const auto position = static_cast<std::size_t>(
      std::find_if(order.begin(), order.end(), [trial](const auto& entry) { return entry.first == trial; }) -
      order.begin());
  if (position < order.size() - count) return step;
  // One stream per (sweep seed, trial, interval): the donor first, then each searched key in order.
  RandomStream stream(mix_seed(mix_seed(sweep_.seed, fnv1a_hash("pbt")), static_cast<std::uint64_t>(trial)),
                      static_cast<std::uint64_t>(interval));
  const int donor = order[stream.next_below(count)].first;
  step.parent_trial = donor;
  step.parent_interval = interval;
  step.parameters = explore(parameters(donor, interval), stream);
  return step;
}

TrialParameters Pbt::explore(const TrialParameters& donor, RandomStream& stream) const {
  TrialParameters explored = donor;
  for (auto& [key, value] : explored.values) {
    const auto parameter =
        std::find_if(sweep_.space.begin(), sweep_.space.end(),
                     [&key](const config::SearchParameter& entry) { return entry.key == key; });
    if (parameter == sweep_.space.end() || !pbt_mutable(key)) continue;
    // Both draws are made for every key, so one key's outcome never shifts the next key's draws.
    const bool fresh = uniform_double(stream) < sweep_.pbt.resample_probability;
    const double factor = sweep_.pbt.perturbation[stream.next_below(sweep_.pbt.perturbation.size())];
    value = fresh ? draw_value(*parameter, stream) : perturb(*parameter, value, factor);
  }
  return explored;
}

std::vector<PbtStep> Pbt::restore(const RecordedProgress& progress, const std::vector<PbtStep>& lineage) {
  for (const int trial : progress.trials)
    while (started_trials() <= trial) {
      TrialState state;
      const int id = started_trials();
      state.steps.push_back(PbtStep{id, 0, -1, -1, sample_trial(sweep_, id), std::nullopt});
      state.taken = true;  // until a result or a decision says where it stands
      trials_.push_back(std::move(state));
    }
  for (const auto& result : progress.rung_results) {
    results_.at(static_cast<std::size_t>(result.rung))[result.trial] = result.metric;
    TrialState& held = state(result.trial);
    held.finished = std::max(held.finished, result.rung);
  }
  std::vector<PbtStep> steps = lineage;
  std::sort(steps.begin(), steps.end(), [](const PbtStep& a, const PbtStep& b) {
    return std::pair(a.trial, a.interval) < std::pair(b.trial, b.interval);
  });
  for (const auto& step : steps) {
    if (step.interval < 1) continue;
    TrialState& held = state(step.trial);
    held.steps.resize(static_cast<std::size_t>(step.interval));
    held.steps.push_back(step);
    held.steps.back().metric.reset();
  }
  // A job recorded past a trial's last result is running (requeued after the kill or the stop) or
  // failed (never offered again).
  auto interrupted = [&progress](int trial, int interval) {
    return std::find(progress.interrupted.begin(), progress.interrupted.end(), std::pair(trial, interval)) !=
           progress.interrupted.end();
  };
  for (int trial = 0; trial < started_trials(); ++trial) {
    TrialState& held = state(trial);
    held.taken = false;
    if (held.finished < 0) (interrupted(trial, 0) ? held.taken : held.failed) = true;
  }
  for (const auto& [trial, interval] : progress.promotions) {
    TrialState& held = state(trial);
    if (interval > held.finished) (interrupted(trial, interval) ? held.taken : held.failed) = true;
  }
  return decide_ready();
}

}  // namespace phalanx::sweep
