// The sweep file (docs/SWEEPS.md) into a validated SweepConfig. Its keys go through the same
// Reader as training configs, so messages name the file, the dotted key and the allowed range;
// every value the search space can produce is checked against the training schema up front, so
// a bad space fails before any trial runs.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "phalanx/config/sweep_config.hpp"
#include "phalanx/core/error.hpp"
#include "reader.hpp"
#include "schema.hpp"
#include "sweep_pbt_section.hpp"
#include "yaml_document.hpp"

namespace phalanx::config {
namespace {

// Reader::fail with the dotted key in front of the message, as the training-config errors read.
[[noreturn]] void fail_at(const Reader& reader, const std::string& key, const std::string& message,
                          const YAML::Node& node) {
  reader.fail(key, key + ": " + message, node);
}

const std::vector<std::string>& tpe_keys() {
  static const std::vector<std::string> keys = {"startup_trials", "candidates"};
  return keys;
}
const std::vector<std::string>& asha_keys() {
  static const std::vector<std::string> keys = {"rule", "brackets"};
  return keys;
}
const std::vector<std::string>& budget_keys() {
  static const std::vector<std::string> keys = {"unit", "min", "max", "eta"};
  return keys;
}
const std::vector<std::string>& worker_keys() {
  static const std::vector<std::string> keys = {"gpu_ranks_per_trial", "cpu_ranks_per_trial", "cpu_trials",
                                                "join_running", "join_min_seconds"};
  return keys;
}
// Every top-level key of a sweep file, each named once: a section's own keys (--set names them
// as "section.key"), and whether --set may name it at all ("space" and "set", a mapping and a
// list, are not settable key by key).
struct TopLevelKey {
  const char* name;
  const std::vector<std::string>& (*section_keys)();  // null: one value, not a section
  bool settable;
};
const std::vector<TopLevelKey>& top_level_keys() {
  static const std::vector<TopLevelKey> keys = {
      {"name", nullptr, true},       {"seed", nullptr, true},        {"config", nullptr, true},
      {"set", nullptr, false},       {"search", nullptr, true},      {"scheduler", nullptr, true},
      {"trials", nullptr, true},     {"metric", nullptr, true},      {"goal", nullptr, true},
      {"budget", budget_keys, true}, {"workers", worker_keys, true}, {"tpe", tpe_keys, true},
      {"space", nullptr, false},     {"pbt", pbt_keys, true},        {"asha", asha_keys, true}};
  return keys;
}
const std::vector<std::string>& sweep_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> names;
    for (const TopLevelKey& key : top_level_keys()) names.emplace_back(key.name);
    return names;
  }();
  return keys;
}
// The dotted keys --set may name in the sweep file itself (besides config.*): the one-value keys,
// then each section's keys.
std::vector<std::string> settable_keys() {
  std::vector<std::string> keys;
  for (const TopLevelKey& key : top_level_keys())
    if (key.settable && !key.section_keys) keys.emplace_back(key.name);
  for (const TopLevelKey& key : top_level_keys())
    if (key.settable && key.section_keys)
      for (const std::string& section_key : key.section_keys())
        keys.push_back(std::string(key.name) + "." + section_key);
  return keys;
}

std::string read_text_file(const std::string& path, const std::string& what) {
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    throw_input_error(path + ": cannot read the " + what + ": no such file");
  if (std::filesystem::is_directory(path, error))
    throw_input_error(path + ": cannot read the " + what + ": it is a directory");
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw_input_error(path + ": cannot read the " + what + ": " + std::strerror(errno));
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

// --set KEY=VALUE for the sweep file: `config.`-prefixed keys go to the base training config,
// the others are written into the sweep tree before it is read.
std::vector<std::string> apply_sweep_overrides(YAML::Node& root, const std::string& source,
                                               const std::vector<std::string>& overrides,
                                               std::vector<std::string>& base_overrides) {
  std::vector<std::string> overridden;
  for (const auto& assignment : overrides) {
    const std::string where = source + ": --set '" + assignment + "'";
    const auto equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0)
      throw_input_error(where + ": expected KEY=VALUE (e.g. trials=4 or config.data.path=x.h5)");
    const std::string key = assignment.substr(0, equals);
    if (key.starts_with("config.")) {
      base_overrides.push_back(assignment.substr(7));
      continue;
    }
    const auto keys = settable_keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      const std::string near = closest_match(key, keys);
      throw_input_error(where + ": unknown sweep key '" + key + "'" +
                        (near.empty() ? " (training-config keys take the prefix 'config.')"
                                      : " (did you mean '" + near + "'?)"));
    }
    const YAML::Node value = load_one_value(assignment.substr(equals + 1), where);
    const auto dot = key.find('.');
    if (dot == std::string::npos) {
      root[key] = value;
    } else {
      const std::string section = key.substr(0, dot);
      if (!root[section].IsDefined() || root[section].IsNull())
        root[section] = YAML::Node(YAML::NodeType::Map);
      YAML::Node mapping = root[section];
      if (mapping.IsMap()) mapping[key.substr(dot + 1)] = value;
    }
    overridden.push_back(key);
  }
  return overridden;
}

