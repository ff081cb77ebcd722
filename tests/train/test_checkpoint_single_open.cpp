// load_checkpoint reads the header and the tensors from one open of the file: it opens the
// checkpoint as often as read_checkpoint_header alone does, counted by the kernel (inotify's
// IN_OPEN events on the file), and refuses a file that is no checkpoint with read_checkpoint_header's
// very words. An OpenCheckpoint, which a resume passes down, loads without opening the file again.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "support/test_support.hpp"
#include "train/checkpoint_test_model.hpp"

namespace phalanx::train {
namespace {

using phalanx::testing::ScratchDirectory;

// Counts the opens of one file, by anyone, from construction on (the kernel queues an IN_OPEN
// event per open of a watched file). Closes are watched too: inotify merges an event into an
// identical one still unread at the end of the queue, so two opens in a row would count as one,
// while open, close, open queues three events.
class OpenCounter {
 public:
  explicit OpenCounter(const std::string& path)
      : descriptor_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)),
        watch_(descriptor_ >= 0 ? inotify_add_watch(descriptor_, path.c_str(), IN_OPEN | IN_CLOSE) : -1),
        error_(watch_ < 0 ? errno : 0) {}
  ~OpenCounter() {
    if (descriptor_ >= 0) close(descriptor_);
  }
  OpenCounter(const OpenCounter&) = delete;
  OpenCounter& operator=(const OpenCounter&) = delete;

  bool watching() const { return watch_ >= 0; }
  std::string failure() const { return std::strerror(error_); }

  // The opens since the last call (or construction).
  int take() {
    int opens = 0;
    alignas(inotify_event) char buffer[4096];
    for (;;) {
      const ssize_t bytes = read(descriptor_, buffer, sizeof buffer);
      if (bytes <= 0) break;  // EAGAIN: no event left
      for (ssize_t offset = 0; offset < bytes;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
        if (event->wd == watch_ && (event->mask & IN_OPEN)) ++opens;
        offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return opens;
  }

 private:
  int descriptor_;
  int watch_;
  int error_;  // errno of a failed watch
};

struct SmallModel : phalanx::testing::CheckpointTestModel {
  void write(const std::string& path) {
    const TrainingPosition position{3, 0, 3, 3 * 16};
    write_checkpoint(path, *backend, registry, nullptr, position, 1, 5, "name: test\n");
  }
};

TEST(CheckpointSingleOpen, LoadOpensTheFileAsOftenAsTheHeaderAlone) {
  ScratchDirectory scratch("checkpoint_single_open");
  SmallModel model;
  const std::string path = scratch.file("step-3.h5");
  model.write(path);
  OpenCounter opens(path);
  ASSERT_TRUE(opens.watching()) << "inotify: " << opens.failure();
  opens.take();
  EXPECT_EQ(read_checkpoint_header(path).position.global_step, 3);
  const int header_opens = opens.take();
  EXPECT_GE(header_opens, 1);
  SmallModel loaded;
  load_checkpoint(path, *loaded.backend, loaded.registry, nullptr);
  EXPECT_EQ(opens.take(), header_opens) << "load_checkpoint opened the file again after its header";
  // And it loaded the weights of that file.
  std::vector<float> written(6), read(6);
  model.backend->copy_to_host(written.data(), model.registry.parameters().data(), sizeof(float) * 6);
  loaded.backend->copy_to_host(read.data(), loaded.registry.parameters().data(), sizeof(float) * 6);
  EXPECT_EQ(read, written);
}

// A resume opens its checkpoint once (OpenCheckpoint) and hands it down: the opening reads the file
// as read_checkpoint_header does (one seal check), and the load after it opens the file no more,
// so it checks no seal a second time.
TEST(CheckpointSingleOpen, AnOpenCheckpointLoadsWithoutOpeningTheFileAgain) {
  ScratchDirectory scratch("checkpoint_single_open_held");
  SmallModel model;
  const std::string path = scratch.file("step-3.h5");
  model.write(path);
  OpenCounter opens(path);
  ASSERT_TRUE(opens.watching()) << "inotify: " << opens.failure();
  opens.take();
  read_checkpoint_header(path);
  const int header_opens = opens.take();
  EXPECT_GE(header_opens, 1);
  SmallModel loaded;
  {
    const OpenCheckpoint checkpoint(path);
    EXPECT_EQ(opens.take(), header_opens);
    EXPECT_EQ(checkpoint.header().position.global_step, 3);
    EXPECT_EQ(checkpoint.header().path, path);
    checkpoint.load(*loaded.backend, loaded.registry, nullptr);
    EXPECT_EQ(opens.take(), 0) << "loading an open checkpoint opened the file again";
  }
  std::vector<float> written(6), read(6);
  model.backend->copy_to_host(written.data(), model.registry.parameters().data(), sizeof(float) * 6);
  loaded.backend->copy_to_host(read.data(), loaded.registry.parameters().data(), sizeof(float) * 6);
  EXPECT_EQ(read, written);
}

// The message of `call`'s InvalidInput, or "" when it throws none.
template <typename Call>
std::string input_error_of(Call call) {
  try {
    call();
  } catch (const Error& error) {
    if (error.kind() == ErrorKind::InvalidInput) return error.what();
    throw;
  }
  return "";
}

// A file that is not a checkpoint (missing, empty, not HDF5, cut short, another format) is refused
// by load_checkpoint with exactly read_checkpoint_header's message.
TEST(CheckpointSingleOpen, LoadRefusesWithTheHeadersMessage) {
  ScratchDirectory scratch("checkpoint_single_open_refusals");
  SmallModel model;
  const std::string whole = scratch.file("whole.h5");
  model.write(whole);
  const std::string bytes = testing::file_bytes(whole);
  const auto write_file = [&](const std::string& name, const std::string& content) {
    const std::string path = scratch.file(name);
    testing::write_bytes(path, content);
    return path;
  };
  const std::string files[] = {
      scratch.file("missing.h5"),
      write_file("empty.h5", ""),
      write_file("text.h5", "name: not a checkpoint\n"),
      write_file("cut.h5", bytes.substr(0, bytes.size() / 2)),
      write_file("superblock-only.h5", bytes.substr(0, 600)),
  };
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const std::string header = input_error_of([&] { read_checkpoint_header(path); });
    EXPECT_NE(header, "");
    EXPECT_NE(header.find(path), std::string::npos) << header;
    EXPECT_EQ(input_error_of([&] { load_checkpoint(path, *model.backend, model.registry, nullptr); }),
              header);
  }
}

}  // namespace
}  // namespace phalanx::train
