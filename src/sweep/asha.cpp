// The ASHA promotion rule (see asha.hpp).
#include "phalanx/sweep/asha.hpp"

#include <algorithm>
#include <cmath>

#include "phalanx/core/error.hpp"

namespace phalanx::sweep {

Asha::Asha(double min_budget, double max_budget, int eta, bool maximize, int max_trials, bool single_rung,
           config::AshaRule rule)
    : eta_(eta), maximize_(maximize), rule_(rule), max_trials_(max_trials) {
  PHALANX_CHECK(min_budget > 0 && max_budget >= min_budget && eta >= 2, "invalid ASHA budgets");
  if (single_rung) {
    budgets_.push_back(max_budget);
  } else {
    // A relative tolerance keeps 1 * 3^2 == 9 from being lost to rounding.
    for (double budget = min_budget; budget <= max_budget * (1 + 1e-9); budget *= eta)
      budgets_.push_back(budget);
    if (budgets_.back() < max_budget * (1 - 1e-9)) budgets_.push_back(max_budget);
  }
  results_.resize(budgets_.size());
  promoted_.resize(budgets_.size());
  going_on_.resize(budgets_.size());
}

Asha::Asha(std::vector<double> budgets, bool maximize, int max_trials)
    : budgets_(std::move(budgets)), eta_(2), maximize_(maximize), max_trials_(max_trials) {
  PHALANX_CHECK(!budgets_.empty() && budgets_.front() > 0 && std::is_sorted(budgets_.begin(), budgets_.end()),
                "invalid rung budgets");
  results_.resize(budgets_.size());
  promoted_.resize(budgets_.size());
  going_on_.resize(budgets_.size());
}

bool Asha::better(const std::pair<int, double>& a, const std::pair<int, double>& b) const {
  if (a.second != b.second) return maximize_ ? a.second > b.second : a.second < b.second;
  return a.first < b.first;
}

std::vector<std::pair<int, double>> Asha::ranking(int rung) const {
  const auto& recorded = results_.at(static_cast<std::size_t>(rung));
  std::vector<std::pair<int, double>> order(recorded.begin(), recorded.end());
  std::sort(order.begin(), order.end(), [this](const auto& a, const auto& b) { return better(a, b); });
  return order;
}

bool Asha::promoted(int trial, int from_rung) const {
  return promoted_.at(static_cast<std::size_t>(from_rung)).count(trial) > 0;
}

bool Asha::goes_on(int trial, int from_rung) const {
  return promoted(trial, from_rung) || going_on_.at(static_cast<std::size_t>(from_rung)).count(trial) > 0;
}

std::vector<Job> Asha::candidates() const {
  std::vector<Job> jobs;
  for (int rung = top_rung() - 1; rung >= 0; --rung) {
    const auto order = ranking(rung);
    if (rule_ == config::AshaRule::Stopping) {
      for (const auto& [trial, metric] : order)
        if (going_on_[static_cast<std::size_t>(rung)].count(trial) && !promoted(trial, rung))
          jobs.push_back(Job{trial, rung + 1});
      continue;
    }
    const std::size_t top = order.size() / static_cast<std::size_t>(eta_);
    for (std::size_t index = 0; index < top; ++index)
      if (!promoted(order[index].first, rung)) jobs.push_back(Job{order[index].first, rung + 1});
  }
  if (started_ < max_trials_) jobs.push_back(Job{-1, 0});
  return jobs;
}

Job Asha::take(Job job) {
  if (job.new_trial()) {
    PHALANX_CHECK(started_ < max_trials_, "no trials left to start");
    job.trial = started_++;
    job.rung = 0;
    return job;
  }
  PHALANX_CHECK(job.rung >= 1 && job.rung <= top_rung(), "promotion to rung ", job.rung, " out of range");
  promoted_[static_cast<std::size_t>(job.rung - 1)].insert(job.trial);
  return job;
}

void Asha::record(int trial, int rung, double metric) {
  PHALANX_CHECK(rung >= 0 && rung <= top_rung(), "rung ", rung, " out of range");
  const auto index = static_cast<std::size_t>(rung);
  const bool first_result = results_[index].insert_or_assign(trial, metric).second;
  // Decided once, on the trial's first result at the rung (the database holds one per trial and
  // rung, so there is no second; checking keeps the rule true of this class on its own).
  if (rule_ != config::AshaRule::Stopping || rung == top_rung() || !first_result) return;
  const auto order = ranking(rung);
  const std::size_t top = std::max<std::size_t>(1, order.size() / static_cast<std::size_t>(eta_));
  for (std::size_t position = 0; position < top; ++position)
    if (order[position].first == trial) going_on_[index].insert(trial);
}

void Asha::restore_started(int trial) {
  started_ = std::max(started_, trial + 1);
}

void Asha::restore_promoted(int trial, int to_rung) {
  if (to_rung >= 1 && to_rung <= top_rung()) promoted_[static_cast<std::size_t>(to_rung - 1)].insert(trial);
}

}  // namespace phalanx::sweep
