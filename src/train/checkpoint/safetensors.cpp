// Safetensors reading and writing (safetensors.hpp). The file is a user's: every length, offset and
// shape in its header is checked against the file before a byte of data is read, and the JSON's
// nesting is bounded before it is parsed, so no header makes the reader allocate or read past
// what the file holds.
#include "phalanx/train/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"

namespace phalanx::train {
namespace {

using nlohmann::json;

// The safetensors library refuses headers over 100 MB; so does phalanx (a header of a real model
// is tens of kilobytes).
constexpr std::uint64_t largest_header_bytes = 100'000'000;
// A valid header nests three deep ({name: {shape: [..]}}); a bound keeps a hostile one from making
// the parser and the destructor of its tree recurse without end.
constexpr int deepest_nesting = 8;
// A dimension beyond 2^40 describes no tensor a file can hold.
constexpr std::uint64_t largest_dimension = std::uint64_t{1} << 40;
constexpr std::size_t largest_rank = 16;

std::size_t dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, std::size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  const auto found = sizes.find(dtype);
  return found == sizes.end() ? 0 : found->second;
}

std::uint64_t little_endian(const unsigned char* bytes, int count) {
  std::uint64_t value = 0;
  for (int index = 0; index < count; ++index)
    value |= static_cast<std::uint64_t>(bytes[index]) << (8 * index);
  return value;
}

// The deepest nesting of brackets outside strings, stopping once past `limit`.
int nesting_depth(const char* text, std::size_t size, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (std::size_t index = 0; index < size && deepest <= limit; ++index) {
    const char character = text[index];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (character == '\\')
        escaped = true;
      else if (character == '"')
        in_string = false;
    } else if (character == '"') {
      in_string = true;
    } else if (character == '{' || character == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (character == '}' || character == ']') {
      --depth;
    }
  }
  return deepest;
}

// nlohmann's text of a parse error without its "[json.exception.parse_error.101] " prefix.
std::string json_reason(const json::exception& error) {
  const std::string text = error.what();
  const std::size_t end = text.find("] ");
  return end == std::string::npos ? text : text.substr(end + 2);
}

// Parses the header, refusing a key given twice in one object (the JSON standard leaves it open;
// nlohmann would keep the last, and which weights load must not depend on that).
json parse_header(const std::string& path, const char* text, std::size_t size) {
  PHALANX_REQUIRE_INPUT(nesting_depth(text, size, deepest_nesting) <= deepest_nesting, path,
                        ": the safetensors header nests deeper than ", deepest_nesting,
                        " levels (it is not a safetensors header)");
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  const json::parser_callback_t check_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.empty() && parsed.is_string() &&
        !open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(text, text + size, check_keys);
  } catch (const json::exception& error) {
    throw_input_error(path + ": the safetensors header is not valid JSON: " + json_reason(error));
  }
  PHALANX_REQUIRE_INPUT(duplicate.empty(), path, ": the safetensors header names '", duplicate, "' twice");
  PHALANX_REQUIRE_INPUT(header.is_object(), path, ": the safetensors header is JSON but not an object (",
                        header.type_name(), ")");
  return header;
}

// One non-negative integer of the header, or a refusal naming the tensor and the field.
std::uint64_t header_integer(const json& value, const std::string& path, const std::string& name,
                             const char* field) {
  PHALANX_REQUIRE_INPUT(value.is_number_unsigned(), path, ": tensor '", name, "': ", field, " holds ",
                        value.dump(), ", not a non-negative integer");
  return value.get<std::uint64_t>();
}

