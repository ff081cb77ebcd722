// The sweep file is validated like a training config: every bad key or value is an InvalidInput
// error (exit status 2) naming the file and the key, with a suggestion for a misspelt key.
#include <gtest/gtest.h>

#include <fstream>

#include "config/expect_input_error.hpp"
#include "phalanx/config/sweep_config.hpp"
#include "support/test_support.hpp"

using phalanx::config::load_sweep;
using phalanx::testing::expect_input_error;

namespace {

class SweepFile : public ::testing::Test {
 protected:
  SweepFile() : scratch_("sweep_file") {
    write("base.yaml",
          "model: {preset: fmnist_cnn}\ndata: {path: data.h5}\ntrain: {epochs: 2, batch_size: 32}\n");
  }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(scratch_.file(name)) << text;
    return scratch_.file(name);
  }
  // A valid sweep with `replace` substituted for `original` in its text.
  std::string sweep(const std::string& original = "", const std::string& replace = "") {
    std::string text =
        "name: test\nconfig: base.yaml\ntrials: 4\nbudget: {min: 1, max: 9, eta: 3}\n"
        "space:\n  optimizer.learning_rate: {type: loguniform, low: 0.001, high: 0.1}\n"
        "  train.batch_size: {type: choice, values: [16, 32]}\n";
    if (!original.empty()) text.replace(text.find(original), original.size(), replace);
    return write("sweep.yaml", text);
  }
  phalanx::testing::ScratchDirectory scratch_;
};

}  // namespace

TEST_F(SweepFile, ReadsAValidSweep) {
  const auto sweep = load_sweep(this->sweep());
  EXPECT_EQ(sweep.name, "test");
  EXPECT_EQ(sweep.trials, 4);
  EXPECT_EQ(phalanx::config::name_of(sweep.search), "random");
  EXPECT_EQ(phalanx::config::name_of(sweep.scheduler), "asha");
  EXPECT_EQ(phalanx::config::name_of(sweep.goal), "maximize");
  EXPECT_DOUBLE_EQ(sweep.max_budget, 9);
  ASSERT_EQ(sweep.space.size(), 2u);
  EXPECT_EQ(sweep.space[1].values, (std::vector<std::string>{"16", "32"}));
  EXPECT_EQ(sweep.base.train.batch_size, 32);
  // --set reaches both the sweep keys and, with config., the base training config.
  const auto overridden =
      load_sweep(this->sweep(), {"trials=2", "budget.max=3", "config.train.log_every_steps=5"});
  EXPECT_EQ(overridden.trials, 2);
  EXPECT_DOUBLE_EQ(overridden.max_budget, 3);
  EXPECT_EQ(overridden.base.train.log_every_steps, 5);
}

TEST_F(SweepFile, UnknownKeyInTheSpaceSuggestsTheRightOne) {
  expect_input_error(
      [&] { load_sweep(sweep("optimizer.learning_rate:", "optimizer.learnin_rate:")); },
      {"sweep.yaml", "space", "optimizer.learnin_rate", "did you mean 'optimizer.learning_rate'"});
}

TEST_F(SweepFile, IsOneUtf8DocumentAsATrainingConfigIs) {
  // yaml-cpp reads the first document of a text: a second one was dropped without a word.
  expect_input_error([&] { load_sweep(sweep("budget:", "---\nbudget:")); },
                     {"sweep.yaml", "holds 2 YAML documents"});
  expect_input_error([&] { load_sweep(sweep("trials:", "# caf\xe9\ntrials:")); },
                     {"sweep.yaml", "not UTF-8"});
  expect_input_error([&] { load_sweep(this->sweep(), {"trials=2\n---\n3"}); },
                     {"--set 'trials=2\n---\n3': the value holds 2 YAML documents"});
}

TEST_F(SweepFile, EmptyChoiceIsAnError) {
  expect_input_error([&] { load_sweep(sweep("values: [16, 32]", "values: []")); },
                     {"sweep.yaml", "space.train.batch_size.values", "empty"});
}

TEST_F(SweepFile, MinimumBudgetAboveMaximumIsAnError) {
  expect_input_error([&] { load_sweep(sweep("min: 1, max: 9", "min: 10, max: 9")); },
                     {"sweep.yaml", "budget.min", "larger than budget.max"});
}

TEST_F(SweepFile, EtaBelowTwoIsAnError) {
  expect_input_error([&] { load_sweep(sweep("eta: 3", "eta: 1")); }, {"sweep.yaml", "budget.eta"});
}

