// Tests of the dataset checksum: XXH64 matches the published reference values, hashing in pieces
// equals hashing at once, write_dataset stores checksums that `inspect --verify` accepts, and a
// byte changed with the HDF5 C API (or a file without checksums) is reported naming the dataset.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/importers.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using phalanx::testing::make_split;
using phalanx::testing::ScratchDirectory;

std::string write_small_dataset(const ScratchDirectory& scratch, const WriteOptions& options = {}) {
  const Split train = make_split("train", 300, 6, 5, 3, 10, 1);
  const Split test = make_split("test", 70, 6, 5, 3, 10, 2);
  const Split validation = make_split("val", 30, 6, 5, 3, 10, 3);
  const std::string path = scratch.file("checked.h5");
  write_dataset(path, digit_classes(), {&train, &test, &validation}, options);
  return path;
}

// Reads one element of `dataset_name` at `coordinates`, transforms it, writes it back: the kind of
// silent damage (bit rot, a stray tool) that --verify exists to notice.
template <typename Element, typename Change>
void change_element(const std::string& path, const char* dataset_name,
                    const std::vector<hsize_t>& coordinates, hid_t memory_type, Change change) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t dataset = H5Dopen2(file, dataset_name, H5P_DEFAULT);
  ASSERT_GE(dataset, 0);
  const hid_t file_space = H5Dget_space(dataset);
  const std::vector<hsize_t> ones(coordinates.size(), 1);
  ASSERT_GE(
      H5Sselect_hyperslab(file_space, H5S_SELECT_SET, coordinates.data(), nullptr, ones.data(), nullptr), 0);
  const hsize_t one = 1;
  const hid_t memory_space = H5Screate_simple(1, &one, nullptr);
  Element value{};
  ASSERT_GE(H5Dread(dataset, memory_type, memory_space, file_space, H5P_DEFAULT, &value), 0);
  value = change(value);
  ASSERT_GE(H5Dwrite(dataset, memory_type, memory_space, file_space, H5P_DEFAULT, &value), 0);
  H5Sclose(memory_space);
  H5Sclose(file_space);
  H5Dclose(dataset);
  ASSERT_GE(H5Fclose(file), 0);
}

void delete_checksum(const std::string& path, const char* dataset_name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Adelete_by_name(file, dataset_name, checksum_attribute, H5P_DEFAULT), 0);
  ASSERT_GE(H5Fclose(file), 0);
}

