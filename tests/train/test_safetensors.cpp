// The safetensors reader and writer: a written file reads back bit for bit; F16, BF16 and F64 bit
// patterns convert to their known fp32 values; and each kind of damage to a header (a length past
// the file, JSON that is no object, offsets that overlap, leave the data or disagree with dtype x
// shape, a name given twice, negative or absurd shapes, another dtype) is refused naming the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/train/safetensors.hpp"
#include "support/test_support.hpp"

namespace phalanx::train {
namespace {

using phalanx::testing::ScratchDirectory;
using phalanx::testing::write_bytes;

// A safetensors file made by hand: the 8-byte length, `header` as given, then `data`.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string bytes;
  for (int index = 0; index < 8; ++index)
    bytes.push_back(static_cast<char>((static_cast<std::uint64_t>(header.size()) >> (8 * index)) & 0xff));
  return bytes + header + data;
}

std::string little_endian_bytes(std::uint64_t value, int count) {
  std::string bytes;
  for (int index = 0; index < count; ++index)
    bytes.push_back(static_cast<char>((value >> (8 * index)) & 0xff));
  return bytes;
}

struct SafetensorsTest : ::testing::Test {
  ScratchDirectory scratch{"safetensors"};
  std::string path = scratch.file("weights.safetensors");

  void write(const std::string& header, const std::string& data) {
    write_bytes(path, safetensors_bytes(header, data));
  }
  // The file at `path` is refused with a message naming it and containing `expected`.
  void expect_refused(const std::string& expected) {
    EXPECT_INPUT_ERROR(SafetensorsFile{path}, path + ": ");
    EXPECT_INPUT_ERROR(SafetensorsFile{path}, expected);
  }
};

TEST_F(SafetensorsTest, AWrittenFileReadsBackBitForBit) {
  const std::vector<SafetensorsTensor> tensors = {
      {"features.0.weight", Shape{2, 1, 3, 3}, {}},
      {"features.0.bias", Shape{2}, {-0.0f, std::numeric_limits<float>::denorm_min()}},
      {"empty", Shape{0, 4}, {}},
      {"scalar", Shape{}, {3.5f}}};
  std::vector<SafetensorsTensor> written = tensors;
  for (int index = 0; index < 18; ++index)
    written[0].values.push_back(0.1f * static_cast<float>(index) - 0.7f);
  write_safetensors(path, written, {{"format", "pt"}});

  const SafetensorsFile file(path);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  ASSERT_EQ(file.entries().size(), 4u);
  for (const SafetensorsTensor& tensor : written) {
    const auto entry =
        std::find_if(file.entries().begin(), file.entries().end(),
                     [&](const SafetensorsEntry& candidate) { return candidate.name == tensor.name; });
    ASSERT_NE(entry, file.entries().end()) << tensor.name;
    EXPECT_EQ(entry->dtype, "F32");
    EXPECT_EQ(entry->shape, tensor.shape) << tensor.name;
    const std::vector<float> values = file.values(*entry);
    ASSERT_EQ(values.size(), tensor.values.size());
    for (std::size_t index = 0; index < values.size(); ++index)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(values[index]),
                std::bit_cast<std::uint32_t>(tensor.values[index]))
          << tensor.name << "[" << index << "]";
  }
  // Entries come in the order of their bytes, and the data area starts 8-byte aligned.
  EXPECT_EQ(file.entries().front().name, "features.0.weight");
  const std::string bytes = phalanx::testing::file_bytes(path);
  EXPECT_EQ((8 + static_cast<unsigned char>(bytes[0]) + 256 * static_cast<unsigned char>(bytes[1])) % 8, 0u);
}