TEST_F(SweepFile, OtherMistakesNameTheirKey) {
  expect_input_error([&] { load_sweep(sweep("trials: 4", "trails: 4")); },
                     {"sweep.yaml", "did you mean 'trials'"});
  expect_input_error([&] { load_sweep(sweep("type: loguniform", "type: logarithmic")); },
                     {"space.optimizer.learning_rate.type"});
  expect_input_error([&] { load_sweep(sweep("low: 0.001", "low: 0")); },
                     {"space.optimizer.learning_rate.low"});
  expect_input_error([&] { load_sweep(sweep("low: 0.001, high: 0.1", "low: 0.5, high: 0.1")); },
                     {"space.optimizer.learning_rate", "larger than high"});
  // A value the training schema refuses fails up front, naming the space key.
  expect_input_error([&] { load_sweep(sweep("values: [16, 32]", "values: [0, 32]")); },
                     {"space.train.batch_size", "the value 0"});
  expect_input_error([&] { load_sweep(sweep("base.yaml", "missing.yaml")); },
                     {"missing.yaml", "no such file"});
  expect_input_error([&] { load_sweep(sweep(), {"trails=3"}); }, {"--set", "did you mean 'trials'"});
  expect_input_error([&] { load_sweep(sweep("name: test\n", "name: test\nsearch: grid\n")); },
                     {"space.optimizer.learning_rate", "grid search"});
}

// The budget sets each trial's train.max_steps and train.epochs, the sweep's seed each trial's
// seed, the base config each rank's device and threads: a value the user writes for them where it
// would be replaced is refused, naming where it was written, instead of being dropped silently.
TEST_F(SweepFile, MaxStepsInTheBaseConfigIsRefusedUnlessTheSweepRemovesIt) {
  write("base.yaml",
        "model: {preset: fmnist_cnn}\ndata: {path: data.h5}\ntrain: {epochs: 2, batch_size: 32, max_steps: "
        "40}\n");
  expect_input_error(
      [&] { load_sweep(sweep()); },
      {"base.yaml: train.max_steps", "the budget sets each trial's train.max_steps", "train.max_steps=null"});
  const auto removed = load_sweep(sweep("trials: 4\n", "trials: 4\nset: [train.max_steps=null]\n"));
  EXPECT_FALSE(removed.base.train.max_steps.has_value());
  const auto removed_on_the_command_line = load_sweep(sweep(), {"config.train.max_steps=null"});
  EXPECT_FALSE(removed_on_the_command_line.base.train.max_steps.has_value());
}

TEST_F(SweepFile, SettingAKeyTheSweepSetsIsRefused) {
  expect_input_error([&] { load_sweep(sweep("trials: 4\n", "trials: 4\nset: [train.max_steps=30]\n")); },
                     {"sweep.yaml: set: 'train.max_steps=30'", "budget", "(line 4)"});
  expect_input_error([&] { load_sweep(sweep("trials: 4\n", "trials: 4\nset: [train.epochs=4]\n")); },
                     {"sweep.yaml: set: 'train.epochs=4'", "span budget.max"});
  expect_input_error([&] { load_sweep(sweep("trials: 4\n", "trials: 4\nset: [seed=3]\n")); },
                     {"sweep.yaml: set: 'seed=3'", "sweep's seed and the trial id", "type: choice"});
  expect_input_error([&] { load_sweep(sweep(), {"config.train.max_steps=7"}); },
                     {"sweep.yaml: --set 'config.train.max_steps=7'", "budget"});
  expect_input_error([&] { load_sweep(sweep(), {"config.train.epochs=5"}); },
                     {"sweep.yaml: --set 'config.train.epochs=5'", "budget"});
  expect_input_error([&] { load_sweep(sweep(), {"config.seed=5"}); },
                     {"sweep.yaml: --set 'config.seed=5'", "trial id"});
  // The base file's own train.epochs and seed are the sweep's to set (docs/SWEEPS.md): a base
  // config is an ordinary training config.
  write("base.yaml", "seed: 9\nmodel: {preset: fmnist_cnn}\ndata: {path: data.h5}\ntrain: {epochs: 2}\n");
  EXPECT_EQ(load_sweep(sweep()).base.seed, 9u);
}

