// Tests of the CIFAR-10/100 binary importer on small record files written here: the planar RGB
// to NHWC transpose checked pixel by pixel, labels, class names with and without the names file,
// the seeded train/val carve, and the refusal of missing files, bad sizes and bad labels.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/importers.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using phalanx::testing::ScratchDirectory;

constexpr int side = 32;
constexpr int channels = 3;

// The pixel of record `identity` at (channel, row, column). Channel, row and column weigh
// differently, so a swapped axis or plane order gives other values.
std::uint8_t pattern(int identity, int channel, int row, int column) {
  return static_cast<std::uint8_t>((identity * 31 + channel * 85 + row * 7 + column * 3) % 256);
}

struct Record {
  std::vector<std::uint8_t> label_bytes;  // 1 (CIFAR-10) or 2 (coarse, fine: CIFAR-100)
  int identity;                           // decides the pixels through `pattern`
};

// Writes records in the CIFAR binary layout: label bytes, then the R, G and B planes row-major.
void write_records(const std::string& path, const std::vector<Record>& records) {
  std::ofstream file(path, std::ios::binary);
  ASSERT_TRUE(file) << path;
  for (const Record& record : records) {
    file.write(reinterpret_cast<const char*>(record.label_bytes.data()),
               static_cast<std::streamsize>(record.label_bytes.size()));
    for (int channel = 0; channel < channels; ++channel)
      for (int row = 0; row < side; ++row)
        for (int column = 0; column < side; ++column)
          file.put(static_cast<char>(pattern(record.identity, channel, row, column)));
  }
  ASSERT_TRUE(file.good()) << path;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  ASSERT_TRUE(file.good()) << path;
}

// CIFAR-10 files in `folder`: `per_batch` records in each of the five batches and `test_count`
// in the test batch. Returns the train records then the test records, in file order.
std::pair<std::vector<Record>, std::vector<Record>> write_cifar10(const std::filesystem::path& folder,
                                                                  int per_batch, int test_count) {
  std::filesystem::create_directories(folder);
  std::vector<Record> train, test;
  int identity = 0;
  for (int batch = 1; batch <= 5; ++batch) {
    std::vector<Record> records;
    for (int index = 0; index < per_batch; ++index, ++identity)
      records.push_back({{static_cast<std::uint8_t>((identity * 3 + 1) % 10)}, identity});
    write_records((folder / ("data_batch_" + std::to_string(batch) + ".bin")).string(), records);
    train.insert(train.end(), records.begin(), records.end());
  }
  for (int index = 0; index < test_count; ++index, ++identity)
    test.push_back({{static_cast<std::uint8_t>(identity % 10)}, identity});
  write_records((folder / "test_batch.bin").string(), test);
  return {train, test};
}

std::pair<std::vector<Record>, std::vector<Record>> write_cifar100(const std::filesystem::path& folder,
                                                                   int train_count, int test_count) {
  std::filesystem::create_directories(folder);
  std::vector<Record> train, test;
  int identity = 0;
  // Fine labels up to 99 and coarse labels that differ from them, so using the wrong byte shows.
  for (int index = 0; index < train_count; ++index, ++identity)
    train.push_back(
        {{static_cast<std::uint8_t>(identity % 20), static_cast<std::uint8_t>((identity * 13 + 99) % 100)},
         identity});
  for (int index = 0; index < test_count; ++index, ++identity)
    test.push_back(
        {{static_cast<std::uint8_t>((identity + 7) % 20), static_cast<std::uint8_t>(identity % 100)},
         identity});
  write_records((folder / "train.bin").string(), train);
  write_records((folder / "test.bin").string(), test);
  return {train, test};
}

