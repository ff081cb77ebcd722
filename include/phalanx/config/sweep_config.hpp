// The typed, validated sweep file (docs/SWEEPS.md): a base training config, a search space over
// any of its dotted keys, the search and scheduler, the metric, the budget and the worker layout.
// Parsed here because config is the only module that sees YAML.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "phalanx/config/config.hpp"

namespace phalanx::config {

enum class ParameterType { Choice, Uniform, LogUniform, Int };
constexpr std::array<WordName<ParameterType>, 4> words(ParameterType) {
  return {{{ParameterType::Choice, "choice"},
           {ParameterType::Uniform, "uniform"},
           {ParameterType::LogUniform, "loguniform"},
           {ParameterType::Int, "int"}}};
}
// tpe: a tree-structured Parzen estimator fitted on the results so far (random for the first trials).
enum class Search { Random, Grid, Tpe };
constexpr std::array<WordName<Search>, 3> words(Search) {
  return {{{Search::Random, "random"}, {Search::Grid, "grid"}, {Search::Tpe, "tpe"}}};
}
// asha, full: every trial to the maximum budget, or pbt: population-based training (pbt.hpp).
enum class Scheduler { Asha, Full, Pbt };
constexpr std::array<WordName<Scheduler>, 3> words(Scheduler) {
  return {{{Scheduler::Asha, "asha"}, {Scheduler::Full, "full"}, {Scheduler::Pbt, "pbt"}}};
}
// How ASHA (scheduler: asha) decides that a trial goes on to the next rung (docs/SWEEPS.md):
// promotion, Li et al.'s rule: a free worker promotes a trial in the top 1/eta of its rung's results,
// each trial once; stopping, the rule of Optuna's SuccessiveHalvingPruner and Ray Tune's ASHA: a
// trial goes on if, when it reaches the rung, it is in the top 1/eta of the results there so far.
enum class AshaRule { Promotion, Stopping };
constexpr std::array<WordName<AshaRule>, 2> words(AshaRule) {
  return {{{AshaRule::Promotion, "promotion"}, {AshaRule::Stopping, "stopping"}}};
}
enum class Goal { Maximize, Minimize };
constexpr std::array<WordName<Goal>, 2> words(Goal) {
  return {{{Goal::Maximize, "maximize"}, {Goal::Minimize, "minimize"}}};
}
enum class BudgetUnit { Epochs, Samples };
constexpr std::array<WordName<BudgetUnit>, 2> words(BudgetUnit) {
  return {{{BudgetUnit::Epochs, "epochs"}, {BudgetUnit::Samples, "samples"}}};
}

// One dimension of the search space, over the training-config key `key` (e.g.
// optimizer.learning_rate). `values` holds the YAML text of each choice.
struct SearchParameter {
  std::string key;
  ParameterType type = ParameterType::Choice;
  std::vector<std::string> values;
  double low = 0, high = 0;
};

// The `pbt:` section (scheduler: pbt; docs/SWEEPS.md, "Population-based training").
struct PbtConfig {
  int population = 0;                             // trials training at once (default: all of `trials`)
  double interval = 0;                            // budget units between exploit/explore decisions
  double quantile = 0.25;                         // the bottom share copies the top share
  std::vector<double> perturbation = {0.8, 1.2};  // factors an explored value is multiplied by
  double resample_probability = 0.25;             // else a value is drawn afresh from its range
};

struct SweepConfig {
  std::string source;  // the sweep file, for messages
  std::string name = "sweep";
  std::uint64_t seed = 0;  // samples the space; trial seeds derive from it and the trial id
  std::string base_path;   // training config file, relative paths resolved against the sweep file
  std::vector<std::string> base_overrides;  // `config.KEY=VALUE` from the file's `set:` and --set
  Search search = Search::Random;
  Scheduler scheduler = Scheduler::Asha;
  AshaRule asha_rule = AshaRule::Promotion;  // scheduler: asha, the `asha:` section's `rule`
  int asha_brackets = 1;  // scheduler: asha, the `asha:` section's `brackets` (asynchronous Hyperband)
  int trials = 0;  // random, tpe: how many; grid: at most how many (0: all)
  // TPE (search: tpe): the first tpe_startup_trials trial ids are random search's; each later trial
  // is the best of tpe_candidates draws from the estimator (Optuna's defaults: 10 and 24).
  int tpe_startup_trials = 10;
  int tpe_candidates = 24;
  // A key of the trials' summary.json: test_accuracy | test_loss | train_loss |
  // test_top<k>_accuracy (maximised, as test_accuracy; k is added to the trials' eval.top_k).
  std::string metric = "test_accuracy";
  Goal goal = Goal::Maximize;
  BudgetUnit budget_unit = BudgetUnit::Epochs;
  double min_budget = 1, max_budget = 1;
  int eta = 3;
  int gpu_ranks_per_trial = 1;
  bool cpu_trials = true;  // whether CPU ranks take trials
  // The sizes of the CPU worker groups, in world order, repeated until the CPU ranks run out (the
  // last group takes what is left): {1} puts each CPU rank alone, {2} pairs them, {1, 2} makes
  // groups of 1, 2, 1, 2, ... ranks.
  std::vector<int> cpu_ranks_per_trial = {1};
  // No idle tail (docs/SWEEPS.md): a group that ASHA has nothing for joins a running trial of its
  // kind (GPU or CPU), which stops after its next step with a checkpoint and continues on the
  // merged ranks, when that trial is expected to run at least join_min_seconds longer.
  bool join_running = true;
  double join_min_seconds = 10;
  PbtConfig pbt;                       // with scheduler: pbt
  std::vector<SearchParameter> space;  // in file order
  Config base;                         // the base config, validated
  std::string base_text;               // its YAML text (as read, before overrides)
};

// Reads and validates a sweep file. `overrides` are `--set KEY=VALUE` for the sweep file itself
// (trials=4, budget.max=3) or, prefixed with `config.`, for the base training config.
// Every error is an InvalidInput error naming the file and key.
SweepConfig load_sweep(const std::string& path, const std::vector<std::string>& overrides = {});

// A grid sweep lists at most this many points; a larger grid is refused unless `trials` takes
// only its first ones.
inline constexpr std::int64_t largest_grid = 1000000;

// How many values a choice or int parameter lists in a grid (counted, never listed).
std::int64_t grid_value_count(const SearchParameter& parameter);
// The grid's point count, or largest_grid + 1 for anything larger (no overflow at any size).
std::int64_t grid_points(const SweepConfig& sweep);

// ASHA's rung budgets: r * eta^k while that stays within `max` (R), and R itself when r * eta^K
// falls short of it.
std::vector<double> asha_rung_budgets(double min, double max, int eta);

// k for a metric named test_top<k>_accuracy (k >= 1, no leading zeros), nullopt for any other.
std::optional<int> top_k_of_metric(const std::string& metric);

// The training config of one trial: the base with the sweep's overrides and then `assignments`
// (KEY=VALUE of the trial's sampled values) applied, validated like any config.
Config trial_config(const SweepConfig& sweep, const std::vector<std::string>& assignments);

}  // namespace phalanx::config
