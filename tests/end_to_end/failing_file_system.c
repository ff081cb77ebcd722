/* A file system that fails under a running job, for test_faults.py: preloaded (LD_PRELOAD) into
   phalanx, it makes every read of the file named by PHALANX_TEST_FAILING_FILE fail with EIO once
   the file named by PHALANX_TEST_FAILURE_TRIGGER exists, as reads on a network file system whose
   server went away do. Everything else reads as usual. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int failing(int descriptor) {
  const char* target = getenv("PHALANX_TEST_FAILING_FILE");
  const char* trigger = getenv("PHALANX_TEST_FAILURE_TRIGGER");
  if (!target || !trigger || access(trigger, F_OK) != 0) return 0;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", descriptor);
  const ssize_t length = readlink(link, path, sizeof path - 1);
  if (length <= 0) return 0;
  path[length] = '\0';
  return strcmp(path, target) == 0;
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