void read_space(const Reader& reader, const YAML::Node& space, SweepConfig& sweep) {
  if (!reader.require_mapping(space, "space"))
    fail_at(reader, "space", "is empty: name at least one key to search", space);
  const auto& training_keys = schema::dotted_keys();
  for (const auto& entry : space) {
    if (!entry.first.IsScalar())
      fail_at(reader, "space",
              "keys must be plain words (dotted training-config keys), got a " +
                  std::string(entry.first.IsSequence() ? "list" : "mapping"),
              entry.first);
    const std::string key = entry.first.Scalar();
    const std::string where = "space." + key;
    if (std::find(training_keys.begin(), training_keys.end(), key) == training_keys.end()) {
      const std::string near = closest_match(key, training_keys);
      fail_at(reader, "space",
              "unknown training-config key '" + key + "'" +
                  (near.empty() ? "" : " (did you mean '" + near + "'?)"),
              entry.first);
    }
    for (const auto& previous : sweep.space)
      if (previous.key == key) fail_at(reader, where, "appears twice", entry.first);
    const YAML::Node node = entry.second;
    if (!node.IsMap())
      fail_at(reader, where, "expected a mapping such as {type: choice, values: [...]}", node);
    SearchParameter parameter;
    parameter.key = key;
    parameter.type = reader.word<ParameterType>(node["type"], where + ".type");
    if (parameter.type == ParameterType::Choice) {
      reader.check_keys(node, where, {"type", "values"});
      const YAML::Node values = node["values"];
      if (!values.IsDefined() || !values.IsSequence())
        fail_at(reader, where + ".values", "expected a list of values", values.IsDefined() ? values : node);
      if (values.size() == 0)
        fail_at(reader, where + ".values", "is empty: a choice needs at least one value", values);
      for (const auto& value : values) {
        YAML::Emitter emitter;
        emitter << YAML::Flow << value;
        parameter.values.push_back(emitter.c_str());
      }
    } else {
      reader.check_keys(node, where, {"type", "low", "high"});
      if (parameter.type == ParameterType::Int) {
        parameter.low =
            static_cast<double>(reader.integer(node["low"], where + ".low", INT32_MIN, INT32_MAX));
        parameter.high =
            static_cast<double>(reader.integer(node["high"], where + ".high", INT32_MIN, INT32_MAX));
      } else {
        const std::optional<Bound> positive =
            parameter.type == ParameterType::LogUniform ? std::optional<Bound>(Bound{0.0, false}) : std::nullopt;
        parameter.low = reader.real(node["low"], where + ".low", positive, std::nullopt);
        parameter.high = reader.real(node["high"], where + ".high", positive, std::nullopt);
      }
      if (parameter.low > parameter.high)
        fail_at(reader, where,
                "low (" + format_number(parameter.low) + ") is larger than high (" +
                    format_number(parameter.high) + ")",
                node);
    }
    sweep.space.push_back(std::move(parameter));
  }
}

// Every value the space can produce, as KEY=VALUE, for the up-front check.
std::vector<std::string> extreme_values(const SearchParameter& parameter) {
  if (parameter.type == ParameterType::Choice) return parameter.values;
  if (parameter.type == ParameterType::Int)
    return {std::to_string(static_cast<long long>(parameter.low)),
            std::to_string(static_cast<long long>(parameter.high))};
  return {format_number(parameter.low), format_number(parameter.high)};
}

