// Files of a run directory, written by rank 0 only.
#include "phalanx/train/run_directory.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "reporting/tensorboard_writer.hpp"

namespace phalanx::train {

RunDirectory::RunDirectory(std::string path, bool writer, bool append_metrics)
    : path_(std::move(path)), writer_(writer) {
  if (!writer_) return;
  std::error_code error;
  std::filesystem::create_directories(checkpoint_folder(), error);
  if (error) throw_input_error("--run-dir " + path_ + ": cannot create it (" + error.message() + ")");
  metrics_.open(path_ + "/metrics.jsonl", append_metrics ? std::ios::app : std::ios::trunc);
  if (!metrics_) throw_input_error("--run-dir " + path_ + ": cannot write metrics.jsonl");
  tensorboard_ = std::make_unique<TensorBoardWriter>(path_);
}

RunDirectory::RunDirectory() = default;
RunDirectory::RunDirectory(RunDirectory&&) noexcept = default;
RunDirectory& RunDirectory::operator=(RunDirectory&&) noexcept = default;
RunDirectory::~RunDirectory() = default;

std::string RunDirectory::checkpoint_path(std::int64_t step) const {
  return checkpoint_folder() + "/step-" + std::to_string(step) + ".h5";
}

void RunDirectory::write_config(const std::string& yaml_text) {
  if (writer_) write_file_atomically(path_ + "/config.yaml", yaml_text);
}

void RunDirectory::start_session(std::int64_t first_step, const std::string& resumed_from) {
  if (writer_) tensorboard_->session_start(first_step, wall_seconds_since_epoch(), resumed_from);
}

void RunDirectory::append_metrics(const nlohmann::json& event) {
  if (!writer_) return;
  metrics_ << event.dump() << '\n';
  metrics_.flush();
  tensorboard_->metrics_event(event, wall_seconds_since_epoch());
}

void RunDirectory::write_summary(const nlohmann::json& summary) {
  if (writer_) write_file_atomically(path_ + "/summary.json", summary.dump(2) + "\n");
}

void RunDirectory::prune_checkpoints(int keep) {
  if (!writer_) return;
  const std::regex pattern(R"(step-(\d+)\.h5)");
  std::vector<std::pair<std::int64_t, std::filesystem::path>> found;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoint_folder())) {
    std::smatch match;
    const std::string file_name = entry.path().filename().string();
    if (std::regex_match(file_name, match, pattern)) found.emplace_back(std::stoll(match[1]), entry.path());
  }
  std::sort(found.begin(), found.end());
  for (std::size_t index = 0; index + static_cast<std::size_t>(keep) < found.size(); ++index)
    std::filesystem::remove(found[index].second);
}

std::string RunDirectory::find_latest_checkpoint() const {
  const auto latest = open_latest_checkpoint();
  return latest ? latest->header().path : "";
}

std::shared_ptr<const OpenCheckpoint> RunDirectory::open_latest_checkpoint() const {
  std::shared_ptr<const OpenCheckpoint> best;
  if (!std::filesystem::is_directory(checkpoint_folder())) return best;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoint_folder())) {
    const std::string name = entry.path().filename().string();
    // best.h5 is a copy of an earlier point chosen by its metric, not where the run stands.
    if (entry.path().extension() != ".h5" || name.find(".tmp-") != std::string::npos || name == "best.h5")
      continue;
    // Checkpoints are renamed into place only when complete, so a damaged one means
    // something outside phalanx broke it: report it (InvalidInput) rather than guess.
    auto checkpoint = std::make_shared<const OpenCheckpoint>(entry.path().string());
    const std::int64_t best_step = best ? best->header().position.global_step : -1;
    if (checkpoint->header().position.global_step > best_step) best = std::move(checkpoint);
  }
  return best;
}

namespace {

// The local time to the second, as run directories are named: 20261207-134500.
std::string local_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return stamp;
}

// Keeps the events up to `last_step` (and those without a step); a line cut short by a kill is
// dropped too. Rewritten atomically, and only when something goes.
void drop_metrics_after(const std::string& metrics_path, std::int64_t last_step) {
  std::ifstream input(metrics_path);
  if (!input) return;
  std::string kept, line;
  bool dropped = false;
  while (std::getline(input, line)) {
    if (line.empty()) continue;
    const auto event = nlohmann::json::parse(line, nullptr, false);
    const bool later = !event.is_object() || (event.contains("step") && event["step"].is_number_integer() &&
                                              event["step"].get<std::int64_t>() > last_step);
    if (later)
      dropped = true;
    else
      kept += line + '\n';
  }
  if (dropped) write_file_atomically(metrics_path, kept);
}

