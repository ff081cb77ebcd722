// FileLock: one holder at a time, the lock gone with its holder (an object or a killed process),
// and a file that cannot be opened named in an InvalidInput error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "phalanx/core/error.hpp"
#include "phalanx/core/file_lock.hpp"
#include "phalanx/core/timer.hpp"
#include "support/test_support.hpp"

namespace phalanx {
namespace {

// A folder of its own per test, removed after it.
class FileLockTest : public ::testing::Test {
 protected:
  std::string lock_path(const std::string& name) const { return scratch_.file(name); }

 private:
  testing::ScratchDirectory scratch_{"file_lock"};
};

TEST_F(FileLockTest, OneHolderAtATimeAndTheNextAfterItEnds) {
  const std::string path = lock_path("one_holder");
  std::optional<FileLock> first = FileLock::acquire(path, 0.0);
  ASSERT_TRUE(first.has_value());
  // A second open of the file is another holder for flock, even in this process.
  const Stopwatch clock;
  EXPECT_FALSE(FileLock::acquire(path, 0.3).has_value());
  EXPECT_GE(clock.seconds(), 0.3);  // it waited as long as it was told
  // Moved, the lock stays held; destroyed, it is free.
  std::optional<FileLock> moved(std::move(*first));
  first.reset();
  EXPECT_FALSE(FileLock::acquire(path, 0.0).has_value());
  moved.reset();
  EXPECT_TRUE(FileLock::acquire(path, 0.0).has_value());
}

TEST_F(FileLockTest, AWaiterGetsTheLockWhenItsHolderIsKilled) {
  const std::string path = lock_path("killed_holder");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = FileLock::acquire(path, 0.0);
    const char byte = lock ? 1 : 0;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
    ::pause();  // holds the lock until killed
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 1) << "the child could not take the lock";
  EXPECT_FALSE(FileLock::acquire(path, 0.2).has_value());
  std::thread killer([child] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(child, SIGKILL);
  });
  // Waits through the kill: the kernel drops a dead process's flock.
  EXPECT_TRUE(FileLock::acquire(path, 10.0).has_value());
  killer.join();
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_F(FileLockTest, AFileThatCannotBeOpenedIsNamed) {
  const std::string path = lock_path("no_such_folder") + "/sweep.lock";
  try {
    FileLock::acquire(path, 0.0);
    FAIL() << "no error for " << path;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace phalanx