// The training-config keys a sweep decides per trial or per rank, which the user's own value
// would not survive: refused with the reason instead of being replaced silently. The base config
// file's train.epochs and seed are not among them: a base config is an ordinary training config,
// and docs/SWEEPS.md says that the budget and the sweep's seed set them.
std::string set_by_the_sweep(const std::string& key) {
  if (key == "train.max_steps")
    return "the budget sets each trial's train.max_steps (budget.unit, budget.min, budget.max)";
  if (key == "train.epochs")
    return "the budget sets each trial's train.epochs to span budget.max, so that every rung is a prefix of "
           "one learning-rate schedule";
  if (key == "seed")
    return "each trial's seed derives from the sweep's seed and the trial id (to give every trial one seed, "
           "search it: space: {seed: {type: choice, values: [N]}})";
  if (key == "device" || key == "threads")
    return "each rank's device and threads come from the base config once for the whole sweep";
  if (key == "elastic.global_batch")
    return "a trial keeps its global batch when a promotion moves it to a worker group of another size, so "
           "that every rung is a prefix of one trajectory";
  return "";
}

std::string trimmed_key(const std::string& assignment) {
  const std::string key = assignment.substr(0, assignment.find('='));
  const auto first = key.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return key.substr(first, key.find_last_not_of(" \t") - first + 1);
}

// test_accuracy, test_loss, train_loss or test_top<k>_accuracy (k >= 1, eval.top_k's).
std::string read_metric(const Reader& reader, const YAML::Node& node) {
  const std::string metric = reader.text(node, "metric");
  if (metric == "test_accuracy" || metric == "test_loss" || metric == "train_loss" || top_k_of_metric(metric))
    return metric;
  reader.fail("metric",
              "metric: '" + metric +
                  "' is not one of test_accuracy, test_loss, train_loss, test_top<k>_accuracy (e.g. "
                  "test_top5_accuracy)",
              node);
}

// `file_set_count` of sweep.base_overrides come from the file's `set:`, the rest from --set.
void refuse_keys_the_sweep_sets(const Reader& reader, const YAML::Node& root, const SweepConfig& sweep,
                                std::size_t file_set_count) {
  for (const auto& parameter : sweep.space)
    if (parameter.key == "train.max_steps" || parameter.key == "train.epochs" || parameter.key == "device" ||
        parameter.key == "threads" || parameter.key == "elastic.global_batch")
      fail_at(reader, "space." + parameter.key, "cannot be searched: " + set_by_the_sweep(parameter.key),
              root["space"][parameter.key]);
  if (sweep.base.elastic.global_batch != ResumeGlobalBatch::Keep)
    throw_input_error(sweep.source + ": elastic.global_batch: " + name_of(sweep.base.elastic.global_batch) +
                      " (from the base config " + sweep.base_path + " or the sweep's set:/--set): " +
                      set_by_the_sweep("elastic.global_batch") + "; remove it");
  // A trial's global batch is train.batch_size x the ranks of the group it starts on, cut evenly
  // over another group's ranks when a promotion moves it: a batch size probed per group, or local
  // batches listed or measured per rank, have no fixed group to fit.
  const auto refuse_base = [&](bool present, const std::string& setting) {
    if (!present) return;
    throw_input_error(sweep.source + ": " + setting + " (from the base config " + sweep.base_path +
                      " or the sweep's set:/--set): a sweep fixes each trial's global batch as "
                      "train.batch_size x the ranks of the group it starts on; give train.batch_size a "
                      "number (or search it) and remove " + setting.substr(0, setting.find(':')));
  };
  refuse_base(sweep.base.train.batch_size_auto, "train.batch_size: auto");
  refuse_base(!sweep.base.distributed.local_batches.empty(), "distributed.local_batches");
  refuse_base(sweep.base.distributed.batch_split != BatchSplitRule::Equal,
              "distributed.batch_split: " + name_of(sweep.base.distributed.batch_split));
  // train.max_steps may come from the base file too; `set: [train.max_steps=null]` removes it there.
  std::size_t max_steps_origin = sweep.base_overrides.size();
  for (std::size_t index = 0; index < sweep.base_overrides.size(); ++index) {
    const std::string& assignment = sweep.base_overrides[index];
    const std::string key = trimmed_key(assignment);
    if (key == "train.max_steps") max_steps_origin = index;
    if (key != "train.epochs" && key != "seed") continue;
    const std::string reason = "'" + assignment + "': " + set_by_the_sweep(key);
    if (index < file_set_count) fail_at(reader, "set", reason, root["set"]);
    throw_input_error(sweep.source + ": --set 'config." + assignment + "': " + set_by_the_sweep(key));
  }
  if (!sweep.base.train.max_steps) return;
  const std::string reason = set_by_the_sweep("train.max_steps");
  if (max_steps_origin == sweep.base_overrides.size())
    throw_input_error(sweep.base_path + ": train.max_steps: " + reason + "; remove it from the base config " +
                      "(named by key 'config' of " + sweep.source + "), or add train.max_steps=null to the " +
                      "sweep's set:");
  const std::string& assignment = sweep.base_overrides[max_steps_origin];
  if (max_steps_origin < file_set_count)
    fail_at(reader, "set", "'" + assignment + "': " + reason, root["set"]);
  throw_input_error(sweep.source + ": --set 'config." + assignment + "': " + reason);
}

}  // namespace