TEST(Checksum, MatchesTheReferenceXxhash64) {
  EXPECT_EQ(xxhash64("", 0), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(xxhash64("abc", 3), 0x44BC2CF5AD770999ULL);
  // Longer than one 32-byte stripe, so the four-lane path and the seed are covered too (values from
  // Debian's libxxhash 0.8.1, the reference implementation).
  const std::string sentence = "Nobody inspects the spammish repetition";
  EXPECT_EQ(xxhash64(sentence.data(), sentence.size()), 0xFBCEA83C8A378BF1ULL);
  EXPECT_EQ(xxhash64(sentence.data(), sentence.size(), 20141025), 0xCE06936136852706ULL);
  EXPECT_EQ(format_checksum(0x00ab), "xxh64:00000000000000ab");
}

TEST(Checksum, StreamingInPiecesEqualsOneShot) {
  std::vector<std::uint8_t> bytes(1000);
  for (std::size_t index = 0; index < bytes.size(); ++index)
    bytes[index] = static_cast<std::uint8_t>(index * 31 + 7);
  for (const std::size_t total :
       {std::size_t{0}, std::size_t{5}, std::size_t{31}, std::size_t{32}, std::size_t{999}})
    for (const std::size_t piece :
         {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{32}, std::size_t{100}}) {
      Xxhash64Stream stream(42);
      for (std::size_t offset = 0; offset < total; offset += piece)
        stream.update(bytes.data() + offset, std::min(piece, total - offset));
      EXPECT_EQ(stream.digest(), xxhash64(bytes.data(), total, 42))
          << total << " bytes in pieces of " << piece;
    }
  // And the whole buffer against the reference implementation, for every tail length case.
  EXPECT_EQ(xxhash64(bytes.data(), 1000, 42), 0xEBBB006470311EBCULL);
  EXPECT_EQ(xxhash64(bytes.data(), 999), 0x83DB62D899C1F849ULL);
}

TEST(Checksum, RoundTripVerifies) {
  ScratchDirectory scratch("checksum_round_trip");
  const std::string path = write_small_dataset(scratch);
  const std::string verdict = verify_checksums(path);
  EXPECT_EQ(verdict.rfind("checksum ok", 0), 0u) << verdict;
  EXPECT_NE(verdict.find("6 datasets"), std::string::npos) << verdict;
}

TEST(Checksum, VerifiesAcrossSlabsAndCompression) {
  ScratchDirectory scratch("checksum_chunked");
  // 7-sample gzip chunks: the verifier's slabs must add up to the same bytes.
  const std::string path = write_small_dataset(scratch, WriteOptions{7, 4});
  EXPECT_EQ(verify_checksums(path).rfind("checksum ok", 0), 0u);
}

TEST(Checksum, StoredValueIsTheHashOfTheValues) {
  ScratchDirectory scratch("checksum_value");
  const Split train = make_split("train", 50, 4, 4, 1, 10, 5);
  const Split test = make_split("test", 20, 4, 4, 1, 10, 6);
  const std::string path = scratch.file("value.h5");
  write_dataset(path, digit_classes(), {&train, &test});
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t attribute =
      H5Aopen_by_name(file, "/train/images", checksum_attribute, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(attribute, 0);
  const hid_t type = H5Aget_type(attribute);
  char* text = nullptr;
  ASSERT_GE(H5Aread(attribute, type, &text), 0);
  EXPECT_EQ(std::string(text), checksum_text(train.images.data(), train.images.size()));
  H5free_memory(text);
  H5Tclose(type);
  H5Aclose(attribute);
  H5Fclose(file);
}

TEST(Checksum, OneFlippedImageByteIsNamed) {
  ScratchDirectory scratch("checksum_flipped_image");
  const std::string path = write_small_dataset(scratch);
  change_element<std::uint8_t>(path, "/train/images", {123, 2, 3, 1}, H5T_NATIVE_UINT8,
                               [](std::uint8_t value) { return static_cast<std::uint8_t>(value ^ 0x01); });
  EXPECT_INPUT_ERROR(verify_checksums(path), "/train/images: checksum mismatch");
  // The file still reads: only the checksum tells that its bytes changed.
  EXPECT_NO_THROW(read_split(path, "train"));
}

TEST(Checksum, AChangedLabelIsNamed) {
  ScratchDirectory scratch("checksum_changed_label");
  const std::string path = write_small_dataset(scratch);
  change_element<std::int32_t>(path, "/val/labels", {29}, H5T_NATIVE_INT32,
                               [](std::int32_t label) { return (label + 1) % 10; });
  const std::string message = phalanx::testing::input_error_message([&] { verify_checksums(path); });
  EXPECT_NE(message.find("/val/labels"), std::string::npos) << message;
  EXPECT_EQ(message.find("/train/"), std::string::npos) << message;
}

TEST(Checksum, FileWithoutChecksumsSaysSo) {
  ScratchDirectory scratch("checksum_missing");
  const std::string path = write_small_dataset(scratch);
  for (const char* name :
       {"/train/images", "/train/labels", "/test/images", "/test/labels", "/val/images", "/val/labels"})
    delete_checksum(path, name);
  EXPECT_INPUT_ERROR(verify_checksums(path), "no checksums stored");
  // Still a valid dataset for everything else.
  EXPECT_NO_THROW(inspect(path));
}

TEST(Checksum, OneMissingChecksumIsNamed) {
  ScratchDirectory scratch("checksum_one_missing");
  const std::string path = write_small_dataset(scratch);
  delete_checksum(path, "/test/labels");
  EXPECT_INPUT_ERROR(verify_checksums(path), "attribute \"checksum\" of /test/labels: missing");
}

}  // namespace
}  // namespace phalanx::data