SafetensorsEntry read_entry(const std::string& path, const std::string& name, const json& fields,
                            std::size_t data_bytes) {
  PHALANX_REQUIRE_INPUT(fields.is_object(), path, ": tensor '", name, "': its entry is ", fields.type_name(),
                        ", not an object of dtype, shape and data_offsets");
  for (const auto& [key, value] : fields.items())
    PHALANX_REQUIRE_INPUT(key == "dtype" || key == "shape" || key == "data_offsets", path, ": tensor '", name,
                          "': unknown field '", key, "' (an entry holds dtype, shape and data_offsets)");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    PHALANX_REQUIRE_INPUT(fields.contains(key), path, ": tensor '", name, "': no ", key);
  SafetensorsEntry entry;
  entry.name = name;
  const json& dtype = fields["dtype"];
  PHALANX_REQUIRE_INPUT(dtype.is_string(), path, ": tensor '", name, "': dtype is ", dtype.dump(),
                        ", not a string");
  entry.dtype = dtype.get<std::string>();
  const std::size_t element_bytes = dtype_bytes(entry.dtype);
  PHALANX_REQUIRE_INPUT(element_bytes > 0, path, ": tensor '", name, "': unknown dtype '", entry.dtype, "'");

  const json& shape = fields["shape"];
  PHALANX_REQUIRE_INPUT(shape.is_array() && shape.size() <= largest_rank, path, ": tensor '", name,
                        "': shape must be a list of at most ", largest_rank, " dimensions, not ",
                        shape.dump());
  std::vector<std::int64_t> dims;
  // Elements counted against what the data area can hold, so the product never overflows.
  const std::uint64_t most_elements = data_bytes / element_bytes;
  std::uint64_t elements = 1;
  bool exceeds = false;
  for (const json& dimension : shape) {
    const std::uint64_t size = header_integer(dimension, path, name, "shape");
    PHALANX_REQUIRE_INPUT(size <= largest_dimension, path, ": tensor '", name, "': dimension ", size,
                          " in shape ", shape.dump(), " is absurd");
    dims.push_back(static_cast<std::int64_t>(size));
    if (size == 0)
      elements = 0;
    else if (elements > most_elements / size)
      exceeds = true;
    else
      elements *= size;
  }
  entry.shape = Shape(std::move(dims));
  if (elements == 0) exceeds = false;

  const json& offsets = fields["data_offsets"];
  PHALANX_REQUIRE_INPUT(offsets.is_array() && offsets.size() == 2, path, ": tensor '", name,
                        "': data_offsets must be [begin, end], not ", offsets.dump());
  const std::uint64_t begin = header_integer(offsets[0], path, name, "data_offsets");
  const std::uint64_t end = header_integer(offsets[1], path, name, "data_offsets");
  PHALANX_REQUIRE_INPUT(begin <= end && end <= data_bytes, path, ": tensor '", name, "': data_offsets [",
                        begin, ", ", end, "] leave the data area of ", data_bytes, " bytes");
  PHALANX_REQUIRE_INPUT(!exceeds && elements * element_bytes == end - begin, path, ": tensor '", name,
                        "': ", entry.dtype, " x shape ", entry.shape.to_string(), " is ",
                        exceeds ? std::string("more bytes than the file holds")
                                : std::to_string(elements * element_bytes) + " bytes",
                        ", but data_offsets [", begin, ", ", end, "] span ", end - begin);
  entry.begin = static_cast<std::size_t>(begin);
  entry.end = static_cast<std::size_t>(end);
  return entry;
}

std::map<std::string, std::string> read_metadata(const std::string& path, const json& metadata) {
  PHALANX_REQUIRE_INPUT(metadata.is_object(), path, ": __metadata__ is ", metadata.type_name(),
                        ", not an object of strings");
  std::map<std::string, std::string> values;
  for (const auto& [key, value] : metadata.items()) {
    PHALANX_REQUIRE_INPUT(value.is_string(), path, ": __metadata__ '", key, "' is ", value.dump(),
                          ", not a string");
    values[key] = value.get<std::string>();
  }
  return values;
}

std::vector<char> read_whole_file(const std::string& path) {
  std::error_code error;
  PHALANX_REQUIRE_INPUT(std::filesystem::is_regular_file(path, error), path, ": no such safetensors file");
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  PHALANX_REQUIRE_INPUT(!error, path, ": cannot read the file size: ", error.message());
  std::ifstream file(path, std::ios::binary);
  PHALANX_REQUIRE_INPUT(file.good(), path, ": cannot open the safetensors file");
  std::vector<char> bytes(static_cast<std::size_t>(size));
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  PHALANX_REQUIRE_INPUT(file.gcount() == static_cast<std::streamsize>(bytes.size()), path,
                        ": could read only ", file.gcount(), " of its ", bytes.size(), " bytes");
  return bytes;
}

}  // namespace

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits >> 15) << 31;
  const std::uint32_t exponent = (bits >> 10) & 0x1f;
  const std::uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0) {
    // Zero and subnormals: mantissa x 2^-24, exact in fp32.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

float bfloat16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path), bytes_(read_whole_file(path)) {
  PHALANX_REQUIRE_INPUT(bytes_.size() >= 8, path, ": ", bytes_.size(),
                        " bytes are too few for a safetensors file (its header length alone takes 8)");
  const auto* raw = reinterpret_cast<const unsigned char*>(bytes_.data());
  const std::uint64_t header_bytes = little_endian(raw, 8);
  PHALANX_REQUIRE_INPUT(header_bytes <= largest_header_bytes, path, ": the safetensors header length ",
                        header_bytes, " is beyond the format's limit of ", largest_header_bytes, " bytes");
  PHALANX_REQUIRE_INPUT(header_bytes <= bytes_.size() - 8, path, ": the safetensors header length ",
                        header_bytes, " runs past the end of the file (", bytes_.size(),
                        " bytes; is it a safetensors file?)");
  data_begin_ = 8 + static_cast<std::size_t>(header_bytes);
  const std::size_t data_bytes = bytes_.size() - data_begin_;
  const json header = parse_header(path, bytes_.data() + 8, static_cast<std::size_t>(header_bytes));
  for (const auto& [name, fields] : header.items()) {
    if (name == "__metadata__")
      metadata_ = read_metadata(path, fields);
    else
      entries_.push_back(read_entry(path, name, fields, data_bytes));
  }
  std::sort(entries_.begin(), entries_.end(),
            [](const SafetensorsEntry& left, const SafetensorsEntry& right) {
              return std::pair(left.begin, left.end) < std::pair(right.begin, right.end);
            });
  for (std::size_t index = 1; index < entries_.size(); ++index) {
    const SafetensorsEntry& before = entries_[index - 1];
    const SafetensorsEntry& after = entries_[index];
    PHALANX_REQUIRE_INPUT(after.begin >= before.end, path, ": tensors '", before.name, "' [", before.begin,
                          ", ", before.end, ") and '", after.name, "' [", after.begin, ", ", after.end,
                          ") overlap in the data area");
  }
}

