// TensorBoard event files by hand. Protobuf wire format (protobuf.dev/programming-guides/encoding):
// a field is a varint key (number << 3 | wire type) and its value: varint (0), little-endian
// 64-bit (1), length-delimited (2) or little-endian 32-bit (5). The messages used:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
//             SessionLog session_log = 7; }
//   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
//   SessionLog { SessionStatus status = 1 (START = 1); string checkpoint_path = 2; }
#include "reporting/tensorboard_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "phalanx/core/crc32c.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::train {
namespace {

void varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void key(std::string& out, int field, int wire_type) {
  varint(out, static_cast<std::uint64_t>(field << 3 | wire_type));
}

template <typename Value>
void little_endian(std::string& out, Value value) {
  char bytes[sizeof(Value)];
  std::memcpy(bytes, &value, sizeof(Value));  // x86-64 and aarch64 are little-endian
  out.append(bytes, sizeof(Value));
}

void length_delimited(std::string& out, int field, const std::string& bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

std::string event_header(double wall_time, std::int64_t step) {
  std::string event;
  key(event, 1, 1);
  little_endian(event, wall_time);
  key(event, 2, 0);
  varint(event, static_cast<std::uint64_t>(step));
  return event;
}

void flatten(const nlohmann::json& value, const std::string& tag,
             std::vector<std::pair<std::string, double>>& out) {
  if (value.is_number()) {
    out.emplace_back(tag, value.get<double>());
  } else if (value.is_object()) {
    for (const auto& [name, child] : value.items()) flatten(child, tag + "/" + name, out);
  }
}

// The largest <unix seconds> in the names of FOLDER's event files, or -1.
long long newest_event_file_seconds(const std::string& folder) {
  static const std::string prefix = "events.out.tfevents.";
  long long newest = -1;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    char* end = nullptr;
    const long long seconds = std::strtoll(name.c_str() + prefix.size(), &end, 10);
    if (end != name.c_str() + prefix.size()) newest = std::max(newest, seconds);
  }
  return newest;
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& folder) {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  // A run killed within a second of its start and resumed at once would otherwise share the
  // seconds and be ordered by pid, which may put the resumed file first.
  const long long seconds =
      std::max(static_cast<long long>(std::time(nullptr)), newest_event_file_seconds(folder) + 1);
  path_ = folder + "/events.out.tfevents." + std::to_string(seconds) + "." + host + "." +
          std::to_string(getpid());
  file_.open(path_, std::ios::binary | std::ios::trunc);
  if (!file_) throw_input_error(path_ + ": cannot write the TensorBoard event file");
  std::string event = event_header(static_cast<double>(std::time(nullptr)), 0);
  length_delimited(event, 3, "brain.Event:2");
  write_record(event);
  file_.flush();
}

void TensorBoardWriter::write_record(const std::string& bytes) {
  std::string header;
  little_endian(header, static_cast<std::uint64_t>(bytes.size()));
  const std::uint32_t header_crc = masked_crc32c(header.data(), header.size());
  little_endian(header, header_crc);
  const std::uint32_t data_crc = masked_crc32c(bytes.data(), bytes.size());
  file_.write(header.data(), static_cast<std::streamsize>(header.size()));
  file_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file_.write(reinterpret_cast<const char*>(&data_crc), sizeof(data_crc));
}

void TensorBoardWriter::scalar(const std::string& tag, std::int64_t step, double value, double wall_time) {
  write_scalar(tag, step, value, wall_time);
  file_.flush();
}

void TensorBoardWriter::session_start(std::int64_t first_step, double wall_time,
                                      const std::string& checkpoint) {
  std::string session_log;
  key(session_log, 1, 0);
  varint(session_log, 1);  // SessionLog.START
  if (!checkpoint.empty()) length_delimited(session_log, 2, checkpoint);
  std::string event = event_header(wall_time, first_step);
  length_delimited(event, 7, session_log);
  write_record(event);
  file_.flush();
}

void TensorBoardWriter::write_scalar(const std::string& tag, std::int64_t step, double value,
                                     double wall_time) {
  std::string summary_value;
  length_delimited(summary_value, 1, tag);
  key(summary_value, 2, 5);
  little_endian(summary_value, static_cast<float>(value));
  std::string summary;
  length_delimited(summary, 1, summary_value);
  std::string event = event_header(wall_time, step);
  length_delimited(event, 5, summary);
  write_record(event);
}

void TensorBoardWriter::metrics_event(const nlohmann::json& event, double wall_time) {
  const std::string kind = event.value("event", "event");
  const std::int64_t step = event.value("step", std::int64_t{0});
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [name, value] : event.items())
    if (name != "event" && name != "step" && name != "epoch" && name != "time")
      flatten(value, kind + "/" + name, scalars);
  // One flush per event, not per scalar: an epoch event carries a few dozen numbers.
  for (const auto& [tag, value] : scalars)
    if (std::isfinite(value)) write_scalar(tag, step, value, wall_time);
  file_.flush();
}

}  // namespace phalanx::train