TEST_F(SweepFile, SearchingAKeyTheSweepSetsIsRefused) {
  for (const std::string key : {"train.max_steps", "train.epochs", "threads", "device"}) {
    const std::string values = key == "device" ? "[cpu, auto]" : "[2, 4]";
    expect_input_error(
        [&] {
          load_sweep(sweep("  train.batch_size:",
                           "  " + key + ": {type: choice, values: " + values + "}\n  train.batch_size:"));
        },
        {"sweep.yaml: space." + key + ": cannot be searched"});
  }
  // The seed may be searched: the trial then trains with the searched value.
  const auto seeded =
      load_sweep(sweep("  train.batch_size:", "  seed: {type: choice, values: [3]}\n  train.batch_size:"));
  ASSERT_EQ(seeded.space.size(), 3u);
  EXPECT_EQ(seeded.space[1].key, "seed");
}

// CPU worker groups: one size for all, or a list of sizes that repeats (docs/SWEEPS.md).
TEST_F(SweepFile, CpuGroupSizesAreOneNumberOrAList) {
  EXPECT_EQ(load_sweep(sweep()).cpu_ranks_per_trial, (std::vector<int>{1}));
  EXPECT_EQ(
      load_sweep(sweep("trials: 4\n", "trials: 4\nworkers: {cpu_ranks_per_trial: 2}\n")).cpu_ranks_per_trial,
      (std::vector<int>{2}));
  EXPECT_EQ(load_sweep(sweep(), {"workers.cpu_ranks_per_trial=[1, 2]"}).cpu_ranks_per_trial,
            (std::vector<int>{1, 2}));
  expect_input_error(
      [&] { load_sweep(sweep("trials: 4\n", "trials: 4\nworkers: {cpu_ranks_per_trial: [1, 0]}\n")); },
      {"sweep.yaml", "workers.cpu_ranks_per_trial[1]"});
  expect_input_error(
      [&] { load_sweep(sweep("trials: 4\n", "trials: 4\nworkers: {cpu_ranks_per_trial: []}\n")); },
      {"sweep.yaml", "workers.cpu_ranks_per_trial", "empty list"});
}

// No idle tail (docs/SWEEPS.md): on by default, with a minimum expected time left to join a trial.
TEST_F(SweepFile, JoiningRunningTrialsIsOnByDefaultAndCanBeTurnedOff) {
  const auto defaults = load_sweep(sweep());
  EXPECT_TRUE(defaults.join_running);
  EXPECT_DOUBLE_EQ(defaults.join_min_seconds, 10.0);
  const auto off = load_sweep(sweep(), {"workers.join_running=false", "workers.join_min_seconds=2.5"});
  EXPECT_FALSE(off.join_running);
  EXPECT_DOUBLE_EQ(off.join_min_seconds, 2.5);
  EXPECT_DOUBLE_EQ(load_sweep(sweep(), {"workers.join_min_seconds=0"}).join_min_seconds, 0.0);
  expect_input_error([&] { load_sweep(sweep(), {"workers.join_min_seconds=-1"}); },
                     {"sweep.yaml", "workers.join_min_seconds"});
  expect_input_error([&] { load_sweep(sweep(), {"workers.join_running=sometimes"}); },
                     {"sweep.yaml", "workers.join_running"});
  expect_input_error([&] { load_sweep(sweep(), {"workers.join_runing=true"}); },
                     {"sweep.yaml", "join_running"});
}

// A trial keeps its global batch when it moves to a group of another size: another one is refused.
TEST_F(SweepFile, AnotherGlobalBatchOnResumeIsRefused) {
  expect_input_error([&] { load_sweep(sweep(), {"config.elastic.global_batch=change"}); },
                     {"sweep.yaml", "elastic.global_batch: change", "keeps its global batch"});
  expect_input_error(
      [&] {
        load_sweep(
            sweep("  train.batch_size:",
                  "  elastic.global_batch: {type: choice, values: [keep, change]}\n  train.batch_size:"));
      },
      {"sweep.yaml: space.elastic.global_batch: cannot be searched"});
}

// A trial's global batch is train.batch_size x the ranks of the group it starts on: a probed batch
// size or a per-rank split in the base config has no fixed group to fit, and is refused by name.
TEST_F(SweepFile, PerGroupBatchSizingInTheBaseIsRefused) {
  expect_input_error([&] { load_sweep(sweep(), {"config.train.batch_size=auto"}); },
                     {"sweep.yaml", "train.batch_size: auto", "train.batch_size x the ranks of the group"});
  expect_input_error([&] { load_sweep(sweep(), {"config.distributed.local_batches=[32, 32]"}); },
                     {"sweep.yaml", "distributed.local_batches", "remove distributed.local_batches"});
  expect_input_error([&] { load_sweep(sweep(), {"config.distributed.batch_split=throughput"}); },
                     {"sweep.yaml", "distributed.batch_split: throughput", "remove distributed.batch_split"});
}

