// RunDirectory: the files of one run (docs/DESIGN.md §4): config.yaml, metrics.jsonl (and the same events
// as TensorBoard scalars), summary.json and checkpoints/. Only rank 0 writes; other ranks hold
// the path.
#pragma once

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "phalanx/train/checkpoint.hpp"

namespace phalanx::train {

class TensorBoardWriter;

class RunDirectory {
 public:
  RunDirectory();
  // Creates the folder (and checkpoints/) when `writer` is true. A resumed run appends to
  // metrics.jsonl; a fresh one starts it anew.
  RunDirectory(std::string path, bool writer, bool append_metrics = false);
  RunDirectory(RunDirectory&&) noexcept;
  RunDirectory& operator=(RunDirectory&&) noexcept;
  ~RunDirectory();

  const std::string& path() const { return path_; }
  std::string checkpoint_folder() const { return path_ + "/checkpoints"; }
  std::string checkpoint_path(std::int64_t step) const;
  std::string latest_checkpoint_path() const { return checkpoint_folder() + "/latest.h5"; }
  // checkpoint.keep_best's: never pruned, never taken as the newest by a resume.
  std::string best_checkpoint_path() const { return checkpoint_folder() + "/best.h5"; }
  bool writer() const { return writer_; }

  void write_config(const std::string& yaml_text);
  // Marks in the TensorBoard event file where this session's steps begin (the step after the
  // checkpoint it resumed from, else 1), so that TensorBoard drops what a killed run had logged
  // past its checkpoint, as prepare_run_directory does in metrics.jsonl.
  void start_session(std::int64_t first_step, const std::string& resumed_from);
  // Appends one event line and flushes, so a killed run keeps every event it logged.
  void append_metrics(const nlohmann::json& event);
  // Written atomically (temp + rename).
  void write_summary(const nlohmann::json& summary);
  // Keeps the newest `keep` step-<N>.h5 files.
  void prune_checkpoints(int keep);
  // The newest checkpoint in the folder (by the step in its header), or empty.
  std::string find_latest_checkpoint() const;
  // The same checkpoint left open (null when there is none): a resume takes its header and
  // weights from it without checking its seal a second time.
  std::shared_ptr<const OpenCheckpoint> open_latest_checkpoint() const;

 private:
  std::string path_;
  bool writer_ = false;
  std::ofstream metrics_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;  // the same events as TensorBoard scalars
};

// Called on rank 0 once a run has passed every other check, before any rank writes: creates the
// folder and checkpoints/, so that a path that cannot be created fails as one usage error (exit 2)
// instead of on every rank at once mid-start. Without --resume (`resuming` false) a folder that
// already holds a run (metrics.jsonl or checkpoints) is refused: the fresh run would truncate its
// metrics and mix its checkpoints with the old ones, and a later --resume auto could pick the old
// run's newest. When resuming, removes the temporary files of a checkpoint write that a kill cut
// short (they are never read, see find_latest_checkpoint), and, for a run resumed at
// `resume_step` (>= 0), drops the metrics.jsonl events of later steps: a run killed after its last
// checkpoint logged steps that the resumed run trains and logs again, and sets the checkpoints past
// that step aside (a rollback with --resume PATH; one line on stdout says so unless `quiet`).
void prepare_run_directory(const std::string& path, bool resuming, std::int64_t resume_step = -1,
                           bool quiet = false);

// runs/<name>-<YYYYmmdd-HHMMSS>
std::string default_run_directory(const std::string& name);

}  // namespace phalanx::train
