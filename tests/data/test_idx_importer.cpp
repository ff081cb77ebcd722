// Tests of the IDX importer on small IDX files written here (gzip through zlib, and plain), its
// refusal of bad headers and mismatched files, and, where the machine has it, the real Fashion-MNIST.
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/importers.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using phalanx::testing::ScratchDirectory;

enum class Compression { Gzip, None };

// Writes an IDX file: big-endian magic and dimensions, then the bytes.
void write_idx(const std::string& path, std::uint32_t magic, const std::vector<std::uint32_t>& dimensions,
               const std::vector<std::uint8_t>& payload, Compression compression) {
  std::vector<std::uint8_t> bytes;
  const auto append = [&](std::uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<std::uint8_t>(value >> shift));
  };
  append(magic);
  for (const std::uint32_t dimension : dimensions) append(dimension);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  if (compression == Compression::Gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr) << path;
    ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    ASSERT_EQ(gzclose(file), Z_OK);
  } else {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr) << path;
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
    std::fclose(file);
  }
}

struct IdxSplit {
  std::uint32_t count, rows, columns;
  std::vector<std::uint8_t> pixels, labels;
};

IdxSplit make_idx_split(std::uint32_t count, std::uint32_t rows, std::uint32_t columns, unsigned seed) {
  IdxSplit split{count, rows, columns, {}, {}};
  for (std::uint32_t index = 0; index < count * rows * columns; ++index)
    split.pixels.push_back(static_cast<std::uint8_t>((index * 31 + seed * 17) % 256));
  for (std::uint32_t index = 0; index < count; ++index)
    split.labels.push_back(static_cast<std::uint8_t>((index + seed) % 10));
  return split;
}

// Writes the four standard files for `train` and `test` into `directory`.
void write_idx_directory(const std::filesystem::path& directory, const IdxSplit& train, const IdxSplit& test,
                         Compression compression) {
  const std::string suffix = compression == Compression::Gzip ? ".gz" : "";
  write_idx((directory / ("train-images-idx3-ubyte" + suffix)).string(), 2051,
            {train.count, train.rows, train.columns}, train.pixels, compression);
  write_idx((directory / ("train-labels-idx1-ubyte" + suffix)).string(), 2049, {train.count}, train.labels,
            compression);
  write_idx((directory / ("t10k-images-idx3-ubyte" + suffix)).string(), 2051,
            {test.count, test.rows, test.columns}, test.pixels, compression);
  write_idx((directory / ("t10k-labels-idx1-ubyte" + suffix)).string(), 2049, {test.count}, test.labels,
            compression);
}

void expect_split_matches(const Split& split, const IdxSplit& idx) {
  EXPECT_EQ(split.count, idx.count);
  EXPECT_EQ(split.height, static_cast<int>(idx.rows));
  EXPECT_EQ(split.width, static_cast<int>(idx.columns));
  EXPECT_EQ(split.channels, 1);
  EXPECT_EQ(split.images, idx.pixels);
  EXPECT_EQ(split.labels, std::vector<std::int32_t>(idx.labels.begin(), idx.labels.end()));
}

TEST(IdxImport, GzipRoundTrip) {
  ScratchDirectory scratch("idx-gzip");
  // Rows differ from columns so a swapped axis would show.
  const IdxSplit train = make_idx_split(50, 5, 4, 1), test = make_idx_split(20, 5, 4, 2);
  write_idx_directory(scratch.path(), train, test, Compression::Gzip);
  const std::string output = scratch.file("out/fmnist.h5");
  import_idx(scratch.path().string(), output, fashion_mnist_classes());

  const DatasetInfo info = read_dataset_info(output);
  EXPECT_EQ(info.classes, fashion_mnist_classes());
  ASSERT_EQ(info.splits.size(), 2u);
  EXPECT_EQ(info.splits[0].name, "train");
  EXPECT_EQ(info.splits[1].name, "test");
  expect_split_matches(read_split(output, "train"), train);
  expect_split_matches(read_split(output, "test"), test);
}

TEST(IdxImport, PlainFilesAndDefaultClasses) {
  ScratchDirectory scratch("idx-plain");
  const IdxSplit train = make_idx_split(30, 3, 3, 3), test = make_idx_split(10, 3, 3, 4);
  write_idx_directory(scratch.path(), train, test, Compression::None);
  const std::string output = scratch.file("digits.h5");
  import_idx(scratch.path().string(), output, {});
  EXPECT_EQ(read_dataset_info(output).classes, digit_classes());
  expect_split_matches(read_split(output, "train"), train);
  expect_split_matches(read_split(output, "test"), test);
}

TEST(IdxImport, ClassNames) {
  const std::vector<std::string> fashion = fashion_mnist_classes();
  ASSERT_EQ(fashion.size(), 10u);
  EXPECT_EQ(fashion.front(), "T-shirt/top");
  EXPECT_EQ(fashion[5], "Sandal");
  EXPECT_EQ(fashion.back(), "Ankle boot");
  const std::vector<std::string> digits = digit_classes();
  ASSERT_EQ(digits.size(), 10u);
  EXPECT_EQ(digits.front(), "0");
  EXPECT_EQ(digits.back(), "9");
}