TEST_F(SafetensorsTest, HalfBfloatAndDoubleConvertToTheirFloatValues) {
  // IEEE half: 1, -2, 65504 (largest), 2^-14 (smallest normal), 2^-24 (smallest subnormal), -0, inf.
  const std::vector<std::uint16_t> half_bits = {0x3c00, 0xc000, 0x7bff, 0x0400, 0x0001, 0x8000, 0x7c00};
  const std::vector<float> half_values = {1.0f,
                                          -2.0f,
                                          65504.0f,
                                          std::ldexp(1.0f, -14),
                                          std::ldexp(1.0f, -24),
                                          -0.0f,
                                          std::numeric_limits<float>::infinity()};
  // bfloat16: 1, -1.5, pi rounded (0x4049 = 3.140625), 2^-126, 3.3895314e38 (largest).
  const std::vector<std::uint16_t> bfloat_bits = {0x3f80, 0xbfc0, 0x4049, 0x0080, 0x7f7f};
  const std::vector<float> bfloat_values = {1.0f, -1.5f, 3.140625f, std::ldexp(1.0f, -126), 3.3895314e38f};
  // float64: 0.1 rounds to the float nearest 0.1; 1e300 overflows to inf.
  const std::vector<double> double_values = {0.1, -3.0, 1e300};
  std::string data;
  for (const std::uint16_t bits : half_bits) data += little_endian_bytes(bits, 2);
  for (const std::uint16_t bits : bfloat_bits) data += little_endian_bytes(bits, 2);
  for (const double value : double_values)
    data += little_endian_bytes(std::bit_cast<std::uint64_t>(value), 8);
  write(R"({"h":{"dtype":"F16","shape":[7],"data_offsets":[0,14]},)"
        R"("b":{"dtype":"BF16","shape":[5],"data_offsets":[14,24]},)"
        R"("d":{"dtype":"F64","shape":[3],"data_offsets":[24,48]}})",
        data);
  const SafetensorsFile file(path);
  ASSERT_EQ(file.entries().size(), 3u);
  const auto expect_values = [](const std::vector<float>& found, const std::vector<float>& expected) {
    ASSERT_EQ(found.size(), expected.size());
    for (std::size_t index = 0; index < found.size(); ++index)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(found[index]), std::bit_cast<std::uint32_t>(expected[index]))
          << index << ": " << found[index] << " vs " << expected[index];
  };
  // The conversions themselves, infinity included; a tensor holding one is no weight (below).
  EXPECT_EQ(half_to_float(0x7c00), std::numeric_limits<float>::infinity());
  for (std::size_t index = 0; index + 1 < half_bits.size(); ++index)
    EXPECT_EQ(std::bit_cast<std::uint32_t>(half_to_float(half_bits[index])),
              std::bit_cast<std::uint32_t>(half_values[index]))
        << index;
  expect_values(file.values(file.entries()[1]), bfloat_values);
  // A NaN or infinity evaluates to nonsense with exit 0 and trains to NaN: refused, naming where.
  EXPECT_INPUT_ERROR(file.values(file.entries()[0]),
                     path + ": tensor 'h' holds a non-finite value (inf) at index 6");
  EXPECT_INPUT_ERROR(file.values(file.entries()[2]),
                     path + ": tensor 'd' holds a non-finite value (inf) at index 2 (as float)");
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);  // the half nearest 1/3
}

TEST_F(SafetensorsTest, OtherDtypesAreRefusedNamingTheTensorAndDtype) {
  write(R"({"bn.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
        R"("mask":{"dtype":"BOOL","shape":[2],"data_offsets":[8,10]}})",
        std::string(10, '\0'));
  const SafetensorsFile file(path);  // the header is sound: only converting these is refused
  for (const SafetensorsEntry& entry : file.entries())
    EXPECT_INPUT_ERROR(file.values(entry), path + ": tensor '" + entry.name + "' is " + entry.dtype +
                                               "; phalanx takes weights as F32, F16, BF16 or F64");
}

// One kind of damage to a file: its bytes, and what the refusal must say besides the file name.
struct DamagedFile {
  std::string name;  // the test's name: what is wrong
  std::string bytes;
  std::string expected;
};

void PrintTo(const DamagedFile& damaged, std::ostream* out) {
  *out << damaged.name;
}