// train.activation_dtype in a space is checked against the base's train.precision, value by value.
TEST_F(SweepFile, ReducedActivationsNeedThatPrecisionInTheBase) {
  const std::string space = "  train.batch_size: {type: choice, values: [16, 32]}\n";
  const std::string activations = "  train.activation_dtype: {type: choice, values: [fp32, bf16]}\n";
  expect_input_error(
      [&] { load_sweep(sweep(space, activations)); },
      {"space.train.activation_dtype", "the value bf16",
       "train.activation_dtype: bf16 must be fp32, auto or equal to train.precision, which is fp32"});
  const auto sweep_config = load_sweep(sweep(space, activations), {"config.train.precision=bf16"});
  ASSERT_EQ(sweep_config.space.size(), 2u);
  EXPECT_EQ(sweep_config.space[1].values, (std::vector<std::string>{"fp32", "bf16"}));
}

// A grid of 10^9 points (or 2^32 values of one int key) is refused at once, naming the space,
// instead of being listed: nothing is allocated per point. With `trials` it runs the first ones.
TEST_F(SweepFile, GridTooLargeToListIsRefusedUnlessTrialsCapsIt) {
  const std::string huge =
      "search: grid\nscheduler: full\nbudget: {max: 1}\nspace:\n"
      "  optimizer.momentum: {type: choice, values: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]}\n"
      "  train.batch_size: {type: int, low: 1, high: 1000}\n"
      "  train.log_every_steps: {type: int, low: 1, high: 100000}\n";
  expect_input_error([&] { load_sweep(write("huge.yaml", "name: huge\nconfig: base.yaml\n" + huge)); },
                     {"huge.yaml", "space", "more than 1000000 points"});
  const std::string whole_int_range =
      "name: wide\nconfig: base.yaml\nsearch: grid\nbudget: {max: 1}\nspace:\n"
      "  data.augment.cutout: {type: int, low: -2147483648, high: 2147483647}\n";
  expect_input_error([&] { load_sweep(write("wide.yaml", whole_int_range)); },
                     {"wide.yaml", "space", "more than 1000000 points"});
  const auto capped = load_sweep(write("capped.yaml", "name: capped\nconfig: base.yaml\ntrials: 5\n" + huge));
  EXPECT_EQ(phalanx::config::grid_points(capped), phalanx::config::largest_grid + 1);
}

// Found by the sweep-file fuzzer: a space entry without `type` (here misspelt) escaped as the YAML
// library's own exception instead of an input error naming the key.
TEST_F(SweepFile, SpaceEntryWithoutATypeNamesTheKey) {
  expect_input_error([&] { load_sweep(sweep("{type: loguniform,", "{typo: loguniform,")); },
                     {"sweep.yaml", "space.optimizer.learning_rate.type", "got nothing"});
}

TEST_F(SweepFile, TopKAccuracyMetricIsMaximisedAndReportedByEveryTrial) {
  const auto top5 = load_sweep(sweep("trials: 4\n", "trials: 4\nmetric: test_top5_accuracy\n"));
  EXPECT_EQ(top5.metric, "test_top5_accuracy");
  EXPECT_EQ(phalanx::config::name_of(top5.goal), "maximize");
  EXPECT_EQ(top5.base.eval.top_k, (std::vector<int>{5}));
  // A k the base config lists already stays as it is; another joins the listed ones.
  write("base.yaml",
        "model: {preset: fmnist_cnn}\ndata: {path: data.h5}\ntrain: {epochs: 2, batch_size: 32}\n"
        "eval: {top_k: [2]}\n");
  EXPECT_EQ(load_sweep(sweep("trials: 4\n", "trials: 4\nmetric: test_top2_accuracy\n")).base.eval.top_k,
            (std::vector<int>{2}));
  EXPECT_EQ(load_sweep(sweep("trials: 4\n", "trials: 4\nmetric: test_top3_accuracy\n")).base.eval.top_k,
            (std::vector<int>{2, 3}));
  EXPECT_EQ(phalanx::config::top_k_of_metric("test_top10_accuracy"), 10);
  for (const char* bad :
       {"test_top0_accuracy", "test_top_accuracy", "test_top05_accuracy", "test_topx_accuracy"})
    expect_input_error(
        [&] { load_sweep(sweep("trials: 4\n", std::string("trials: 4\nmetric: ") + bad + "\n")); },
        {"sweep.yaml", "metric", bad, "test_top<k>_accuracy"});
}