// Checks a split against the records it came from: count, shape, every pixel in NHWC, labels.
void expect_split_matches(const Split& split, const std::vector<Record>& records, std::size_t label_byte) {
  ASSERT_EQ(split.count, static_cast<std::int64_t>(records.size())) << split.name;
  EXPECT_EQ(split.height, side);
  EXPECT_EQ(split.width, side);
  EXPECT_EQ(split.channels, channels);
  ASSERT_EQ(split.images.size(), records.size() * side * side * channels);
  std::size_t mismatches = 0;
  for (std::size_t sample = 0; sample < records.size(); ++sample) {
    EXPECT_EQ(split.labels[sample], records[sample].label_bytes[label_byte])
        << split.name << " sample " << sample;
    for (int row = 0; row < side; ++row)
      for (int column = 0; column < side; ++column)
        for (int channel = 0; channel < channels; ++channel) {
          const std::size_t offset =
              ((sample * side + static_cast<std::size_t>(row)) * side + static_cast<std::size_t>(column)) *
                  channels +
              static_cast<std::size_t>(channel);
          if (split.images[offset] != pattern(records[sample].identity, channel, row, column) &&
              ++mismatches <= 5)
            ADD_FAILURE() << split.name << " sample " << sample << " (" << row << ", " << column << ", "
                          << channel << ") = " << int{split.images[offset]} << ", expected "
                          << int{pattern(records[sample].identity, channel, row, column)};
        }
  }
  EXPECT_EQ(mismatches, 0u) << split.name;
}

TEST(CifarImport, Cifar10InArchiveFolderWithDefaultNames) {
  ScratchDirectory scratch("cifar10-default");
  const auto [train, test] = write_cifar10(scratch.path() / "cifar-10-batches-bin", 3, 4);
  const std::string output = scratch.file("cifar10.h5");
  import_cifar(scratch.path().string(), output, CifarVariant::Cifar10);

  const DatasetInfo info = read_dataset_info(output);
  EXPECT_EQ(info.classes, (std::vector<std::string>{"airplane", "automobile", "bird", "cat", "deer", "dog",
                                                    "frog", "horse", "ship", "truck"}));
  EXPECT_EQ(info.classes, cifar10_classes());
  ASSERT_EQ(info.splits.size(), 2u);
  EXPECT_EQ(info.find_split("val"), nullptr);
  expect_split_matches(read_split(output, "train"), train, 0);
  expect_split_matches(read_split(output, "test"), test, 0);
}

TEST(CifarImport, Cifar10DirectlyInFolderWithMetaNames) {
  ScratchDirectory scratch("cifar10-meta");
  const auto [train, test] = write_cifar10(scratch.path(), 2, 3);
  // The published file ends with a blank line; a copy edited on Windows has \r line ends.
  write_text(scratch.file("batches.meta.txt"), "a0\nb1\r\nc2\nd3\ne4\nf5\ng6\nh7\ni8\nj 9  \n\n");
  const std::string output = scratch.file("named.h5");
  import_cifar(scratch.path().string(), output, CifarVariant::Cifar10);
  EXPECT_EQ(read_dataset_info(output).classes,
            (std::vector<std::string>{"a0", "b1", "c2", "d3", "e4", "f5", "g6", "h7", "i8", "j 9"}));
  expect_split_matches(read_split(output, "train"), train, 0);
  expect_split_matches(read_split(output, "test"), test, 0);

  write_text(scratch.file("batches.meta.txt"), "only\nthree\nnames\n");
  EXPECT_INPUT_ERROR(import_cifar(scratch.path().string(), output, CifarVariant::Cifar10),
                     scratch.file("batches.meta.txt") + ": has 3 class names, expected 10");
}

TEST(CifarImport, Cifar100UsesFineLabelsAndNames) {
  ScratchDirectory scratch("cifar100");
  const auto [train, test] = write_cifar100(scratch.path() / "cifar-100-binary", 12, 5);
  const std::string output = scratch.file("cifar100.h5");
  import_cifar(scratch.path().string(), output, CifarVariant::Cifar100);
  std::vector<std::string> generic;
  for (int index = 0; index < 100; ++index) generic.push_back("class" + std::to_string(index));
  EXPECT_EQ(read_dataset_info(output).classes, generic);
  expect_split_matches(read_split(output, "train"), train, 1);
  expect_split_matches(read_split(output, "test"), test, 1);

  std::string names_text;
  std::vector<std::string> names;
  for (int index = 0; index < 100; ++index) {
    names.push_back("fine_" + std::to_string(index));
    names_text += names.back() + "\n";
  }
  write_text(scratch.file("cifar-100-binary/fine_label_names.txt"), names_text);
  import_cifar(scratch.path().string(), output, CifarVariant::Cifar100);
  EXPECT_EQ(read_dataset_info(output).classes, names);

  // A gzip-compressed file reads like the plain one.
  std::ifstream plain(scratch.file("cifar-100-binary/test.bin"), std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(plain)), std::istreambuf_iterator<char>());
  gzFile compressed = gzopen(scratch.file("cifar-100-binary/test.bin.gz").c_str(), "wb");
  ASSERT_NE(compressed, nullptr);
  ASSERT_EQ(gzwrite(compressed, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(compressed), Z_OK);
  std::filesystem::remove(scratch.file("cifar-100-binary/test.bin"));
  import_cifar(scratch.path().string(), output, CifarVariant::Cifar100);
  expect_split_matches(read_split(output, "test"), test, 1);
}