// A resume from an earlier checkpoint (--resume PATH) abandons what the run wrote after it: its
// checkpoints past `step` are moved to checkpoints/abandoned-<time>/ (kept, not deleted), so that a
// later --resume auto continues this run, not the abandoned one. step-N.h5 says its step in its
// name; latest.h5 and best.h5 are opened for theirs, and one that cannot be read goes too.
void set_aside_checkpoints_after(const std::filesystem::path& checkpoints, std::int64_t step, bool quiet) {
  namespace fs = std::filesystem;
  std::error_code error;
  const std::regex numbered(R"(step-(\d+)\.h5)");
  std::vector<fs::path> later;
  for (const auto& entry : fs::directory_iterator(checkpoints, error)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    if (std::regex_match(name, match, numbered)) {
      // A number past 64 bits is no step of this run's: it stays.
      const std::string digits = match[1];
      std::int64_t number = 0;
      const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), number);
      if (parsed.ec == std::errc{} && number > step) later.push_back(entry.path());
    } else if (name == "latest.h5" || name == "best.h5") {
      try {
        if (OpenCheckpoint(entry.path().string()).header().position.global_step > step)
          later.push_back(entry.path());
      } catch (const Error&) {
        later.push_back(entry.path());
      }
    }
  }
  if (later.empty()) return;
  // A folder of its own: a second rollback in the same second must not replace the first's files.
  fs::path aside;
  for (int attempt = 1;; ++attempt) {
    // Built piece by piece: GCC 12 warns falsely (-Wrestrict) on "-" + std::to_string(...).
    std::string name = "abandoned-";
    name += local_timestamp();
    if (attempt > 1) {
      name += '-';
      name += std::to_string(attempt);
    }
    aside = checkpoints / name;
    if (fs::create_directory(aside, error)) break;
    if (error || attempt == 1000)
      throw_input_error(aside.string() + ": cannot create it (" + (error ? error.message() : "it exists") +
                        ")");
  }
  std::string names;
  for (const auto& path : later) {
    fs::rename(path, aside / path.filename(), error);
    if (error)
      throw_input_error(path.string() + ": cannot move it to " + aside.string() + " (" + error.message() +
                        ")");
    names += (names.empty() ? "" : ", ") + path.filename().string();
  }
  if (quiet) return;
  std::printf("resumed at step %lld: the run's later checkpoints (%s) moved to %s\n",
              static_cast<long long>(step), names.c_str(), aside.string().c_str());
  std::fflush(stdout);
}

}  // namespace

void prepare_run_directory(const std::string& path, bool resuming, std::int64_t resume_step, bool quiet) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path checkpoints = fs::path(path) / "checkpoints";
  if (!resuming && fs::is_directory(path, error)) {
    std::vector<std::string> held;
    if (fs::exists(fs::path(path) / "metrics.jsonl", error)) held.push_back("metrics.jsonl");
    int checkpoint_count = 0;
    if (fs::is_directory(checkpoints, error))
      for (const auto& entry : fs::directory_iterator(checkpoints, error))
        checkpoint_count += entry.path().extension() == ".h5" && entry.is_regular_file(error);
    if (checkpoint_count) held.push_back(std::to_string(checkpoint_count) + " checkpoint(s)");
    if (!held.empty()) {
      std::string listing;
      for (const auto& item : held) listing += (listing.empty() ? "" : ", ") + item;
      throw_input_error("--run-dir " + path + ": already holds a run (" + listing +
                        "); continue it with --resume auto, or choose another --run-dir");
    }
  }
  fs::create_directories(checkpoints, error);
  if (error) throw_input_error("--run-dir " + path + ": cannot create it (" + error.message() + ")");
  if (::access(path.c_str(), W_OK | X_OK) != 0) throw_input_error("--run-dir " + path + ": not writable");
  if (!resuming) return;
  for (const auto& entry : fs::directory_iterator(checkpoints, error))
    if (entry.path().filename().string().find(".h5.tmp-") != std::string::npos)
      fs::remove(entry.path(), error);
  if (resume_step >= 0) {
    drop_metrics_after(path + "/metrics.jsonl", resume_step);
    set_aside_checkpoints_after(checkpoints, resume_step, quiet);
  }
}

std::string default_run_directory(const std::string& name) {
  return "runs/" + name + "-" + local_timestamp();
}

}  // namespace phalanx::train
