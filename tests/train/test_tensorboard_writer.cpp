// TensorBoard event files decoded by hand here (independent of the writer's encoder): TFRecord
// framing with valid masked CRC-32C, the version record, and scalar Events with the right
// wall time, step, tag and value; the SessionLog START that marks where a resumed run's steps
// begin. The end-to-end tests read the same files with TensorBoard and with their own decoder.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "phalanx/core/crc32c.hpp"
#include "reporting/tensorboard_writer.hpp"
#include "support/test_support.hpp"

namespace phalanx::train {
namespace {

struct Scalar {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string tag;
  float value = 0;
  std::string file_version;
  std::uint64_t session_status = 0;  // SessionLog.status; START = 1
  std::string checkpoint_path;       // SessionLog.checkpoint_path
};

std::uint64_t varint(const std::string& bytes, std::size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<std::uint8_t>(bytes.at(at++));
    value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return value;
  }
}

// The length-delimited fields of a message by field number; the numeric fields of an Event, a
// Summary.Value or a SessionLog go into `scalar` (only SessionLog has a varint field 1).
std::map<int, std::string> fields(const std::string& message, Scalar* scalar = nullptr) {
  std::map<int, std::string> found;
  std::size_t at = 0;
  while (at < message.size()) {
    const std::uint64_t key = varint(message, at);
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (wire == 0) {
      const std::uint64_t value = varint(message, at);
      if (scalar && field == 2) scalar->step = static_cast<std::int64_t>(value);
      if (scalar && field == 1) scalar->session_status = value;
    } else if (wire == 1) {
      if (scalar && field == 1) std::memcpy(&scalar->wall_time, message.data() + at, 8);
      at += 8;
    } else if (wire == 5) {
      if (scalar && field == 2) std::memcpy(&scalar->value, message.data() + at, 4);
      at += 4;
    } else {
      EXPECT_EQ(wire, 2);
      const auto length = static_cast<std::size_t>(varint(message, at));
      found[field] = message.substr(at, length);
      at += length;
    }
  }
  return found;
}

std::vector<Scalar> read_events(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  std::vector<Scalar> events;
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::uint64_t length = 0;
    std::uint32_t length_crc = 0, data_crc = 0;
    std::memcpy(&length, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    EXPECT_EQ(length_crc, masked_crc32c(bytes.data() + at, 8));
    const std::string data = bytes.substr(at + 12, length);
    std::memcpy(&data_crc, bytes.data() + at + 12 + length, 4);
    EXPECT_EQ(data_crc, masked_crc32c(data.data(), data.size()));
    at += 12 + length + 4;
    Scalar event;
    const auto event_fields = fields(data, &event);
    if (event_fields.count(3)) event.file_version = event_fields.at(3);
    if (event_fields.count(5)) {
      const auto value = fields(event_fields.at(5)).at(1);  // Summary.value
      const auto value_fields = fields(value, &event);
      event.tag = value_fields.at(1);
    }
    if (event_fields.count(7)) {
      const auto log_fields = fields(event_fields.at(7), &event);  // Event.session_log
      if (log_fields.count(2)) event.checkpoint_path = log_fields.at(2);
    }
    events.push_back(event);
  }
  EXPECT_EQ(at, bytes.size());
  return events;
}

TEST(TensorBoardWriter, WritesFramedScalarEvents) {
  testing::ScratchDirectory folder("tensorboard_writer");
  std::string path;
  {
    TensorBoardWriter writer(folder.path().string());
    path = writer.path();
    writer.scalar("train/loss", 7, 0.625, 1700000000.5);
    writer.metrics_event({{"event", "eval"},
                          {"step", 12},
                          {"epoch", 1},
                          {"time", 3.5},
                          {"test_accuracy", 0.875},
                          {"breakdown", {{"forward", {{"ms", 2.5}}}}},
                          {"note", "text is skipped"}},
                         1700000001.0);
  }
  EXPECT_EQ(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u);
  const auto events = read_events(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[1].tag, "train/loss");
  EXPECT_EQ(events[1].step, 7);
  EXPECT_FLOAT_EQ(events[1].value, 0.625f);
  EXPECT_DOUBLE_EQ(events[1].wall_time, 1700000000.5);
  // metrics_event: numbers only, "event", "step", "epoch" and "time" are not scalars, nested keys join with
  // '/'.
  std::map<std::string, float> tags;
  for (std::size_t index = 2; index < events.size(); ++index) {
    EXPECT_EQ(events[index].step, 12);
    tags[events[index].tag] = events[index].value;
  }
  EXPECT_EQ(tags.size(), 2u);
  EXPECT_FLOAT_EQ(tags["eval/test_accuracy"], 0.875f);
  EXPECT_FLOAT_EQ(tags["eval/breakdown/forward/ms"], 2.5f);
}

TEST(TensorBoardWriter, SessionStartMarksTheFirstStepOfASession) {
  testing::ScratchDirectory folder("tensorboard_session");
  std::string path;
  {
    TensorBoardWriter writer(folder.path().string());
    path = writer.path();
    writer.session_start(9, 1700000002.25, "run/checkpoints/step-8.h5");
    writer.scalar("step/loss", 9, 0.5, 1700000003.0);
  }
  const auto events = read_events(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].session_status, 1u);  // START
  EXPECT_EQ(events[1].step, 9);
  EXPECT_DOUBLE_EQ(events[1].wall_time, 1700000002.25);
  EXPECT_EQ(events[1].checkpoint_path, "run/checkpoints/step-8.h5");
  EXPECT_TRUE(events[1].tag.empty());
  EXPECT_EQ(events[2].session_status, 0u);
  EXPECT_EQ(events[2].tag, "step/loss");
}

TEST(TensorBoardWriter, ALaterWriterSortsAfterTheFilesAlreadyThere) {
  // TensorBoard reads a folder's event files in name order; a resumed session's START must come
  // after the events it replaces, even when both writers start within the same second.
  testing::ScratchDirectory folder("tensorboard_order");
  std::string first_path;
  {
    TensorBoardWriter first(folder.path().string());
    first_path = first.path();
    first.scalar("step/loss", 3, 1.0, 1700000000.0);
  }
  TensorBoardWriter second(folder.path().string());
  second.session_start(2, 1700000001.0, "");
  EXPECT_NE(second.path(), first_path);
  EXPECT_GT(second.path(), first_path);
  const auto first_events = read_events(first_path);  // not truncated by the second writer
  ASSERT_EQ(first_events.size(), 2u);
  EXPECT_EQ(first_events[1].tag, "step/loss");
}

}  // namespace
}  // namespace phalanx::train