std::vector<double> asha_rung_budgets(double min, double max, int eta) {
  std::vector<double> budgets;
  // A relative tolerance keeps 1 * 3^2 == 9 from being lost to rounding.
  for (double budget = min; budget <= max * (1 + 1e-9); budget *= eta) budgets.push_back(budget);
  if (budgets.empty() || budgets.back() < max * (1 - 1e-9)) budgets.push_back(max);
  return budgets;
}

SweepConfig load_sweep(const std::string& path, const std::vector<std::string>& overrides) {
  // UTF-8 and one document, as training configs: a second document was dropped without a word.
  YAML::Node root = load_one_mapping(read_text_file(path, "sweep file"), path,
                                     "it needs at least 'config', 'space' and 'budget'; see docs/SWEEPS.md");

  SweepConfig sweep;
  sweep.source = path;
  std::vector<std::string> command_line_base;
  const auto overridden = apply_sweep_overrides(root, path, overrides, command_line_base);
  const Reader reader(path, overridden);
  reader.check_keys(root, "", sweep_keys());

  if (root["name"].IsDefined()) sweep.name = reader.text(root["name"], "name");
  if (root["seed"].IsDefined()) sweep.seed = reader.unsigned_integer(root["seed"], "seed");
  if (!root["config"].IsDefined())
    fail_at(reader, "config", "is missing: name the base training config file", root);
  sweep.base_path = reader.text(root["config"], "config");
  if (!sweep.base_path.empty() && sweep.base_path[0] != '/')
    sweep.base_path =
        (std::filesystem::path(path).parent_path() / sweep.base_path).lexically_normal().string();
  if (const YAML::Node set = root["set"]; set.IsDefined()) {
    if (!set.IsSequence())
      fail_at(reader, "set", "expected a list of KEY=VALUE strings for the base config", set);
    for (const auto& item : set) sweep.base_overrides.push_back(reader.text(item, "set"));
  }
  const std::size_t file_set_count = sweep.base_overrides.size();
  for (auto& assignment : command_line_base) sweep.base_overrides.push_back(std::move(assignment));
  if (root["search"].IsDefined()) sweep.search = reader.word<Search>(root["search"], "search");
  if (root["scheduler"].IsDefined())
    sweep.scheduler = reader.word<Scheduler>(root["scheduler"], "scheduler");
  if (root["trials"].IsDefined())
    sweep.trials =
        static_cast<int>(reader.integer(root["trials"], "trials", sweep.search == Search::Grid ? 0 : 1, 100000));
  else if (sweep.search != Search::Grid)
    fail_at(reader, "trials", "is missing: " + name_of(sweep.search) + " search needs the number of trials", root);
  if (root["metric"].IsDefined()) sweep.metric = read_metric(reader, root["metric"]);
  const std::optional<int> metric_top_k = top_k_of_metric(sweep.metric);
  sweep.goal = sweep.metric == "test_accuracy" || metric_top_k ? Goal::Maximize : Goal::Minimize;
  if (root["goal"].IsDefined()) sweep.goal = reader.word<Goal>(root["goal"], "goal");

  if (reader.require_mapping(root["budget"], "budget")) {
    const YAML::Node budget = root["budget"];
    reader.check_keys(budget, "budget", budget_keys());
    if (budget["unit"].IsDefined())
      sweep.budget_unit = reader.word<BudgetUnit>(budget["unit"], "budget.unit");
    if (budget["min"].IsDefined())
      sweep.min_budget = reader.real(budget["min"], "budget.min", Bound{0.0, false}, std::nullopt);
    // Far past any training, and within the step and epoch counts a trial's config holds (an int
    // of epochs; samples become int64 steps): larger, the conversion overflowed.
    const double largest_budget = sweep.budget_unit == BudgetUnit::Epochs ? 1e6 : 1e15;
    if (budget["max"].IsDefined())
      sweep.max_budget =
          reader.real(budget["max"], "budget.max", Bound{0.0, false}, Bound{largest_budget, true});
    if (budget["eta"].IsDefined())
      sweep.eta = static_cast<int>(reader.integer(budget["eta"], "budget.eta", 2, 1000));
    if (sweep.min_budget > sweep.max_budget && sweep.scheduler != Scheduler::Pbt)  // PBT has no budget.min
      fail_at(reader, "budget.min",
              format_number(sweep.min_budget) + " is larger than budget.max (" +
                  format_number(sweep.max_budget) + ")",
              budget["min"].IsDefined() ? budget["min"] : budget);
  } else {
    fail_at(reader, "budget", "is missing: give at least budget.max (and budget.min, budget.eta for ASHA)",
            root);
  }
  if (reader.require_mapping(root["workers"], "workers")) {
    const YAML::Node workers = root["workers"];
    reader.check_keys(workers, "workers", worker_keys());
    if (workers["gpu_ranks_per_trial"].IsDefined())
      sweep.gpu_ranks_per_trial = static_cast<int>(
          reader.integer(workers["gpu_ranks_per_trial"], "workers.gpu_ranks_per_trial", 1, 4096));
    if (workers["cpu_trials"].IsDefined())
      sweep.cpu_trials = reader.boolean(workers["cpu_trials"], "workers.cpu_trials");
    if (workers["join_running"].IsDefined())
      sweep.join_running = reader.boolean(workers["join_running"], "workers.join_running");
    if (workers["join_min_seconds"].IsDefined())
      sweep.join_min_seconds = reader.real(workers["join_min_seconds"], "workers.join_min_seconds",
                                           Bound{0.0, true}, std::nullopt);
    if (const YAML::Node sizes = workers["cpu_ranks_per_trial"]; sizes.IsDefined()) {
      // One size for every CPU group, or a list of sizes that repeats.
      sweep.cpu_ranks_per_trial.clear();
      if (sizes.IsSequence()) {
        if (sizes.size() == 0)
          fail_at(reader, "workers.cpu_ranks_per_trial", "is an empty list: give at least one group size",
                  sizes);
        for (std::size_t index = 0; index < sizes.size(); ++index)
          sweep.cpu_ranks_per_trial.push_back(static_cast<int>(reader.integer(
              sizes[index], "workers.cpu_ranks_per_trial[" + std::to_string(index) + "]", 1, 4096)));
      } else {
        sweep.cpu_ranks_per_trial.push_back(
            static_cast<int>(reader.integer(sizes, "workers.cpu_ranks_per_trial", 1, 4096)));
      }
    }
  }
  if (reader.require_mapping(root["tpe"], "tpe")) {
    const YAML::Node tpe = root["tpe"];
    if (sweep.search != Search::Tpe)
      fail_at(reader, "tpe", "applies to search: tpe only (search is " + name_of(sweep.search) + ")", tpe);
    reader.check_keys(tpe, "tpe", tpe_keys());
    if (tpe["startup_trials"].IsDefined())
      sweep.tpe_startup_trials =
          static_cast<int>(reader.integer(tpe["startup_trials"], "tpe.startup_trials", 1, 100000));
    if (tpe["candidates"].IsDefined())
      sweep.tpe_candidates = static_cast<int>(reader.integer(tpe["candidates"], "tpe.candidates", 1, 100000));
  }
  if (reader.require_mapping(root["asha"], "asha")) {
    const YAML::Node asha = root["asha"];
    if (sweep.scheduler != Scheduler::Asha)
      fail_at(reader, "asha",
              "applies to scheduler: asha only (this sweep's scheduler is " + name_of(sweep.scheduler) + ")",
              asha);
    reader.check_keys(asha, "asha", asha_keys());
    if (asha["rule"].IsDefined()) sweep.asha_rule = reader.word<AshaRule>(asha["rule"], "asha.rule");
    if (asha["brackets"].IsDefined()) {
      // Bracket b starts at rung b, so there are at most as many brackets as rungs.
      const auto rungs =
          static_cast<std::int64_t>(asha_rung_budgets(sweep.min_budget, sweep.max_budget, sweep.eta).size());
      sweep.asha_brackets = static_cast<int>(reader.integer(asha["brackets"], "asha.brackets", 1, rungs));
    }
  }
  read_pbt_section(reader, root, sweep);
  if (!root["space"].IsDefined()) fail_at(reader, "space", "is missing: name the keys to search", root);
  read_space(reader, root["space"], sweep);
  if (sweep.search == Search::Grid)
    for (const auto& parameter : sweep.space)
      if (parameter.type == ParameterType::Uniform || parameter.type == ParameterType::LogUniform)
        fail_at(reader, "space." + parameter.key,
                "is " + name_of(parameter.type) + ", but grid search needs values it can list (choice or int)",
                root["space"][parameter.key]);

  if (sweep.search == Search::Grid && sweep.trials == 0 && grid_points(sweep) > largest_grid)
    fail_at(reader, "space",
            "the grid has more than " + std::to_string(largest_grid) +
                " points: narrow it, set trials to run only its first ones, or use search: random",
            root["space"]);

  // The base config, then every value the space can take, through the training schema: a
  // learning rate below zero or a batch size of 0 fails here, naming the space key.
  sweep.base_text = read_text_file(sweep.base_path, "base training config (key 'config' of " + path + ")");
  sweep.base = trial_config(sweep, {});
  // A top-k metric the trials would not report otherwise is added to the base's eval.top_k (a k
  // above the data's classes then fails each trial's set-up, naming eval.top_k).
  std::vector<int> top_k = sweep.base.eval.top_k;
  if (metric_top_k && std::find(top_k.begin(), top_k.end(), *metric_top_k) == top_k.end()) {
    top_k.push_back(*metric_top_k);
    std::string list;
    for (const int k : top_k) list += (list.empty() ? "" : ", ") + std::to_string(k);
    sweep.base_overrides.push_back("eval.top_k=[" + list + "]");
    sweep.base = trial_config(sweep, {});
  }
  refuse_keys_the_sweep_sets(reader, root, sweep, file_set_count);
  for (const auto& parameter : sweep.space)
    for (const auto& value : extreme_values(parameter)) {
      try {
        trial_config(sweep, {parameter.key + "=" + value});
      } catch (const Error& error) {
        throw_input_error(path + ": space." + parameter.key + ": the value " + value +
                          " is not valid for the training config: " + error.what());
      }
    }
  return sweep;
}

