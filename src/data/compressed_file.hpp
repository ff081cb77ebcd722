// CompressedFile: sequential reading of an importer's input through zlib, which reads gzip and
// plain files alike (so both published .gz archives and unpacked copies work). Shared by the IDX
// and CIFAR importers (private to src/data); every error names the file.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "phalanx/core/error.hpp"

namespace phalanx::data::detail {

class CompressedFile {
 public:
  explicit CompressedFile(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (!file_) throw_input_error(path + ": cannot open");
    // A large buffer lets zlib inflate in big steps; the default 8 KiB costs noticeably here.
    gzbuffer(file_, 1u << 20);
  }
  ~CompressedFile() { gzclose(file_); }
  CompressedFile(const CompressedFile&) = delete;
  CompressedFile& operator=(const CompressedFile&) = delete;

  const std::string& path() const { return path_; }

  // Reads up to `bytes` bytes; returns how many arrived (fewer only at the end of the file).
  std::size_t read(void* destination, std::size_t bytes) {
    std::size_t total = 0;
    auto* output = static_cast<unsigned char*>(destination);
    while (total < bytes) {
      // gzread takes an unsigned count: read in pieces of at most 1 GiB.
      const auto request = static_cast<unsigned>(std::min<std::size_t>(bytes - total, 1u << 30));
      const int got = gzread(file_, output + total, request);
      if (got < 0) {
        int code = 0;
        throw_input_error(path_ + ": read error (corrupt gzip data?): " + gzerror(file_, &code));
      }
      if (got == 0) {
        // zlib gives a gzip stream cut short (no trailer, so no CRC check either) as a quiet end of
        // file, keeping Z_BUF_ERROR for gzerror: the bytes so far could be a damaged copy's.
        int code = Z_OK;
        const char* message = gzerror(file_, &code);
        if (code == Z_BUF_ERROR)
          throw_input_error(path_ + ": its gzip stream is cut short (" + message +
                            ", before the trailer that checks the data): a truncated download or copy?");
        break;
      }
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

 private:
  std::string path_;
  gzFile file_;
};

}  // namespace phalanx::data::detail
