// PBT's kept checkpoints, the exploit's copy and the lineage table (see pbt_lineage.hpp).
#include "phalanx/sweep/pbt_lineage.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/sweep/worker.hpp"
#include "phalanx/train/run_directory.hpp"

namespace phalanx::sweep {
namespace {

nlohmann::json assignments_json(const TrialParameters& parameters) {
  nlohmann::json values = nlohmann::json::array();
  for (const auto& [key, value] : parameters.values) values.push_back({key, value});
  return values;
}

// Copies `from` to `to` through an AtomicFile: `to` is the old file or the whole new one.
void copy_atomically(const std::string& from, const std::string& to) {
  AtomicFile file(to);
  std::error_code error;
  std::filesystem::copy_file(from, file.temporary_path(), std::filesystem::copy_options::overwrite_existing,
                             error);
  if (error)
    throw_run_failure("cannot copy " + from + " to " + file.temporary_path() + ": " + error.message());
  file.commit();
}

}  // namespace

void create_pbt_lineage(const Database& database) {
  database.execute(R"sql(
    CREATE TABLE IF NOT EXISTS pbt_lineage (
      trial_id INTEGER NOT NULL REFERENCES trials(trial_id), interval INTEGER NOT NULL, budget REAL NOT NULL,
      parent_trial INTEGER, parent_interval INTEGER, parameters TEXT NOT NULL, assignments TEXT NOT NULL,
      seed INTEGER NOT NULL, metric REAL, checkpoint TEXT, PRIMARY KEY (trial_id, interval));
  )sql");
}

void record_pbt_steps(const Database& database, const std::optional<PbtStep>& finished,
                      const std::vector<PbtStep>& decided, const std::vector<double>& budgets,
                      const std::vector<std::string>& copied, const std::vector<std::string>& configs) {
  auto insert = [&](const PbtStep& step, const std::string& checkpoint) {
    Statement statement(database,
                        "INSERT INTO pbt_lineage (trial_id, interval, budget, parent_trial, parent_interval, "
                        "parameters, assignments, seed, metric, checkpoint) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
                        "ON CONFLICT (trial_id, interval) DO UPDATE SET metric = ?9");
    statement.bind(1, step.trial)
        .bind(2, step.interval)
        .bind(3, budgets.at(static_cast<std::size_t>(step.interval)));
    if (step.exploited())
      statement.bind(4, step.parent_trial).bind(5, step.parent_interval);
    else
      statement.bind_null(4).bind_null(5);
    statement.bind(6, step.parameters.to_json().dump())
        .bind(7, assignments_json(step.parameters).dump())
        .bind(8, static_cast<std::int64_t>(step.parameters.seed));
    if (step.metric)
      statement.bind(9, *step.metric);
    else
      statement.bind_null(9);
    if (checkpoint.empty())
      statement.bind_null(10);
    else
      statement.bind(10, checkpoint);
    statement.run();
  };
  Transaction transaction(database);
  if (finished) insert(*finished, "");
  for (std::size_t index = 0; index < decided.size(); ++index) {
    const PbtStep& next = decided[index];
    insert(next, copied.at(index));
    Statement(database, "UPDATE trials SET parameters = ?1, config = ?2, seed = ?3 WHERE trial_id = ?4")
        .bind(1, next.parameters.to_json().dump())
        .bind(2, configs.at(index))
        .bind(3, static_cast<std::int64_t>(next.parameters.seed))
        .bind(4, next.trial)
        .run();
  }
  transaction.commit();
}

std::vector<PbtStep> read_pbt_lineage(const Database& database) {
  std::vector<PbtStep> steps;
  Statement statement(database,
                      "SELECT trial_id, interval, parent_trial, parent_interval, assignments, seed, metric "
                      "FROM pbt_lineage ORDER BY trial_id, interval");
  while (statement.step()) {
    PbtStep step;
    step.trial = static_cast<int>(statement.integer(0));
    step.interval = static_cast<int>(statement.integer(1));
    if (!statement.is_null(2)) {
      step.parent_trial = static_cast<int>(statement.integer(2));
      step.parent_interval = static_cast<int>(statement.integer(3));
    }
    for (const auto& pair : nlohmann::json::parse(statement.text(4)))
      step.parameters.values.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
    step.parameters.seed = static_cast<std::uint64_t>(statement.integer(5));
    if (!statement.is_null(6)) step.metric = statement.real(6);
    steps.push_back(std::move(step));
  }
  return steps;
}

std::string kept_checkpoint_path(const std::string& sweep_directory, int trial, int interval) {
  return trial_directory(sweep_directory, trial) + "/pbt/interval-" + std::to_string(interval) + ".h5";
}

std::string keep_interval_checkpoint(const std::string& sweep_directory, int trial, int interval) {
  const std::string kept = kept_checkpoint_path(sweep_directory, trial, interval);
  std::error_code error;
  if (std::filesystem::exists(kept, error)) return kept;
  const std::string newest =
      train::RunDirectory(trial_directory(sweep_directory, trial), false).find_latest_checkpoint();
  PHALANX_CHECK(!newest.empty(), "trial ", trial, " finished interval ", interval, " without a checkpoint");
  std::filesystem::create_directories(std::filesystem::path(kept).parent_path(), error);
  if (error)
    throw_run_failure("cannot create " + std::filesystem::path(kept).parent_path().string() + ": " +
                      error.message());
  // A checkpoint is never written in place (a new one is renamed over the name), so a hard link
  // holds this point at no cost in space; a file system without links gets a copy.
  const std::string temporary = kept + ".tmp-link";
  std::filesystem::remove(temporary, error);
  std::filesystem::create_hard_link(newest, temporary, error);
  if (error) {
    copy_atomically(newest, kept);
    return kept;
  }
  std::filesystem::rename(temporary, kept, error);
  if (error) throw_run_failure("cannot rename " + temporary + " to " + kept + ": " + error.message());
  return kept;
}

std::string copy_donor_checkpoint(const std::string& sweep_directory, int trial, int donor,
                                  int donor_interval) {
  const std::string from = kept_checkpoint_path(sweep_directory, donor, donor_interval);
  std::error_code error;
  PHALANX_CHECK(std::filesystem::exists(from, error), "trial ", donor, "'s checkpoint of interval ",
                donor_interval, " was not kept (", from, ")");
  const train::RunDirectory run(trial_directory(sweep_directory, trial), false);
  copy_atomically(from, run.latest_checkpoint_path());
  // The trial's own periodic checkpoints would compete with the copy for "newest".
  const std::regex periodic(R"(step-\d+\.h5)");
  for (const auto& entry : std::filesystem::directory_iterator(run.checkpoint_folder())) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, periodic)) std::filesystem::remove(entry.path());
  }
  return from;
}

}  // namespace phalanx::sweep
