// StreamingSource and the cache choice: batches streamed from a chunked (and compressed) file
// equal the same batches gathered from memory, each chunk is read about once per epoch, bad
// labels met while streaming are input errors naming the sample, and auto picks the mode by size.
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/core/allocator.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "phalanx/data/importers.hpp"
#include "phalanx/data/loader.hpp"
#include "phalanx/data/split_reader.hpp"
#include "streaming_source.hpp"
#include "phalanx/data/training_source.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using testing::make_split;
using testing::ScratchDirectory;

TEST(StreamingSource, BatchesEqualTheSameOrderGatheredFromMemory) {
  ScratchDirectory scratch("streaming_source_equal");
  const auto train = std::make_shared<const Split>(make_split("train", 403, 6, 5, 3, 10, 4));
  const Split test = make_split("test", 20, 6, 5, 3, 10, 5);
  const std::string path = scratch.file("data.h5");
  write_dataset(path, digit_classes(), {train.get(), &test}, {.chunk_samples = 16, .gzip_level = 1});

  for (const bool augment : {false, true}) {
    auto streaming = std::make_shared<StreamingSource>(std::make_unique<SplitReader>(path, "train"),
                                                       16 * 6 * 5 * 3 * 3);  // 3 chunks per window
    EXPECT_EQ(streaming->chunk_samples(), 16);
    EXPECT_EQ(streaming->window_samples(), 48);
    const ShardPlan plan(train->count, 7, 1, 3, 11, streaming->order());
    const AugmentOptions options = augment ? AugmentOptions{2, true, 2, {}, {}, {}} : AugmentOptions{};
    Loader from_file(streaming, plan, 2, 0, 0, 2, HostAllocator::instance(), options);
    Loader from_memory(train, plan, 2, 0, 0, 2, HostAllocator::instance(), options);
    std::int64_t batches = 0;
    while (const Batch* expected = from_memory.next()) {
      const Batch* streamed = from_file.next();
      ASSERT_NE(streamed, nullptr);
      ASSERT_EQ(streamed->size, expected->size);
      EXPECT_TRUE(std::equal(expected->images, expected->images + expected->size * 90, streamed->images))
          << "batch " << batches;
      EXPECT_TRUE(std::equal(expected->labels, expected->labels + expected->size, streamed->labels));
      ++batches;
    }
    EXPECT_EQ(from_file.next(), nullptr);
    EXPECT_EQ(batches, 2 * plan.steps_per_epoch());
    // Rank 1 of 3 trains on a third of the file per epoch: about 403 / 3 / 16 = 8.4 chunks, plus
    // the two it shares at the ends of its part; never the whole file's 26 chunks each epoch.
    EXPECT_LE(streaming->chunks_read(), 2 * 11);
    EXPECT_GE(streaming->chunks_read(), 2 * 8);
  }
}