TEST_F(SweepFile, TpeSearchTakesItsStartupTrialsAndCandidates) {
  const auto defaults = load_sweep(sweep("trials: 4", "trials: 4\nsearch: tpe"));
  EXPECT_EQ(phalanx::config::name_of(defaults.search), "tpe");
  EXPECT_EQ(defaults.tpe_startup_trials, 10);  // Optuna's n_startup_trials
  EXPECT_EQ(defaults.tpe_candidates, 24);      // Optuna's n_ei_candidates
  const auto set = load_sweep(sweep("trials: 4", "trials: 4\nsearch: tpe\ntpe: {startup_trials: 3, candidates: 48}"));
  EXPECT_EQ(set.tpe_startup_trials, 3);
  EXPECT_EQ(set.tpe_candidates, 48);
  const auto overridden = load_sweep(sweep("trials: 4", "trials: 4\nsearch: tpe"), {"tpe.startup_trials=2"});
  EXPECT_EQ(overridden.tpe_startup_trials, 2);
}

TEST_F(SweepFile, BadTpeSettingsNameTheirKey) {
  expect_input_error([&] { load_sweep(sweep("trials: 4", "trials: 4\nsearch: tpe\ntpe: {startup_trials: 0}")); },
                     {"sweep.yaml", "tpe.startup_trials"});
  expect_input_error([&] { load_sweep(sweep("trials: 4", "trials: 4\nsearch: tpe\ntpe: {candidates: 0}")); },
                     {"sweep.yaml", "tpe.candidates"});
  expect_input_error([&] { load_sweep(sweep("trials: 4", "trials: 4\nsearch: tpe\ntpe: {startup: 3}")); },
                     {"sweep.yaml", "tpe.startup", "startup_trials"});
  // TPE settings in a random sweep would be ignored without a word.
  expect_input_error([&] { load_sweep(sweep("trials: 4", "trials: 4\ntpe: {startup_trials: 3}")); },
                     {"sweep.yaml", "tpe", "search: tpe"});
  expect_input_error([&] { load_sweep(sweep("trials: 4", "search: tpe")); }, {"sweep.yaml", "trials", "tpe"});
}

TEST_F(SweepFile, AshaTakesItsRule) {
  EXPECT_EQ(phalanx::config::name_of(load_sweep(sweep()).asha_rule), "promotion");  // Li et al.'s
  EXPECT_EQ(
      phalanx::config::name_of(load_sweep(sweep("trials: 4", "trials: 4\nasha: {rule: stopping}")).asha_rule),
      "stopping");
  EXPECT_EQ(phalanx::config::name_of(load_sweep(sweep(), {"asha.rule=stopping"}).asha_rule), "stopping");
}

TEST_F(SweepFile, AshaTakesAsManyBracketsAsItHasRungs) {
  EXPECT_EQ(load_sweep(sweep()).asha_brackets, 1);
  EXPECT_EQ(load_sweep(sweep("trials: 4", "trials: 4\nasha: {brackets: 3}")).asha_brackets,
            3);  // rungs 1, 3, 9
  EXPECT_EQ(load_sweep(sweep(), {"asha.brackets=2"}).asha_brackets, 2);
  // Bracket b starts at rung b: a fourth bracket would start above the top rung.
  expect_input_error([&] { load_sweep(sweep("trials: 4", "trials: 4\nasha: {brackets: 4}")); },
                     {"sweep.yaml", "asha.brackets", "4"});
  expect_input_error([&] { load_sweep(sweep(), {"asha.brackets=0"}); }, {"sweep.yaml", "asha.brackets"});
  expect_input_error(
      [&] {
        load_sweep(sweep(), {"budget.max=3", "asha.brackets=3"});
      },
      {"sweep.yaml", "asha.brackets"});  // rungs 1 and 3
  EXPECT_EQ(phalanx::config::asha_rung_budgets(1, 9, 3), (std::vector<double>{1, 3, 9}));
  EXPECT_EQ(phalanx::config::asha_rung_budgets(1, 10, 3), (std::vector<double>{1, 3, 9, 10}));
  EXPECT_EQ(phalanx::config::asha_rung_budgets(2, 2, 3), (std::vector<double>{2}));
}

