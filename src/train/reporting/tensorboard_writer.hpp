// TensorBoardWriter: scalars of a run as a TensorBoard event file (events.out.tfevents.*) in the
// run directory, so `tensorboard --logdir runs/` shows every run without a converter. The file is
// a TFRecord stream (length, masked CRC-32C of the length, the bytes, masked CRC-32C of the
// bytes) of `tensorflow.Event` protobuf messages, encoded here by hand: the few fields needed do
// not justify a protobuf dependency.
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace phalanx::train {

class TensorBoardWriter {
 public:
  // Creates FOLDER/events.out.tfevents.<unix seconds>.<host>.<pid> and writes its version record.
  // The name sorts after every event file already in FOLDER (TensorBoard reads a folder's files in
  // name order, and a resumed run's file must come after the one it continues).
  explicit TensorBoardWriter(const std::string& folder);

  const std::string& path() const { return path_; }
  // One scalar at `step`, flushed (a killed run keeps what it logged).
  void scalar(const std::string& tag, std::int64_t step, double value, double wall_time);
  // A SessionLog START event: this session logs from `first_step` on. TensorBoard treats every
  // START after a run's first as a restart and drops the events it read before with a step >=
  // `first_step`, so the steps a resumed run trains again show once. `checkpoint` is the one the
  // session resumed from (empty for a fresh run).
  void session_start(std::int64_t first_step, double wall_time, const std::string& checkpoint);
  // A metrics.jsonl event as scalars: every number in it except the keys "event", "step",
  // "epoch" and "time", tagged "<event>/<key>" with nested keys joined by '/', at the event's step.
  void metrics_event(const nlohmann::json& event, double wall_time);

 private:
  void write_scalar(const std::string& tag, std::int64_t step, double value, double wall_time);
  void write_record(const std::string& bytes);
  std::string path_;
  std::ofstream file_;
};

}  // namespace phalanx::train