TEST(StreamingSource, ALabelOutOfRangeIsAnInputErrorNamingTheSample) {
  ScratchDirectory scratch("streaming_source_label");
  Split train = make_split("train", 64, 4, 4, 1, 10, 1);
  const Split test = make_split("test", 8, 4, 4, 1, 10, 2);
  const std::string path = scratch.file("data.h5");
  write_dataset(path, digit_classes(), {&train, &test}, {.chunk_samples = 8});
  // Rewrite one label beyond the class count through the reader's own path: a file written by
  // another tool could hold it. write_dataset refuses such labels, so patch the file directly.
  {
    const auto hdf5_lock = lock_hdf5();
    detail::Hdf5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    detail::Hdf5Handle labels = detail::dataset_handle(H5Dopen2(file.get(), "/train/labels", H5P_DEFAULT));
    std::vector<std::int32_t> values(64);
    ASSERT_GE(H5Dread(labels.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    values[37] = 12;
    ASSERT_GE(H5Dwrite(labels.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  }
  StreamingSource source(std::make_unique<SplitReader>(path, "train"), 1);
  std::vector<std::uint8_t> images(16);
  std::int32_t label = 0;
  const std::int64_t fine = 3, bad = 37;
  source.gather(&fine, 1, images.data(), &label);
  EXPECT_INPUT_ERROR(source.gather(&bad, 1, images.data(), &label),
                     "/train/labels[37] = 12 is outside [0, 10)");
}

TEST(CacheChoice, AutoPicksRankThenNodeThenNoneBySize) {
  const std::int64_t megabyte = 1000000;
  EXPECT_EQ(choose_cache(config::DataCache::Auto, 100 * megabyte, 4, 1000 * megabyte).mode, CacheMode::Rank);
  EXPECT_EQ(choose_cache(config::DataCache::Auto, 300 * megabyte, 4, 1000 * megabyte).mode, CacheMode::Node);
  EXPECT_EQ(choose_cache(config::DataCache::Auto, 1001 * megabyte, 1, 1000 * megabyte).mode, CacheMode::None);
  const CacheChoice forced = choose_cache(config::DataCache::Rank, 5000 * megabyte, 8, 1000 * megabyte);
  EXPECT_EQ(forced.mode, CacheMode::Rank);
  EXPECT_NE(forced.reason.find("as configured"), std::string::npos) << forced.reason;
  EXPECT_NE(choose_cache(config::DataCache::Auto, 300 * megabyte, 4, 1000 * megabyte).reason.find("auto chose node"),
            std::string::npos);
  EXPECT_EQ(cache_budget_bytes(2.5), 2500 * megabyte);
  EXPECT_GT(cache_budget_bytes(0), 0);
}

}  // namespace
}  // namespace phalanx::data

namespace phalanx::data {
namespace {

// A dataset truncated under a running job (a copy still being written, a shared file system
// rewriting it) reads as zeros from HDF5 without an error; the reader notices that the open file
// shrank and stops with an input error naming the file, the dataset and the samples. A file
// deleted while open still reads whole through its descriptor, so that goes on.
TEST(SplitReader, FileTruncatedWhileOpenIsAnInputErrorNamingTheSamples) {
  ScratchDirectory scratch("split_reader_truncated");
  const Split train = make_split("train", 64, 4, 4, 1, 10, 2);
  const Split test = make_split("test", 8, 4, 4, 1, 10, 3);
  const std::string path = scratch.file("data.h5");
  write_dataset(path, digit_classes(), {&train, &test}, {.chunk_samples = 8});
  std::vector<std::uint8_t> images(8 * 16);
  std::vector<std::int32_t> labels(8);
  {
    SplitReader reader(path, "train");
    reader.read(0, 8, images.data(), labels.data());
    std::filesystem::remove(path);  // deleted, still open: reads on
    reader.read(56, 64, images.data(), labels.data());
    EXPECT_EQ(std::vector<std::uint8_t>(images.begin(), images.end()),
              std::vector<std::uint8_t>(train.images.end() - 8 * 16, train.images.end()));
  }
  write_dataset(path, digit_classes(), {&train, &test}, {.chunk_samples = 8});
  SplitReader reader(path, "train");
  reader.read(0, 8, images.data(), labels.data());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  const std::string message =
      testing::input_error_message([&] { reader.read(56, 64, images.data(), labels.data()); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("/train/images[56:64]"), std::string::npos) << message;
  EXPECT_NE(message.find("shrank"), std::string::npos) << message;
}

// A chunk damaged on disk after the import fails its Fletcher-32 checksum: the read stops with an
// input error naming the file, the dataset and that chunk's samples, not the whole range read.
TEST(SplitReader, DamagedChunkIsAnInputErrorNamingItsSamples) {
  ScratchDirectory scratch("split_reader_damaged_chunk");
  const Split train = make_split("train", 64, 4, 4, 1, 10, 2);
  const Split test = make_split("test", 8, 4, 4, 1, 10, 3);
  const std::string path = scratch.file("data.h5");
  write_dataset(path, digit_classes(), {&train, &test}, {.chunk_samples = 8});
  haddr_t chunk_offset = 0;
  hsize_t chunk_bytes = 0;
  {
    const auto hdf5_lock = lock_hdf5();
    detail::Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    detail::Hdf5Handle images(H5Dopen2(file.get(), "/train/images", H5P_DEFAULT), H5Dclose);
    const hsize_t fourth_chunk[4] = {24, 0, 0, 0};
    ASSERT_GE(H5Dget_chunk_info_by_coord(images.get(), fourth_chunk, nullptr, &chunk_offset, &chunk_bytes),
              0);
  }
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(chunk_offset + chunk_bytes / 2));
    char byte = 0;
    file.get(byte);
    file.seekp(static_cast<std::streamoff>(chunk_offset + chunk_bytes / 2));
    file.put(static_cast<char>(byte ^ 0x5a));
  }
  std::vector<std::uint8_t> images(24 * 16);
  std::vector<std::int32_t> labels(24);
  SplitReader reader(path, "train");
  reader.read(0, 16, images.data(), labels.data());  // the chunks before it read as written
  EXPECT_EQ(std::vector<std::uint8_t>(images.begin(), images.begin() + 16 * 16),
            std::vector<std::uint8_t>(train.images.begin(), train.images.begin() + 16 * 16));
  const std::string message =
      testing::input_error_message([&] { reader.read(16, 40, images.data(), labels.data()); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("/train/images[24:32]"), std::string::npos) << message;
  EXPECT_NE(message.find("the chunk fails its Fletcher-32 checksum"), std::string::npos) << message;
  EXPECT_NE(message.find("/train/images[16:40]"), std::string::npos) << message;
}

}  // namespace
}  // namespace phalanx::data
