/* A file system that fails under a running job, for test_faults.py and test_failures.py: preloaded
   (LD_PRELOAD) into phalanx, once the file named by PHALANX_TEST_FAILURE_TRIGGER exists it
   - makes every read of the file named by PHALANX_TEST_FAILING_FILE fail with EIO, as reads on a
     network file system whose server went away do;
   - makes every write() to a file in the folder PHALANX_TEST_HANGING_FOLDER block for good, as
     writes to a hard-mounted NFS export whose server went away do.
   Everything else reads and writes as usual. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The path a descriptor is open on, when the trigger exists and `variable` names a target. */
static int triggered_path(int descriptor, const char* variable, const char** target, char* path) {
  const char* trigger = getenv("PHALANX_TEST_FAILURE_TRIGGER");
  *target = getenv(variable);
  if (!*target || !trigger || access(trigger, F_OK) != 0) return 0;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", descriptor);
  const ssize_t length = readlink(link, path, PATH_MAX - 1);
  if (length <= 0) return 0;
  path[length] = '\0';
  return 1;
}

static int failing(int descriptor) {
  const char* target;
  char path[PATH_MAX];
  return triggered_path(descriptor, "PHALANX_TEST_FAILING_FILE", &target, path) && strcmp(path, target) == 0;
}

static int hanging(int descriptor) {
  const char* folder;
  char path[PATH_MAX];
  if (!triggered_path(descriptor, "PHALANX_TEST_HANGING_FOLDER", &folder, path)) return 0;
  const size_t length = strlen(folder);
  return strncmp(path, folder, length) == 0 && path[length] == '/';
}

ssize_t pread(int descriptor, void* buffer, size_t count, off_t offset) {
  static ssize_t (*real)(int, void*, size_t, off_t);
  if (!real) real = (ssize_t(*)(int, void*, size_t, off_t))dlsym(RTLD_NEXT, "pread");
  if (failing(descriptor)) {
    errno = EIO;
    return -1;
  }
  return real(descriptor, buffer, count, offset);
}

ssize_t pread64(int descriptor, void* buffer, size_t count, off_t offset) {
  static ssize_t (*real)(int, void*, size_t, off_t);
  if (!real) real = (ssize_t(*)(int, void*, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
  if (failing(descriptor)) {
    errno = EIO;
    return -1;
  }
  return real(descriptor, buffer, count, offset);
}

ssize_t read(int descriptor, void* buffer, size_t count) {
  static ssize_t (*real)(int, void*, size_t);
  if (!real) real = (ssize_t(*)(int, void*, size_t))dlsym(RTLD_NEXT, "read");
  if (failing(descriptor)) {
    errno = EIO;
    return -1;
  }
  return real(descriptor, buffer, count);
}

ssize_t write(int descriptor, const void* buffer, size_t count) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  if (hanging(descriptor))
    for (;;) pause(); /* a hard mount retries for ever; signals (the job's kill) still end it */
  return real(descriptor, buffer, count);
}