std::vector<DamagedFile> damaged_files() {
  const std::string four(4, '\0'), eight(8, '\0'), twelve(12, '\0');
  return {
      // The header length: past the file, or past the format's limit.
      {"TooFewBytes", "abc", "3 bytes are too few for a safetensors file"},
      {"HeaderLengthPastTheFile", little_endian_bytes(1000, 8) + "{}",
       "the safetensors header length 1000 runs past the end of the file (10 bytes"},
      {"HeaderLengthAllOnes", little_endian_bytes(~std::uint64_t{0}, 8) + "{}",
       "the safetensors header length 18446744073709551615 is beyond the format's limit of 100000000 bytes"},
      {"HeaderLengthOverTheLimit", little_endian_bytes(100'000'001, 8) + "{}",
       "the safetensors header length 100000001 is beyond the format's limit of 100000000 bytes"},
      {"HeaderLengthAtTheLimitPastTheFile", little_endian_bytes(100'000'000, 8) + "{}",
       "the safetensors header length 100000000 runs past the end of the file (10 bytes"},
      {"EmptyHeader", little_endian_bytes(0, 8), "the safetensors header is not valid JSON"},
      // A header that is not a JSON object of well-formed entries.
      {"HeaderIsAnArray", safetensors_bytes("[1, 2]", ""),
       "the safetensors header is JSON but not an object (array)"},
      {"HeaderIsCutShort", safetensors_bytes("{\"w\": ", ""), "the safetensors header is not valid JSON"},
      {"HeaderNestsTooDeep", safetensors_bytes(std::string(100, '[') + std::string(100, ']'), ""),
       "nests deeper than 8 levels"},
      {"EntryIsAnArray", safetensors_bytes(R"({"w": [1]})", ""),
       "tensor 'w': its entry is array, not an object of dtype, shape and data_offsets"},
      {"EntryWithoutDataOffsets", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", "abcd"),
       "tensor 'w': no data_offsets"},
      {"EntryWithAnUnknownField",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"stride":[1]}})", "abcd"),
       "tensor 'w': unknown field 'stride'"},
      {"MetadataThatIsNotAString", safetensors_bytes(R"({"__metadata__":{"format":1}})", ""),
       "__metadata__ 'format' is 1, not a string"},
      {"UnknownDtype",
       safetensors_bytes(R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})",
                         std::string(16, '\0')),
       "tensor 'w': unknown dtype 'F128'"},
      // A name given twice.
      {"TensorNameGivenTwice",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         eight),
       "the safetensors header names 'w' twice"},
      {"FieldNameGivenTwice",
       safetensors_bytes(R"({"w":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", four),
       "names 'dtype' twice"},
      // Offsets that leave the data, overlap or disagree with dtype x shape.
      {"OffsetsPastTheData",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", four),
       "tensor 'w': data_offsets [0, 8] leave the data area of 4 bytes"},
      {"OffsetsReversed",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight),
       "tensor 'w': data_offsets [8, 0] leave the data area"},
      {"OffsetsDisagreeWithTheShape",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", twelve),
       "tensor 'w': F32 x shape [3] is 12 bytes, but data_offsets [0, 8] span 8"},
      {"OffsetsOverlap",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         twelve),
       "tensors 'a' [0, 8) and 'b' [4, 12) overlap in the data area"},
      {"OffsetNegative",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]}})", eight),
       "tensor 'w': data_offsets holds -8, not a non-negative integer"},
      // Negative, fractional, absurd or malformed shapes.
      {"DimensionNegative",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
       "tensor 'w': shape holds -2, not a non-negative integer"},
      {"DimensionFractional",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}})", eight),
       "tensor 'w': shape holds 1.5, not a non-negative integer"},
      {"DimensionAbsurd",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2199023255553],"data_offsets":[0,8]}})", eight),
       "tensor 'w': dimension 2199023255553 in shape [2199023255553] is absurd"},
      // Dimensions whose product overflows 64 bits.
      {"ShapeProductOverflows",
       safetensors_bytes(
           R"({"w":{"dtype":"F32","shape":[1099511627776,1099511627776,1099511627776],"data_offsets":[0,8]}})",
           eight),
       "tensor 'w': F32 x shape [1099511627776, 1099511627776, 1099511627776] is more bytes than the file "
       "holds"},
      {"ShapeNotAList", safetensors_bytes(R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", eight),
       "tensor 'w': shape must be a list of at most 16 dimensions"},
  };
}

struct DamagedSafetensorsFile : SafetensorsTest, ::testing::WithParamInterface<DamagedFile> {};

TEST_P(DamagedSafetensorsFile, IsRefusedNamingTheFile) {
  write_bytes(path, GetParam().bytes);
  expect_refused(GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(Safetensors, DamagedSafetensorsFile, ::testing::ValuesIn(damaged_files()),
                         [](const ::testing::TestParamInfo<DamagedFile>& info) { return info.param.name; });

TEST_F(SafetensorsTest, AMissingFileIsRefused) {
  expect_refused("no such safetensors file");
}

}  // namespace
}  // namespace phalanx::train
