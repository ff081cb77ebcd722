// Safetensors files (the format PyTorch users share weights in): an 8-byte little-endian header
// length, that many bytes of JSON naming each tensor's dtype, shape and byte range, then the data.
// phalanx reads them to take PyTorch weights in and writes them to hand weights back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "phalanx/core/shape.hpp"

namespace phalanx::train {

// One tensor's entry in a safetensors header; `begin` and `end` are byte offsets into the data
// area (the bytes after the header).
struct SafetensorsEntry {
  std::string name;   // as stored, torch's spelling ("layer1.0.conv1.weight")
  std::string dtype;  // as stored ("F32", "BF16", "I64", ...)
  Shape shape;
  std::size_t begin = 0;
  std::size_t end = 0;
};

// A safetensors file read whole and validated at construction: InvalidInput naming the file (and
// the tensor) for a header length past the end of the file or beyond the format's 100 MB, a header
// that is not a JSON object of entries, an unknown dtype, a shape that is not a list of
// non-negative integers, byte ranges that leave the data area, overlap or disagree with dtype x
// shape, or a name given twice.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  // In the order of their bytes in the data area.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  // The header's "__metadata__" (string to string); empty when it has none.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The tensor's values as fp32: F32, F16, BF16 and F64 convert (F64 rounds to nearest); any
  // other dtype is refused naming the file, the tensor and its dtype.
  std::vector<float> values(const SafetensorsEntry& entry) const;

 private:
  std::string path_;
  std::vector<char> bytes_;
  std::size_t data_begin_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: fp32 values in torch's layout under torch's name.
struct SafetensorsTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;
};

// Writes `tensors` as F32 (in the given order) through an AtomicFile, so a failed write leaves
// nothing under `path`. Names must be unique and each value count must match its shape.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// IEEE half and bfloat16 bit patterns as fp32 (exact: every such value is an fp32 value).
float half_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);

}  // namespace phalanx::train
