// The gzip chunk check (checked_chunk_decoding.hpp): a chunk's stored bytes inflated to count what
// they decode to, before HDF5 decodes and copies them. HDF5 stores a gzip chunk as one zlib stream
// (and, under Fletcher-32, its checksum after it, which inflating ignores).
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "phalanx/data/checked_chunk_decoding.hpp"

namespace phalanx::data::detail {

std::string gzip_chunk_problem(const std::uint8_t* stored, std::size_t bytes, std::size_t expected) {
  z_stream stream{};
  stream.next_in = const_cast<Bytef*>(stored);  // zlib's interface is not const; it only reads
  stream.avail_in = static_cast<uInt>(std::min<std::size_t>(bytes, UINT_MAX));
  if (inflateInit(&stream) != Z_OK) return {};
  // Counted, not kept: the output goes through one window, as much of it as inflating needs.
  Bytef window[16384];
  std::string problem;
  for (;;) {
    stream.next_out = window;
    stream.avail_out = sizeof window;
    const int status = inflate(&stream, Z_NO_FLUSH);
    if (status == Z_STREAM_END) {
      if (stream.total_out != expected)
        problem = "it inflates to " + std::to_string(stream.total_out) +
                  " bytes, a chunk of the dataset holds " + std::to_string(expected);
      break;
    }
    // Not a whole zlib stream: HDF5's own inflating fails on it, or the chunk skipped gzip (its
    // stored size was checked against its index record with the dataset).
    if (status != Z_OK) break;
    if (stream.total_out > expected) {
      problem =
          "it inflates to more than the " + std::to_string(expected) + " bytes a chunk of the dataset holds";
      break;
    }
  }
  inflateEnd(&stream);
  return problem;
}

}  // namespace phalanx::data::detail