TEST(IdxImport, BadMagicNamesTheFile) {
  ScratchDirectory scratch("idx-bad-magic");
  const IdxSplit train = make_idx_split(10, 2, 2, 1), test = make_idx_split(5, 2, 2, 2);
  write_idx_directory(scratch.path(), train, test, Compression::Gzip);
  const std::string images = scratch.file("train-images-idx3-ubyte.gz");
  write_idx(images, 2049, {10, 2, 2}, train.pixels, Compression::Gzip);
  const std::string output = scratch.file("out.h5");
  EXPECT_INPUT_ERROR(
      import_idx(scratch.path().string(), output, {}),
      images + ": magic number 2049 is not that of an IDX image file (expected 2051; this is a label file)");
  EXPECT_FALSE(std::filesystem::exists(output));

  const std::string labels = scratch.file("t10k-labels-idx1-ubyte.gz");
  write_idx(images, 2051, {10, 2, 2}, train.pixels, Compression::Gzip);
  write_idx(labels, 1234, {5}, test.labels, Compression::Gzip);
  EXPECT_INPUT_ERROR(import_idx(scratch.path().string(), output, {}),
                     labels + ": magic number 1234 is not that of an IDX label file (expected 2049)");
}

TEST(IdxImport, CountMismatchTruncationAndMissingFiles) {
  ScratchDirectory scratch("idx-mismatch");
  const IdxSplit train = make_idx_split(10, 2, 2, 1), test = make_idx_split(5, 2, 2, 2);
  write_idx_directory(scratch.path(), train, test, Compression::Gzip);
  const std::string directory = scratch.path().string(), output = scratch.file("out.h5");
  const std::string train_labels = scratch.file("train-labels-idx1-ubyte.gz");
  const std::string train_images = scratch.file("train-images-idx3-ubyte.gz");

  write_idx(train_labels, 2049, {9}, std::vector<std::uint8_t>(9, 1), Compression::Gzip);
  EXPECT_INPUT_ERROR(import_idx(directory, output, {}),
                     train_labels + ": has 9 labels but " + train_images + " has 10 images");

  write_idx(train_labels, 2049, {10}, std::vector<std::uint8_t>(7, 1), Compression::Gzip);
  EXPECT_INPUT_ERROR(import_idx(directory, output, {}),
                     train_labels + ": truncated: expected 10 bytes of labels, got 7");

  write_idx(train_labels, 2049, {10}, std::vector<std::uint8_t>(10, 10), Compression::Gzip);
  EXPECT_INPUT_ERROR(import_idx(directory, output, {}), train_labels + ": label[0] = 10 is outside [0, 10)");

  write_idx(train_labels, 2049, {10}, train.labels, Compression::Gzip);
  write_idx(train_images, 2051, {10, 2, 2}, std::vector<std::uint8_t>(41, 1), Compression::Gzip);
  EXPECT_INPUT_ERROR(import_idx(directory, output, {}),
                     train_images + ": has extra bytes after the 40 bytes");

  // A gzip file cut before its trailer (the payload whole, the CRC and length gone), and one whose
  // trailer's CRC does not match: zlib reads both without complaint unless asked.
  write_idx(train_images, 2051, {10, 2, 2}, train.pixels, Compression::Gzip);
  const std::string whole = phalanx::testing::file_bytes(train_labels);
  phalanx::testing::write_bytes(train_labels, whole.substr(0, whole.size() - 8));
  EXPECT_INPUT_ERROR(import_idx(directory, output, {}), train_labels + ": its gzip stream is cut short");
  std::string wrong_check = whole;
  wrong_check[wrong_check.size() - 8] = static_cast<char>(wrong_check[wrong_check.size() - 8] ^ 1);
  phalanx::testing::write_bytes(train_labels, wrong_check);
  EXPECT_INPUT_ERROR(import_idx(directory, output, {}), train_labels + ": read error (corrupt gzip data?)");
  phalanx::testing::write_bytes(train_labels, whole);

  std::filesystem::remove(train_images);
  EXPECT_INPUT_ERROR(import_idx(directory, output, {}),
                     directory + ": missing train-images-idx3-ubyte.gz (or train-images-idx3-ubyte)");
  EXPECT_INPUT_ERROR(import_idx(scratch.file("absent"), output, {}), "absent: no such directory");
  EXPECT_FALSE(std::filesystem::exists(output));
}

TEST(IdxImport, RealFashionMnist) {
  const std::string directory = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::is_directory(directory)) GTEST_SKIP() << directory << " is not on this machine";
  ScratchDirectory scratch("idx-fashion-mnist");
  const std::string output = scratch.file("fashion-mnist.h5");
  const auto start = std::chrono::steady_clock::now();
  import_idx(directory, output, fashion_mnist_classes());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("import of Fashion-MNIST (60000 + 10000 images) took %.3f s\n", seconds);
  RecordProperty("import_seconds", std::to_string(seconds));
  // A speed bound means nothing under AddressSanitizer (several times slower): checked without it.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LT(seconds, 5.0);
#endif

  const DatasetInfo info = read_dataset_info(output);
  EXPECT_EQ(info.classes, fashion_mnist_classes());
  ASSERT_NE(info.find_split("train"), nullptr);
  ASSERT_NE(info.find_split("test"), nullptr);
  EXPECT_EQ(info.find_split("train")->count, 60000);
  EXPECT_EQ(info.find_split("test")->count, 10000);
  EXPECT_EQ(info.find_split("train")->height, 28);
  EXPECT_EQ(info.find_split("train")->width, 28);
  EXPECT_EQ(info.find_split("train")->channels, 1);
  // The widely quoted Fashion-MNIST training statistics: mean 0.2860, std 0.3530.
  EXPECT_NEAR(info.mean[0], 0.2860, 5e-4);
  EXPECT_NEAR(info.standard_deviation[0], 0.3530, 5e-4);
  // Every class has 6000 training images.
  std::vector<int> histogram(10, 0);
  for (const std::int32_t label : read_labels(output, "train")) ++histogram[static_cast<std::size_t>(label)];
  EXPECT_EQ(histogram, std::vector<int>(10, 6000));
}

}  // namespace
}  // namespace phalanx::data
