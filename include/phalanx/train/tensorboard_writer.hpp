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
  // Creates FOLDER/events.out.tfevents.<unix seconds>.<host> and writes its version record.
  explicit TensorBoardWriter(const std::string& folder);

  const std::string& path() const { return path_; }
  // One scalar at `step`, flushed (a killed run keeps what it logged).
  void scalar(const std::string& tag, std::int64_t step, double value, double wall_time);
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