TEST_F(SweepFile, BadAshaSettingsNameTheirKey) {
  expect_input_error([&] { load_sweep(sweep("trials: 4", "trials: 4\nasha: {rule: pruning}")); },
                     {"sweep.yaml", "asha.rule", "pruning", "stopping"});
  expect_input_error([&] { load_sweep(sweep("trials: 4", "trials: 4\nasha: {rules: stopping}")); },
                     {"sweep.yaml", "asha.rules", "rule"});
  expect_input_error([&] { load_sweep(sweep(), {"asha.rules=stopping"}); },
                     {"sweep.yaml", "asha.rules", "asha.rule"});
  // A rule for another scheduler would be ignored without a word.
  expect_input_error(
      [&] { load_sweep(sweep("trials: 4", "trials: 4\nscheduler: full\nasha: {rule: stopping}")); },
      {"sweep.yaml", "asha", "scheduler: asha", "full"});
}

TEST_F(SweepFile, ReadsThePbtSectionWithItsDefaults) {
  const auto sweep = load_sweep(this->sweep("budget:", "scheduler: pbt\npbt: {interval: 3}\nbudget:"));
  EXPECT_EQ(phalanx::config::name_of(sweep.scheduler), "pbt");
  EXPECT_DOUBLE_EQ(sweep.pbt.interval, 3);
  EXPECT_EQ(sweep.pbt.population, 4);  // trials
  EXPECT_DOUBLE_EQ(sweep.pbt.quantile, 0.25);
  EXPECT_EQ(sweep.pbt.perturbation, (std::vector<double>{0.8, 1.2}));
  EXPECT_DOUBLE_EQ(sweep.pbt.resample_probability, 0.25);
  const auto set = load_sweep(this->sweep("budget:", "scheduler: pbt\npbt: {interval: 3}\nbudget:"),
                              {"pbt.population=2", "pbt.quantile=0.5", "pbt.perturbation=[0.5, 2]"});
  EXPECT_EQ(set.pbt.population, 2);
  EXPECT_DOUBLE_EQ(set.pbt.quantile, 0.5);
  EXPECT_EQ(set.pbt.perturbation, (std::vector<double>{0.5, 2.0}));
  // budget.min is ASHA's: a PBT sweep shorter than its default of 1 is fine.
  const auto short_sweep = load_sweep(this->sweep("budget:", "scheduler: pbt\npbt: {interval: 0.2}\nbudget:"),
                                      {"budget.max=0.6"});
  EXPECT_DOUBLE_EQ(short_sweep.max_budget, 0.6);
}

TEST_F(SweepFile, BadPbtValuesNameTheirKey) {
  const auto with = [&](const std::string& section) {
    return sweep("budget:", "scheduler: pbt\npbt: " + section + "\nbudget:");
  };
  expect_input_error([&] { load_sweep(with("{interval: 0}")); }, {"sweep.yaml", "pbt.interval"});
  expect_input_error([&] { load_sweep(with("{interval: 10}")); },
                     {"sweep.yaml", "pbt.interval", "larger than budget.max"});
  expect_input_error([&] { load_sweep(with("{quantile: 0.25}")); },
                     {"sweep.yaml", "pbt.interval", "missing"});
  expect_input_error([&] { load_sweep(with("{interval: 1, quantile: 0.6}")); },
                     {"sweep.yaml", "pbt.quantile"});
  expect_input_error([&] { load_sweep(with("{interval: 1, quantile: 0}")); }, {"sweep.yaml", "pbt.quantile"});
  expect_input_error([&] { load_sweep(with("{interval: 1, population: 1}")); },
                     {"sweep.yaml", "pbt.population"});
  expect_input_error([&] { load_sweep(with("{interval: 1, population: 5}")); },
                     {"sweep.yaml", "pbt.population", "larger than trials"});
  expect_input_error([&] { load_sweep(with("{interval: 1, perturbation: [0.8, -1]}")); },
                     {"sweep.yaml", "pbt.perturbation[1]"});
  expect_input_error([&] { load_sweep(with("{interval: 1, resample_probability: 1.5}")); },
                     {"sweep.yaml", "pbt.resample_probability"});
  expect_input_error([&] { load_sweep(with("{interval: 1, mutation: 2}")); },
                     {"sweep.yaml", "pbt", "mutation"});
  expect_input_error([&] { load_sweep(sweep("budget:", "scheduler: pbt\nbudget:")); }, {"sweep.yaml", "pbt"});
  expect_input_error([&] { load_sweep(sweep("budget:", "pbt: {interval: 1}\nbudget:")); },
                     {"sweep.yaml", "pbt", "scheduler: pbt"});
}