std::int64_t grid_value_count(const SearchParameter& parameter) {
  if (parameter.type == ParameterType::Int)
    return static_cast<std::int64_t>(parameter.high) - static_cast<std::int64_t>(parameter.low) + 1;
  return static_cast<std::int64_t>(parameter.values.size());
}

std::int64_t grid_points(const SweepConfig& sweep) {
  std::int64_t points = 1;
  for (const auto& parameter : sweep.space) {
    // Both factors are at most largest_grid + 1 here, so the product cannot overflow.
    points *= std::min(grid_value_count(parameter), largest_grid + 1);
    if (points > largest_grid) return largest_grid + 1;
  }
  return points;
}

std::optional<int> top_k_of_metric(const std::string& metric) {
  const std::string prefix = "test_top", suffix = "_accuracy";
  if (!metric.starts_with(prefix) || !metric.ends_with(suffix)) return std::nullopt;
  const std::string digits = metric.substr(prefix.size(), metric.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 6 || digits[0] == '0' ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoi(digits);
}

Config trial_config(const SweepConfig& sweep, const std::vector<std::string>& assignments) {
  std::vector<std::string> overrides = sweep.base_overrides;
  overrides.insert(overrides.end(), assignments.begin(), assignments.end());
  return parse(sweep.base_text, sweep.base_path, overrides);
}

}  // namespace phalanx::config
