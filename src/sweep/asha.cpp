// The ASHA promotion rule (see asha.hpp).
#include "phalanx/sweep/asha.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "phalanx/core/error.hpp"

namespace phalanx::sweep {

namespace {

// Trial ids dealt to brackets in Hyperband's proportions: bracket b (s = top - b) has
// ceil((top + 1) / (s + 1) * eta^s) shares (Li et al. 2018, "Hyperband", Algorithm 1's n), and
// each id goes to the bracket furthest behind its share of the ids so far (ties to the lower
// bracket), so every prefix of the ids is spread as evenly as whole trials allow.
std::vector<int> deal_brackets(int trials, int brackets, int rungs, int eta) {
  std::vector<double> shares;
  const int top = rungs - 1;
  for (int bracket = 0; bracket < brackets; ++bracket) {
    const int s = top - bracket;
    shares.push_back(std::ceil(static_cast<double>(top + 1) / (s + 1) * std::pow(eta, s)));
  }
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  std::vector<int> dealt(static_cast<std::size_t>(brackets), 0), first_rungs;
  for (int trial = 0; trial < trials; ++trial) {
    int chosen = 0;
    double largest = -1e300;
    for (int bracket = 0; bracket < brackets; ++bracket) {
      const double behind = (trial + 1) * shares[static_cast<std::size_t>(bracket)] / total -
                            dealt[static_cast<std::size_t>(bracket)];
      if (behind > largest + 1e-12) largest = behind, chosen = bracket;
    }
    ++dealt[static_cast<std::size_t>(chosen)];
    first_rungs.push_back(chosen);
  }
  return first_rungs;
}

}  // namespace

Asha::Asha(double min_budget, double max_budget, int eta, bool maximize, int max_trials, bool single_rung,
           config::AshaRule rule, int brackets)
    : eta_(eta), maximize_(maximize), rule_(rule), max_trials_(max_trials), brackets_(brackets) {
  PHALANX_CHECK(min_budget > 0 && max_budget >= min_budget && eta >= 2, "invalid ASHA budgets");
  budgets_ =
      single_rung ? std::vector<double>{max_budget} : config::asha_rung_budgets(min_budget, max_budget, eta);
  PHALANX_CHECK(brackets >= 1 && brackets <= rung_count(), brackets, " brackets for ", rung_count(),
                " rungs");
  first_rungs_ = deal_brackets(max_trials, brackets, rung_count(), eta);
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

int Asha::first_rung(int trial) const {
  return trial >= 0 && trial < static_cast<int>(first_rungs_.size())
             ? first_rungs_[static_cast<std::size_t>(trial)]
             : 0;
}

std::vector<std::pair<int, double>> Asha::ranking(int rung) const {
  const auto& recorded = results_.at(static_cast<std::size_t>(rung));
  std::vector<std::pair<int, double>> order(recorded.begin(), recorded.end());
  std::sort(order.begin(), order.end(), [this](const auto& a, const auto& b) { return better(a, b); });
  return order;
}

std::vector<std::pair<int, double>> Asha::ranking(int rung, int bracket) const {
  auto order = ranking(rung);
  if (brackets_ > 1)
    std::erase_if(order, [&](const auto& result) { return first_rung(result.first) != bracket; });
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
    // Each bracket promotes among its own trials; a rung's promotions are then offered best first.
    std::vector<std::pair<int, double>> going;
    for (int bracket = 0; bracket < std::min(brackets_, rung + 1); ++bracket) {
      const auto order = ranking(rung, bracket);
      if (rule_ == config::AshaRule::Stopping) {
        for (const auto& result : order)
          if (going_on_[static_cast<std::size_t>(rung)].count(result.first) && !promoted(result.first, rung))
            going.push_back(result);
        continue;
      }
      const std::size_t top = order.size() / static_cast<std::size_t>(eta_);
      for (std::size_t index = 0; index < top; ++index)
        if (!promoted(order[index].first, rung)) going.push_back(order[index]);
    }
    std::sort(going.begin(), going.end(), [this](const auto& a, const auto& b) { return better(a, b); });
    for (const auto& result : going) jobs.push_back(Job{result.first, rung + 1});
  }
  if (started_ < max_trials_) jobs.push_back(Job{-1, first_rung(started_)});
  return jobs;
}

Job Asha::take(Job job) {
  if (job.new_trial()) {
    PHALANX_CHECK(started_ < max_trials_, "no trials left to start");
    job.trial = started_++;
    job.rung = first_rung(job.trial);
    return job;
  }
  PHALANX_CHECK(job.rung > first_rung(job.trial) && job.rung <= top_rung(), "promotion of trial ", job.trial,
                " to rung ", job.rung, " out of range");
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
  const auto order = ranking(rung, first_rung(trial));
  const std::size_t top = std::max<std::size_t>(1, order.size() / static_cast<std::size_t>(eta_));
  for (std::size_t position = 0; position < top; ++position)
    if (order[position].first == trial) going_on_[index].insert(trial);
}

void Asha::restore_started(int trial) {
  started_ = std::max(started_, trial + 1);
}

void Asha::restore_promoted(int trial, int to_rung) {
  // A trial's first job (at its bracket's rung) is no promotion.
  if (to_rung > first_rung(trial) && to_rung <= top_rung())
    promoted_[static_cast<std::size_t>(to_rung - 1)].insert(trial);
}

}  // namespace phalanx::sweep