// Finds each sample of `split` among `records` by its pixels (every identity is distinct).
std::vector<std::size_t> source_indices(const Split& split, const std::vector<Record>& records) {
  std::vector<std::size_t> indices;
  for (std::int64_t sample = 0; sample < split.count; ++sample) {
    const std::uint8_t first = split.images[static_cast<std::size_t>(sample) * side * side * channels];
    std::size_t found = records.size();
    for (std::size_t index = 0; index < records.size(); ++index)
      if (pattern(records[index].identity, 0, 0, 0) == first) found = index;
    EXPECT_LT(found, records.size()) << split.name << " sample " << sample << " comes from no record";
    indices.push_back(found);
  }
  return indices;
}

TEST(CifarImport, ValidationCarveIsSeededDisjointAndComplete) {
  ScratchDirectory scratch("cifar10-val");
  const auto [train, test] = write_cifar10(scratch.path(), 8, 4);  // 40 training records
  const std::string directory = scratch.path().string();
  const std::string first = scratch.file("seed3-a.h5"), again = scratch.file("seed3-b.h5"),
                    other = scratch.file("seed4.h5");
  import_cifar(directory, first, CifarVariant::Cifar10, {}, 0.25, 3);
  import_cifar(directory, again, CifarVariant::Cifar10, {}, 0.25, 3);
  import_cifar(directory, other, CifarVariant::Cifar10, {}, 0.25, 4);

  const DatasetInfo info = read_dataset_info(first);
  ASSERT_NE(info.find_split("val"), nullptr);
  EXPECT_EQ(info.find_split("train")->count, 30);
  EXPECT_EQ(info.find_split("val")->count, 10);
  EXPECT_EQ(info.find_split("test")->count, 4);

  const Split kept = read_split(first, "train"), validation = read_split(first, "val");
  const std::vector<std::size_t> kept_indices = source_indices(kept, train);
  const std::vector<std::size_t> validation_indices = source_indices(validation, train);
  std::set<std::size_t> all(kept_indices.begin(), kept_indices.end());
  for (const std::size_t index : validation_indices)
    EXPECT_TRUE(all.insert(index).second) << "record " << index << " is in both";
  EXPECT_EQ(all.size(), train.size()) << "train and val together must hold every training record";
  // Each side keeps the file order, and its samples are the records themselves, pixel by pixel.
  EXPECT_TRUE(std::is_sorted(kept_indices.begin(), kept_indices.end()));
  EXPECT_TRUE(std::is_sorted(validation_indices.begin(), validation_indices.end()));
  std::vector<Record> kept_records, validation_records;
  for (const std::size_t index : kept_indices) kept_records.push_back(train[index]);
  for (const std::size_t index : validation_indices) validation_records.push_back(train[index]);
  expect_split_matches(kept, kept_records, 0);
  expect_split_matches(validation, validation_records, 0);
  expect_split_matches(read_split(first, "test"), test, 0);

  const Split repeated = read_split(again, "val");
  EXPECT_EQ(repeated.images, validation.images);
  EXPECT_EQ(repeated.labels, validation.labels);
  EXPECT_EQ(read_split(again, "train").images, kept.images);
  // 10 of 40 chosen alike by two seeds by chance: 1 in C(40, 10) ~ 8.5e8.
  EXPECT_NE(source_indices(read_split(other, "val"), train), validation_indices);

  const std::string output = scratch.file("bad-fraction.h5");
  EXPECT_INPUT_ERROR(import_cifar(directory, output, CifarVariant::Cifar10, {}, 0.6, 0),
                     directory + ": validation fraction 0.600000 is outside [0, 0.5]");
  EXPECT_INPUT_ERROR(import_cifar(directory, output, CifarVariant::Cifar10, {}, 0.001, 0),
                     "leaves 0 for validation");
  EXPECT_FALSE(std::filesystem::exists(output));
}

