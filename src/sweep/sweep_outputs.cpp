// results.csv and best/ from the database (see sweep_outputs.hpp).
#include "phalanx/sweep/sweep_outputs.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/train/run_directory.hpp"

namespace phalanx::sweep {
namespace {

std::string csv_field(const nlohmann::json& value) {
  if (value.is_null()) return "";
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char character : text)
    quoted += character == '"' ? std::string("\"\"") : std::string(1, character);
  return quoted + "\"";
}

}  // namespace

int best_trial(const Database& database, bool maximize) {
  Statement statement(database,
                      std::string("SELECT trial_id FROM trials WHERE metric IS NOT NULL AND status != "
                                  "'failed' ORDER BY rung DESC, metric ") +
                          (maximize ? "DESC" : "ASC") + ", trial_id ASC LIMIT 1");
  return statement.step() ? static_cast<int>(statement.integer(0)) : -1;
}

void write_results_csv(const Database& database, const std::string& path) {
  const auto trials = database.rows(
      "SELECT trial_id, status, rung, budget, metric, steps, wall_seconds, worker, device, seed, parameters "
      "FROM trials ORDER BY trial_id");
  // One column per hyperparameter, in the order of the first trial's parameters.
  std::vector<std::string> keys;
  for (const auto& trial : trials) {
    const auto parameters = nlohmann::json::parse(trial["parameters"].get<std::string>());
    for (const auto& [key, value] : parameters.items())
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  std::ostringstream csv;
  csv << "trial_id,status,rung,budget,metric,steps,wall_seconds,worker,device,seed";
  for (const auto& key : keys) csv << "," << csv_field(key);
  csv << "\n";
  for (const auto& trial : trials) {
    for (const char* column : {"trial_id", "status", "rung", "budget", "metric", "steps", "wall_seconds",
                               "worker", "device", "seed"})
      csv << (std::string(column) == "trial_id" ? "" : ",") << csv_field(trial[column]);
    const auto parameters = nlohmann::json::parse(trial["parameters"].get<std::string>());
    for (const auto& key : keys)
      csv << "," << csv_field(parameters.contains(key) ? parameters[key] : nullptr);
    csv << "\n";
  }
  write_file_atomically(path, csv.str());
}

void write_best(const Database& database, const std::string& sweep_directory, bool maximize) {
  const int trial = best_trial(database, maximize);
  if (trial < 0) return;
  Statement statement(
      database,
      "SELECT config, run_dir, metric, rung, budget, parameters, steps FROM trials WHERE trial_id = ?1");
  statement.bind(1, trial);
  PHALANX_CHECK(statement.step(), "best trial ", trial, " vanished from the database");
  const std::string folder = sweep_directory + "/best";
  write_file_atomically(folder + "/config.yaml", statement.text(0));
  const nlohmann::json description = {{"trial_id", trial},
                                      {"metric", statement.real(2)},
                                      {"rung", statement.integer(3)},
                                      {"budget", statement.real(4)},
                                      {"steps", statement.integer(6)},
                                      {"parameters", nlohmann::json::parse(statement.text(5))},
                                      {"run_dir", statement.text(1)}};
  write_file_atomically(folder + "/trial.json", description.dump(2) + "\n");
  // The trial's newest checkpoint is the state its metric was measured on. A plain file copy:
  // the coordinator thread must not call HDF5 (not thread-safe in Debian's build).
  const std::string latest = train::RunDirectory(statement.text(1), false).latest_checkpoint_path();
  if (!std::filesystem::exists(latest)) return;
  AtomicFile target(folder + "/checkpoint.h5");
  std::filesystem::copy_file(latest, target.temporary_path(),
                             std::filesystem::copy_options::overwrite_existing);
  target.commit();
}

}  // namespace phalanx::sweep
