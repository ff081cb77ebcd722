// AtomicFile: the one way phalanx writes a file that others rely on (checkpoints, datasets,
// summaries, predictions). Writers fill a temporary sibling; commit() makes it durable (fsync)
// and renames it over the real name, then syncs the folder, so a crash, a kill or a full disk
// leaves either the old file or the new one under the real name, never half of one.
#pragma once

#include <string>

namespace phalanx {

class AtomicFile {
 public:
  // Creates the parent folder if needed (an InvalidInput error names `path` if it cannot). Refuses
  // (InvalidInput) a path where something other than a regular file is: a device, a FIFO, a
  // folder or a symbolic link would be replaced by the file.
  explicit AtomicFile(std::string path);
  // Unless commit() succeeded: removes the temporary file, and the folders the constructor made
  // where they are still empty (a refused output leaves nothing behind).
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& path() const { return path_; }
  // Where the writer writes: "<path>.tmp-<pid>".
  const std::string& temporary_path() const { return temporary_path_; }
  // fsync the temporary file, rename it to path(), fsync the folder.
  void commit();

 private:
  std::string path_;
  std::string temporary_path_;
  std::string first_created_folder_;  // the outermost folder the constructor made; empty: none
  bool committed_ = false;
};

// Writes `content` to `path` through an AtomicFile.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace phalanx