TEST(CifarImport, MissingFileNamesIt) {
  ScratchDirectory scratch("cifar-missing");
  write_cifar10(scratch.path() / "cifar-10-batches-bin", 2, 2);
  const std::string directory = scratch.path().string(), output = scratch.file("out.h5");
  const std::string folder = (scratch.path() / "cifar-10-batches-bin").string();
  std::filesystem::remove(folder + "/data_batch_3.bin");
  EXPECT_INPUT_ERROR(import_cifar(directory, output, CifarVariant::Cifar10),
                     folder + ": missing data_batch_3.bin");
  write_cifar10(folder, 2, 2);
  std::filesystem::remove(folder + "/test_batch.bin");
  EXPECT_INPUT_ERROR(import_cifar(directory, output, CifarVariant::Cifar10),
                     folder + ": missing test_batch.bin");
  EXPECT_INPUT_ERROR(import_cifar(directory, output, CifarVariant::Cifar100),
                     directory + ": missing train.bin (looked in the folder and in cifar-100-binary/)");
  EXPECT_INPUT_ERROR(import_cifar(scratch.file("absent"), output, CifarVariant::Cifar10),
                     "absent: no such directory");
  EXPECT_FALSE(std::filesystem::exists(output));
}

TEST(CifarImport, SizeNotAMultipleOfTheRecordNamesFileAndSize) {
  ScratchDirectory scratch("cifar-size");
  write_cifar10(scratch.path(), 2, 3);
  const std::string output = scratch.file("out.h5"), test_path = scratch.file("test_batch.bin");
  {
    std::ofstream file(test_path, std::ios::binary | std::ios::app);
    file << "extra";
  }
  EXPECT_INPUT_ERROR(import_cifar(scratch.path().string(), output, CifarVariant::Cifar10),
                     test_path + ": size 9224 bytes is not a multiple of the record size 3073");
  // CIFAR-10 records read as CIFAR-100 ones (3074 bytes) do not fit either.
  write_cifar100(scratch.path(), 2, 2);
  std::filesystem::resize_file(scratch.file("train.bin"), 3074 * 2 - 1);
  EXPECT_INPUT_ERROR(
      import_cifar(scratch.path().string(), output, CifarVariant::Cifar100),
      scratch.file("train.bin") + ": size 6147 bytes is not a multiple of the record size 3074");
  EXPECT_FALSE(std::filesystem::exists(output));
}

TEST(CifarImport, LabelOutOfRangeNamesFileAndRecord) {
  ScratchDirectory scratch("cifar-label");
  auto [train, test] = write_cifar10(scratch.path(), 4, 2);
  const std::string output = scratch.file("out.h5"), batch_path = scratch.file("data_batch_2.bin");
  std::vector<Record> batch(train.begin() + 4, train.begin() + 8);
  batch[2].label_bytes = {10};
  write_records(batch_path, batch);
  EXPECT_INPUT_ERROR(import_cifar(scratch.path().string(), output, CifarVariant::Cifar10),
                     batch_path + ": record 2: label 10 is outside [0, 10)");

  auto [train100, test100] = write_cifar100(scratch.path(), 5, 3);
  test100[1].label_bytes = {3, 100};
  write_records(scratch.file("test.bin"), test100);
  EXPECT_INPUT_ERROR(import_cifar(scratch.path().string(), output, CifarVariant::Cifar100),
                     scratch.file("test.bin") + ": record 1: fine label 100 is outside [0, 100)");
  test100[1].label_bytes = {20, 5};
  write_records(scratch.file("test.bin"), test100);
  EXPECT_INPUT_ERROR(import_cifar(scratch.path().string(), output, CifarVariant::Cifar100),
                     scratch.file("test.bin") + ": record 1: coarse label 20 is outside [0, 20)");
  EXPECT_FALSE(std::filesystem::exists(output));
}

}  // namespace
}  // namespace phalanx::data