std::vector<float> SafetensorsFile::values(const SafetensorsEntry& entry) const {
  const auto* bytes = reinterpret_cast<const unsigned char*>(bytes_.data()) + data_begin_ + entry.begin;
  const std::size_t element_bytes = dtype_bytes(entry.dtype);
  const std::size_t count = (entry.end - entry.begin) / element_bytes;
  std::vector<float> values(count);
  if (entry.dtype == "F32") {
    for (std::size_t index = 0; index < count; ++index)
      values[index] = std::bit_cast<float>(static_cast<std::uint32_t>(little_endian(bytes + 4 * index, 4)));
  } else if (entry.dtype == "F16") {
    for (std::size_t index = 0; index < count; ++index)
      values[index] = half_to_float(static_cast<std::uint16_t>(little_endian(bytes + 2 * index, 2)));
  } else if (entry.dtype == "BF16") {
    for (std::size_t index = 0; index < count; ++index)
      values[index] = bfloat16_to_float(static_cast<std::uint16_t>(little_endian(bytes + 2 * index, 2)));
  } else if (entry.dtype == "F64") {
    for (std::size_t index = 0; index < count; ++index)
      values[index] = static_cast<float>(std::bit_cast<double>(little_endian(bytes + 8 * index, 8)));
  } else {
    throw_input_error(path_ + ": tensor '" + entry.name + "' is " + entry.dtype +
                      "; phalanx takes weights as F32, F16, BF16 or F64");
  }
  // A NaN or infinity (or an F64 past float's range) is no weight: a model started from it
  // evaluates to nonsense with exit 0, and trains to NaN.
  const auto bad =
      std::find_if(values.begin(), values.end(), [](float value) { return !std::isfinite(value); });
  PHALANX_REQUIRE_INPUT(bad == values.end(), path_, ": tensor '", entry.name, "' holds a non-finite value (",
                        *bad, ") at index ", bad - values.begin(), entry.dtype == "F64" ? " (as float)" : "");
  return values;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const SafetensorsTensor& tensor : tensors) {
    PHALANX_CHECK(names.insert(tensor.name).second, "tensor ", tensor.name, " given twice");
    PHALANX_CHECK(static_cast<std::int64_t>(tensor.values.size()) == tensor.shape.elements(), tensor.name,
                  ": ", tensor.values.size(), " values for shape ", tensor.shape.to_string());
    const std::uint64_t bytes = tensor.values.size() * sizeof(float);
    header[tensor.name] = {
        {"dtype", "F32"}, {"shape", tensor.shape.dims()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // The data area starts 8-byte aligned, as the safetensors library writes it (spaces are JSON).
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::string content;
  content.reserve(8 + text.size() + offset);
  for (int index = 0; index < 8; ++index)
    content.push_back(static_cast<char>((static_cast<std::uint64_t>(text.size()) >> (8 * index)) & 0xff));
  content += text;
  for (const SafetensorsTensor& tensor : tensors) {
    for (const float value : tensor.values) {
      const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
      for (int index = 0; index < 4; ++index)
        content.push_back(static_cast<char>((bits >> (8 * index)) & 0xff));
    }
  }
  write_file_atomically(path, content);
}

}  // namespace phalanx::train
