// Tests of mapped sources (data.source): the layout and label rules, stratified carving, and
// reading files written here in other layouts (NCHW float, one-hot, [N,1,1,1] labels, carved
// splits), which must give exactly the bytes and labels of the same data in the phalanx schema.
// Every bad input is an input error naming the file, the dataset and the config key.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/data_source.hpp"
#include "hdf5_tree.hpp"
#include "mapped_source.hpp"
#include "mapped_source_cache.hpp"
#include "mapped_split_reader.hpp"
#include "source_layout.hpp"
#include "split_carving.hpp"
#include "streaming_source.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using testing::ScratchDirectory;

TEST(SourceLayout, TellsLayoutsFromShapesAndRefusesAmbiguity) {
  EXPECT_EQ(image_shape({10, 28, 28}, config::SourceLayout::Auto).layout, ImageLayout::Nhw);
  const ImageShape nhwc = image_shape({10, 32, 30, 3}, config::SourceLayout::Auto);
  EXPECT_TRUE(nhwc.error.empty());
  EXPECT_EQ(nhwc.layout, ImageLayout::Nhwc);
  EXPECT_EQ(nhwc.height, 32);
  EXPECT_EQ(nhwc.width, 30);
  EXPECT_EQ(nhwc.channels, 3);
  const ImageShape nchw = image_shape({10, 1, 28, 27}, config::SourceLayout::Auto);
  EXPECT_EQ(nchw.layout, ImageLayout::Nchw);
  EXPECT_EQ(nchw.channels, 1);
  EXPECT_EQ(nchw.width, 27);
  EXPECT_NE(image_shape({10, 3, 8, 3}, config::SourceLayout::Auto).error.find("ambiguous"), std::string::npos);
  EXPECT_NE(image_shape({10, 28, 28, 28}, config::SourceLayout::Auto).error.find("ambiguous"), std::string::npos);
  EXPECT_TRUE(image_shape({10, 3, 8, 3}, config::SourceLayout::Nchw).error.empty());
  EXPECT_NE(image_shape({10, 784}, config::SourceLayout::Auto).error.find("cannot be images"), std::string::npos);
  EXPECT_NE(image_shape({10, 28, 28}, config::SourceLayout::Nhwc).error.find("[N,H,W]"), std::string::npos);
  EXPECT_NE(image_shape({0, 28, 28}, config::SourceLayout::Auto).error.find("no samples"), std::string::npos);
  // A shape of more values per image than phalanx allocates for one (a damaged file's, found by
  // the mapped_source fuzzer: 39 GB for one row) is refused; the largest allowed is not.
  EXPECT_NE(image_shape({10, 16384, 16385}, config::SourceLayout::Auto).error.find("values per sample, over the 268435456"),
            std::string::npos);
  EXPECT_TRUE(image_shape({10, 16384, 16384}, config::SourceLayout::Auto).error.empty());
}

TEST(SourceLayout, TellsLabelEncodings) {
  EXPECT_EQ(label_shape({10}, config::LabelEncoding::Auto).encoding, LabelEncoding::Index);
  EXPECT_EQ(label_shape({10, 1, 1, 1}, config::LabelEncoding::Auto).encoding, LabelEncoding::Index);
  const LabelShape one_hot = label_shape({10, 1, 5}, config::LabelEncoding::Auto);
  EXPECT_EQ(one_hot.encoding, LabelEncoding::OneHot);
  EXPECT_EQ(one_hot.classes, 5);
  EXPECT_NE(label_shape({10, 5}, config::LabelEncoding::Index).error.find("one-hot"), std::string::npos);
  EXPECT_NE(label_shape({10}, config::LabelEncoding::OneHot).error.find("not a one-hot"), std::string::npos);
  // A row is read whole: 2^31 values a row asked for 16 GB before the class count was checked.
  EXPECT_TRUE(label_shape({2, 1000000}, config::LabelEncoding::Auto).error.empty());
  EXPECT_NE(label_shape({2, std::uint64_t{1} << 31}, config::LabelEncoding::Auto)
                .error.find("one-hot rows of 2147483648 values, more than the 1000000 classes"),
            std::string::npos);
  EXPECT_NE(label_shape({10, 5, 5}, config::LabelEncoding::Auto).error.find("cannot be labels"), std::string::npos);
}

TEST(SplitCarving, IsStratifiedSeededAndDisjoint) {
  std::vector<std::int32_t> labels;
  for (int label = 0; label < 4; ++label) labels.insert(labels.end(), 100, label);  // sorted by class
  const CarvedRows first = carve_stratified(labels, 0.1, 0.2, 7);
  const CarvedRows again = carve_stratified(labels, 0.1, 0.2, 7);
  const CarvedRows other = carve_stratified(labels, 0.1, 0.2, 8);
  EXPECT_EQ(first.train, again.train);
  EXPECT_EQ(first.test, again.test);
  EXPECT_NE(first.test, other.test);
  EXPECT_EQ(first.train.size(), 280u);
  EXPECT_EQ(first.val.size(), 40u);
  EXPECT_EQ(first.test.size(), 80u);
  std::map<std::int32_t, int> test_per_class;
  for (const auto row : first.test) ++test_per_class[labels[static_cast<std::size_t>(row)]];
  for (int label = 0; label < 4; ++label) EXPECT_EQ(test_per_class[label], 20);
  std::vector<std::int64_t> all = first.train;
  all.insert(all.end(), first.val.begin(), first.val.end());
  all.insert(all.end(), first.test.begin(), first.test.end());
  std::sort(all.begin(), all.end());
  for (std::size_t index = 0; index < all.size(); ++index)
    EXPECT_EQ(all[index], static_cast<std::int64_t>(index));
  EXPECT_TRUE(std::is_sorted(first.test.begin(), first.test.end()));
}

// Writes one dataset of `type` (a native HDF5 type), optionally chunked along N.
template <typename Value>
void write_array(const std::string& path, const std::string& name, hid_t type,
                 const std::vector<hsize_t>& shape, const std::vector<Value>& values,
                 hsize_t chunk_rows = 0) {
  const hid_t file = std::filesystem::exists(path)
                         ? H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                         : H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t space = H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr);
  const hid_t creation = H5Pcreate(H5P_DATASET_CREATE);
  if (chunk_rows) {
    std::vector<hsize_t> chunk = shape;
    chunk[0] = chunk_rows;
    H5Pset_chunk(creation, static_cast<int>(chunk.size()), chunk.data());
  }
  const hid_t dataset = H5Dcreate2(file, name.c_str(), type, space, H5P_DEFAULT, creation, H5P_DEFAULT);
  ASSERT_GE(dataset, 0);
  ASSERT_GE(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(dataset);
  H5Pclose(creation);
  H5Sclose(space);
  H5Fclose(file);
}

config::DatasetLocation at(const std::string& file, const std::string& dataset) {
  return {file, dataset};
}

class MappedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    train_ = testing::make_split("train", 60, 4, 5, 3, 3, 1);
    test_ = testing::make_split("test", 20, 4, 5, 3, 3, 2);
  }

  // NCHW float32 in [0, 1] with one-hot float labels, chunked 16 samples at a time.
  void write_nchw_one_hot(const std::string& path, const Split& split, const std::string& prefix) {
    std::vector<float> planar(split.images.size()), one_hot(static_cast<std::size_t>(split.count) * 3, 0.0f);
    const std::size_t plane = static_cast<std::size_t>(split.height) * split.width;
    for (std::int64_t sample = 0; sample < split.count; ++sample) {
      for (std::size_t pixel = 0; pixel < plane; ++pixel)
        for (int channel = 0; channel < split.channels; ++channel)
          planar[sample * plane * 3 + channel * plane + pixel] =
              static_cast<float>(split.images[(sample * plane + pixel) * 3 + channel]) / 255.0f;
      one_hot[static_cast<std::size_t>(sample) * 3 + split.labels[sample]] = 1.0f;
    }
    const hsize_t count = static_cast<hsize_t>(split.count);
    write_array(path, prefix + "_x", H5T_NATIVE_FLOAT, {count, 3, 4, 5}, planar, 16);
    write_array(path, prefix + "_y", H5T_NATIVE_FLOAT, {count, 3}, one_hot);
  }

  config::SourceConfig source_of(const std::string& path) {
    config::SourceConfig source;
    source.train = {at(path, "/train_x"), at(path, "/train_y")};
    source.test = {at(path, "/test_x"), at(path, "/test_y")};
    return source;
  }

  // A small file chunked 16 samples at a time: nothing to warn about.
  config::SourceConfig source_of_native_chunks() {
    const std::string path = scratch_.file("small_chunks.h5");
    if (!std::filesystem::exists(path)) {
      write_nchw_one_hot(path, train_, "train");
      write_nchw_one_hot(path, test_, "test");
    }
    return source_of(path);
  }

  ScratchDirectory scratch_{"mapped-source"};
  Split train_, test_;
};

TEST_F(MappedFiles, NchwFloatOneHotReadsAsTheNativeBytes) {
  const std::string path = scratch_.file("all.h5");
  write_nchw_one_hot(path, train_, "train");
  write_nchw_one_hot(path, test_, "test");
  const auto source = std::make_shared<const MappedSource>(source_of(path));
  EXPECT_EQ(source->info().classes, (std::vector<std::string>{"class_0", "class_1", "class_2"}));
  EXPECT_NE(source->description().find("as nchw"), std::string::npos) << source->description();
  EXPECT_NE(source->description().find("scaled by 255"), std::string::npos) << source->description();
  for (const Split* expected : {&train_, &test_}) {
    const MappedSplitReader reader(source, expected->name);
    EXPECT_EQ(reader.chunk_samples(), 16);
    std::vector<std::uint8_t> images(expected->images.size());
    std::vector<std::int32_t> labels(static_cast<std::size_t>(expected->count));
    // In two uneven reads, to cross a chunk boundary.
    reader.read(0, 7, images.data(), labels.data());
    reader.read(7, expected->count, images.data() + 7 * expected->image_bytes(), labels.data() + 7);
    EXPECT_EQ(images, expected->images);
    EXPECT_EQ(labels, expected->labels);
  }
}

TEST_F(MappedFiles, CarvedTestSplitReadsTheCarvedRows) {
  const std::string path = scratch_.file("train_only.h5");
  write_nchw_one_hot(path, train_, "train");
  config::SourceConfig source = source_of(path);
  source.test = {};
  source.test_fraction = 0.2;
  source.split_seed = 3;
  const auto mapped = std::make_shared<const MappedSource>(source);
  const CarvedRows rows = carve_stratified(train_.labels, 0.0, 0.2, 3);
  ASSERT_EQ(mapped->info().find_split("test")->count, static_cast<std::int64_t>(rows.test.size()));
  const MappedSplitReader reader(mapped, "test");
  std::vector<std::uint8_t> images(rows.test.size() * static_cast<std::size_t>(train_.image_bytes()));
  std::vector<std::int32_t> labels(rows.test.size());
  reader.read(0, static_cast<std::int64_t>(rows.test.size()), images.data(), labels.data());
  for (std::size_t index = 0; index < rows.test.size(); ++index) {
    const auto row = static_cast<std::size_t>(rows.test[index]);
    EXPECT_EQ(labels[index], train_.labels[row]);
    const auto bytes = static_cast<std::size_t>(train_.image_bytes());
    EXPECT_TRUE(std::equal(images.begin() + index * bytes, images.begin() + (index + 1) * bytes,
                           train_.images.begin() + row * bytes));
  }
}

TEST_F(MappedFiles, StreamsThroughTheSameInterface) {
  const std::string path = scratch_.file("stream.h5");
  write_nchw_one_hot(path, train_, "train");
  write_nchw_one_hot(path, test_, "test");
  config::DataConfig data;
  data.source = source_of(path);
  StreamingSource streaming(open_split_reader(data, "train"), 1);
  std::vector<std::int64_t> indices = {59, 0, 17, 16, 33};
  std::vector<std::uint8_t> images(indices.size() * static_cast<std::size_t>(train_.image_bytes()));
  std::vector<std::int32_t> labels(indices.size());
  streaming.gather(indices.data(), indices.size(), images.data(), labels.data());
  for (std::size_t index = 0; index < indices.size(); ++index)
    EXPECT_EQ(labels[index], train_.labels[static_cast<std::size_t>(indices[index])]);
}

TEST_F(MappedFiles, BadInputsNameFileDatasetAndKey) {
  const std::string path = scratch_.file("bad.h5");
  write_nchw_one_hot(path, train_, "train");
  write_nchw_one_hot(path, test_, "test");
  const auto count = static_cast<hsize_t>(train_.count);
  write_array(path, "/short_y", H5T_NATIVE_INT32, {count - 1}, std::vector<std::int32_t>(count - 1, 0));
  std::vector<std::int32_t> index_labels(train_.labels);
  index_labels[5] = 7;
  write_array(path, "/big_y", H5T_NATIVE_INT32, {count}, index_labels);
  std::vector<float> two_hot(count * 3, 0.0f);
  for (hsize_t row = 0; row < count; ++row) two_hot[row * 3] = 1.0f;
  two_hot[4 * 3 + 1] = 1.0f;
  write_array(path, "/two_hot_y", H5T_NATIVE_FLOAT, {count, 3}, two_hot);
  write_array(path, "/ambiguous_x", H5T_NATIVE_UINT8, {count, 3, 4, 3},
              std::vector<std::uint8_t>(count * 36, 1));
  write_array(path, "/small_x", H5T_NATIVE_UINT8, {20, 2, 2, 3}, std::vector<std::uint8_t>(20 * 12, 1));
  write_array(path, "/int_x", H5T_NATIVE_INT32, {count, 4, 5, 3}, std::vector<std::int32_t>(count * 60, 1));
  std::vector<float> hot_pixels(count * 60, 0.5f);
  hot_pixels[0] = 300.0f;
  write_array(path, "/hot_x", H5T_NATIVE_FLOAT, {count, 4, 5, 3}, hot_pixels);

  const auto fails = [&](const std::function<void(config::SourceConfig&)>& change,
                         const std::vector<std::string>& fragments) {
    config::SourceConfig source = source_of(path);
    change(source);
    const std::string message = testing::input_error_message([&] { MappedSource mapped(source); });
    for (const auto& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << message << "\nexpected: " << fragment;
  };
  fails([&](auto& source) { source.train.images.file = scratch_.file("absent.h5"); },
        {"absent.h5", "data.source.train.images", "no such file"});
  fails([&](auto& source) { source.train.images.dataset = "/nothing"; },
        {path + ":/nothing", "data.source.train.images", "no such dataset", "/train_x"});
  fails([&](auto& source) { source.train.labels.dataset = "/short_y"; },
        {path + ":/short_y", "data.source.train.labels", "59 labels", "60 images"});
  fails(
      [&](auto& source) {
        source.train.labels.dataset = "/big_y";
        source.classes = {"a", "b", "c"};
      },
      {path + ":/big_y", "data.source.train.labels", "label 5 = 7 is outside [0, 3)"});
  fails([&](auto& source) { source.train.labels.dataset = "/two_hot_y"; },
        {path + ":/two_hot_y", "data.source.train.labels", "row 4 is not one-hot"});
  fails([&](auto& source) { source.train.images.dataset = "/ambiguous_x"; },
        {path + ":/ambiguous_x", "data.source.train.images", "ambiguous", "data.source.layout"});
  fails([&](auto& source) { source.train.images.dataset = "/int_x"; },
        {path + ":/int_x", "data.source.train.images", "int32 cannot be images"});
  fails(
      [&](auto& source) {
        source.train.images.dataset = "/hot_x";
        source.layout = config::SourceLayout::Nhwc;  // [N,4,5,3]: axis 1 could be channels too
      },
      {path + ":/hot_x", "data.source.train.images", "300", "outside both [0, 1] and [0, 255]"});
  fails([&](auto& source) { source.test.images.dataset = "/small_x"; },
        {path + ":/small_x", "data.source.test.images", "images of 2x2x3 (HxWxC)"});
  fails([&](auto& source) { source.classes_dataset = at(path, "/train_y"); },
        {path + ":/train_y", "data.source.classes", "expected strings"});
  // Class names go out in reports and predictions, which are UTF-8: Latin-1 bytes are refused here.
  const hid_t name_type = H5Tcopy(H5T_C_S1);
  H5Tset_size(name_type, 4);
  write_array(path, "/latin1_names", name_type, {3},
              std::vector<char>{'o', 'k', 0, 0, 't', '\xE9', 0, 0, 'z', 0, 0, 0});
  H5Tclose(name_type);
  fails([&](auto& source) { source.classes_dataset = at(path, "/latin1_names"); },
        {path + ":/latin1_names", "data.source.classes", "class name 1 is not UTF-8 text (byte 1)"});

  // [0, 255] on the sample of 64 spread rows, but a value beyond it in a row the sample skipped:
  // named when that row is read.
  const std::string large = scratch_.file("large.h5");
  std::vector<float> many(200 * 60, 100.0f);
  many[60 * 5 + 1] = 999.0f;  // row 5 is not among the 64 spread rows of 200
  write_array(large, "/x", H5T_NATIVE_FLOAT, {200, 4, 5, 3}, many);
  write_array(large, "/y", H5T_NATIVE_INT32, {200}, std::vector<std::int32_t>(200, 1));
  config::SourceConfig large_source;
  large_source.train = {at(large, "/x"), at(large, "/y")};
  large_source.test = large_source.train;
  large_source.layout = config::SourceLayout::Nhwc;
  const auto mapped = std::make_shared<const MappedSource>(large_source);
  const MappedSplitReader reader(mapped, "train");
  std::vector<std::uint8_t> images(200 * 60);
  std::vector<std::int32_t> labels(200);
  EXPECT_INPUT_ERROR(reader.read(0, 200, images.data(), labels.data()),
                     large + ":/x (data.source.train.images): sample 5 has the value 999");
}

// Labels are read in blocks of about a million values (a one-hot file of 600 classes: 1,747 rows at
// a time), decoded as they come; the first wrong row in row order is named, whether it was wrong
// as read (not one-hot, not whole) or only against the class count.
TEST_F(MappedFiles, LabelsAreReadInBlocksAndTheFirstWrongRowIsNamed) {
  const std::string path = scratch_.file("blocks.h5");
  constexpr hsize_t rows = 4000, classes = 600;
  write_array(path, "/x", H5T_NATIVE_UINT8, {rows, 2, 2, 1}, std::vector<std::uint8_t>(rows * 4, 7));
  std::vector<std::uint8_t> one_hot(rows * classes, 0);
  for (hsize_t row = 0; row < rows; ++row) one_hot[row * classes + (row * 7) % classes] = 1;
  write_array(path, "/one_hot", H5T_NATIVE_UINT8, {rows, classes}, one_hot, 1000);  // chunks of 1000 rows
  config::SourceConfig source;
  source.train = {at(path, "/x"), at(path, "/one_hot")};
  source.layout = config::SourceLayout::Nhwc;
  {
    const auto mapped = std::make_shared<const MappedSource>(source);
    ASSERT_EQ(mapped->info().classes.size(), classes);
    // The reader reads the labels from the file with the images, a one-hot row as its 1's index,
    // in blocks of 1,747 rows of its own.
    const MappedSplitReader reader(mapped, "train");
    std::vector<std::uint8_t> images(rows * 4);
    std::vector<std::int32_t> labels(rows, -1);
    reader.read(0, rows, images.data(), labels.data());
    for (hsize_t row = 0; row < rows; ++row)
      ASSERT_EQ(labels[row], static_cast<std::int32_t>((row * 7) % classes)) << "row " << row;
    std::vector<std::int32_t> some(3, -1);
    reader.read(1746, 1749, images.data(), some.data());
    EXPECT_EQ(some, (std::vector<std::int32_t>{(1746 * 7) % 600, (1747 * 7) % 600, (1748 * 7) % 600}));
  }
  one_hot[3600 * classes + 1] = 1;  // row 3600, in the third block, has two ones
  write_array(path, "/two_hot", H5T_NATIVE_UINT8, {rows, classes}, one_hot);
  source.train.labels = at(path, "/two_hot");
  EXPECT_INPUT_ERROR(MappedSource{source}, "row 3600 is not one-hot");
  // Named classes of another count: the rows' width is refused before any row.
  source.classes.assign(3, "c");
  EXPECT_INPUT_ERROR(MappedSource{source}, "one-hot rows of 600 values, but there are 3 classes");

  // Index labels: row 10 is outside the 3 named classes, row 20 is not whole, row 30 negative.
  std::vector<double> index(rows, 1.0);
  index[10] = 5;
  index[20] = 2.5;
  index[30] = -4;
  write_array(path, "/index", H5T_NATIVE_DOUBLE, {rows}, index);
  source.train.labels = at(path, "/index");
  EXPECT_INPUT_ERROR(MappedSource{source}, "label 10 = 5 is outside [0, 3) (3 classes)");
  index[10] = 1;
  write_array(path, "/index_20", H5T_NATIVE_DOUBLE, {rows}, index);
  source.train.labels = at(path, "/index_20");
  EXPECT_INPUT_ERROR(MappedSource{source}, "label 20 = 2.5 is not a whole number");
  index[20] = 1;
  write_array(path, "/index_30", H5T_NATIVE_DOUBLE, {rows}, index);
  source.train.labels = at(path, "/index_30");
  EXPECT_INPUT_ERROR(MappedSource{source}, "label 30 = -4 is outside [0, 3) (3 classes)");

  // Classes numbered by phalanx: a clean train split, and a wrong row in the test split named
  // after every label was read.
  index[30] = 1;
  write_array(path, "/clean", H5T_NATIVE_DOUBLE, {rows}, index);
  index[3999] = 0.5;
  write_array(path, "/late", H5T_NATIVE_DOUBLE, {rows}, index);
  source.classes.clear();
  source.train.labels = at(path, "/clean");
  source.test = {at(path, "/x"), at(path, "/late")};
  EXPECT_INPUT_ERROR(MappedSource{source},
                     path + ":/late (data.source.test.labels): label 3999 = 0.5 is not a whole number");
}

// Labels are read with the images during training, and checked again as read: a label file
// rewritten after the source was opened is refused, not passed on out of range.
TEST_F(MappedFiles, ALabelRewrittenAfterOpeningIsRefusedWhenRead) {
  const std::string path = scratch_.file("rewritten.h5");
  constexpr hsize_t rows = 100;
  write_array(path, "/x", H5T_NATIVE_UINT8, {rows, 2, 2, 1}, std::vector<std::uint8_t>(rows * 4, 7));
  std::vector<std::int32_t> labels(rows, 1);
  labels[0] = 2;
  write_array(path, "/y", H5T_NATIVE_INT32, {rows}, labels);
  config::SourceConfig source;
  source.train = {at(path, "/x"), at(path, "/y")};
  source.layout = config::SourceLayout::Nhwc;
  const auto mapped = std::make_shared<const MappedSource>(source);
  ASSERT_EQ(mapped->info().classes.size(), 3u);
  std::vector<std::uint8_t> images(rows * 4);
  std::vector<std::int32_t> read(rows);
  {
    const MappedSplitReader reader(mapped, "train");
    reader.read(0, rows, images.data(), read.data());
    EXPECT_EQ(read, labels);
  }
  // The same dataset, its row 57 now 9 (HDF5 opens a file for writing only once no handle of
  // this process holds it).
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t dataset = H5Dopen2(file, "/y", H5P_DEFAULT);
  labels[57] = 9;
  ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()), 0);
  H5Dclose(dataset);
  H5Fclose(file);
  const MappedSplitReader later(mapped, "train");
  EXPECT_INPUT_ERROR(later.read(50, 60, images.data(), read.data()),
                     "row 57 no longer holds a label of the 3 classes");
}

TEST_F(MappedFiles, WarnsWhenOneChunkHoldsFarMoreThanABatchNeeds) {
  // 1100 samples of 256x256 in one gzip chunk: any read decodes 72 MB. Zeros, so the file stays
  // small: validation reads only the labels and the storage layout of the images.
  const std::string path = scratch_.file("one_chunk.h5");
  const hsize_t shape[3] = {1100, 256, 256};
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(3, shape, nullptr);
  const hid_t creation = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(creation, 3, shape);
  H5Pset_deflate(creation, 4);
  const hid_t dataset = H5Dcreate2(file, "/x", H5T_NATIVE_UINT8, space, H5P_DEFAULT, creation, H5P_DEFAULT);
  // Written: a dataset whose chunks were never stored is refused (data.source reads no zeros).
  const std::vector<std::uint8_t> zeros(1100 * 256 * 256, 0);
  ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()), 0);
  H5Dclose(dataset);
  H5Pclose(creation);
  H5Sclose(space);
  H5Fclose(file);
  write_array(path, "/y", H5T_NATIVE_INT32, {1100}, std::vector<std::int32_t>(1100, 0));
  config::SourceConfig source;
  source.train = {at(path, "/x"), at(path, "/y")};
  source.test = source.train;
  const MappedSource mapped(source);
  ASSERT_EQ(mapped.warnings().size(), 2u);  // train and test name the same dataset
  EXPECT_NE(mapped.warnings()[0].find(path + ":/x (data.source.train.images): stored in chunks of 1100 samples "
                                             "(gzip 4): reading any sample reads 68 MiB"),
            std::string::npos)
      << mapped.warnings()[0];
  EXPECT_TRUE(MappedSource(source_of_native_chunks()).warnings().empty());
}

TEST_F(MappedFiles, InspectPrintsTheTreeAndABlockToPaste) {
  const std::string path = scratch_.file("inspect.h5");
  write_nchw_one_hot(path, train_, "train");
  write_nchw_one_hot(path, test_, "test");
  const std::string tree = describe_hdf5_tree(path);
  EXPECT_NE(tree.find("/train_x"), std::string::npos) << tree;
  EXPECT_NE(tree.find("float32"), std::string::npos) << tree;
  EXPECT_NE(tree.find("[60,3,4,5]"), std::string::npos) << tree;
  EXPECT_NE(tree.find("chunks [16,3,4,5]"), std::string::npos) << tree;
  const std::string block = suggest_source_block({path});
  EXPECT_NE(block.find("train: {images: " + path + ":/train_x, labels: " + path + ":/train_y}"),
            std::string::npos)
      << block;
  EXPECT_NE(block.find("test: {images: " + path + ":/test_x, labels: " + path + ":/test_y}"),
            std::string::npos)
      << block;
  EXPECT_NE(block.find("layout: nchw"), std::string::npos) << block;
  EXPECT_NE(block.find("labels: one_hot"), std::string::npos) << block;
  EXPECT_FALSE(is_phalanx_dataset(path));
}

TEST_F(MappedFiles, OneValidationPerSourceUntilAFileChanges) {
  const std::string path = scratch_.file("cached.h5");
  write_nchw_one_hot(path, train_, "train");
  write_nchw_one_hot(path, test_, "test");
  const config::SourceConfig source = source_of(path);
  const int before = mapped_source_validations();
  const auto first = open_mapped_source(source);
  config::DataConfig data;
  data.source = source;
  // What a run does at start: the info, the training reader, the evaluation reader.
  EXPECT_EQ(read_source_info(data).splits.size(), 2u);
  const auto training = open_split_reader(data, "train");
  const auto evaluation = open_split_reader(data, "test");
  EXPECT_EQ(open_mapped_source(source), first);
  EXPECT_EQ(mapped_source_validations(), before + 1);
  // Another mapping of the same files is another source.
  config::SourceConfig carved = source;
  carved.val_fraction = 0.25;
  EXPECT_NE(open_mapped_source(carved), first);
  EXPECT_EQ(mapped_source_validations(), before + 2);
  // A file that changed (here only its modification time) is validated again.
  std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(2));
  const auto changed = open_mapped_source(source);
  EXPECT_NE(changed, first);
  EXPECT_EQ(mapped_source_validations(), before + 3);
  EXPECT_EQ(open_mapped_source(source), changed);
  // A failure is not cached: the error comes back on every open.
  config::SourceConfig missing = source;
  missing.test.labels.dataset = "/absent";
  EXPECT_INPUT_ERROR(open_mapped_source(missing), "/absent");
  EXPECT_INPUT_ERROR(open_mapped_source(missing), "/absent");
  EXPECT_EQ(mapped_source_validations(), before + 3);
}

TEST_F(MappedFiles, InspectPairsImagesAndLabelsKeptInSeparateFiles) {
  // x_train.h5:/x with y_train.h5:/y, and the same for test: the split comes from the file name.
  for (const Split* split : {&train_, &test_}) {
    const auto count = static_cast<hsize_t>(split->count);
    // As [N,H,W] ([N,4,5,3] would be ambiguous between NHWC and NCHW).
    write_array(scratch_.file("x_" + split->name + ".h5"), "/x", H5T_NATIVE_UINT8, {count, 4, 15},
                split->images);
    write_array(scratch_.file("y_" + split->name + ".h5"), "/y", H5T_NATIVE_INT32, {count}, split->labels);
  }
  const std::string block = suggest_source_block(
      {scratch_.file("y_test.h5"), scratch_.file("x_train.h5"), scratch_.file("y_train.h5"), scratch_.file("x_test.h5")});
  for (const std::string split : {"train", "test"})
    EXPECT_NE(block.find(split + ": {images: " + scratch_.file("x_" + split + ".h5") + ":/x, labels: " +
                         scratch_.file("y_" + split + ".h5") + ":/y}"),
              std::string::npos)
        << block;
  EXPECT_EQ(suggest_source_block({scratch_.file("x_train.h5")}), "");
}

// Chunks of one value each spread an image over as many chunks as it has values: HDF5 looks each
// up and keeps a record of it to read one sample (gigabytes and minutes for 90,000 chunks, found
// by the mapped_source fuzzer), so a file of more than 4,096 chunks per sample is refused at
// open, naming the dataset and what to do; 4,096 (64 x 64 chunks of one value) are read.
TEST_F(MappedFiles, ImagesSpreadOverTooManyChunksPerSampleAreRefused) {
  const auto write_file = [&](const std::string& path, hsize_t side) {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const std::vector<hsize_t> shape = {2, side, side}, chunk = {1, 1, 1};
    const hid_t space = H5Screate_simple(3, shape.data(), nullptr);
    const hid_t creation = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(creation, 3, chunk.data());
    const std::vector<std::uint8_t> values(2 * side * side, 7);
    for (const char* name : {"/train_x", "/test_x"}) {
      const hid_t dataset =
          H5Dcreate2(file, name, H5T_NATIVE_UINT8, space, H5P_DEFAULT, creation, H5P_DEFAULT);
      ASSERT_GE(dataset, 0);
      ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
      H5Dclose(dataset);
    }
    H5Pclose(creation);
    H5Sclose(space);
    H5Fclose(file);
    write_array(path, "/train_y", H5T_NATIVE_INT32, {2}, std::vector<std::int32_t>{0, 1});
    write_array(path, "/test_y", H5T_NATIVE_INT32, {2}, std::vector<std::int32_t>{0, 1});
  };
  write_file(scratch_.file("at_the_limit.h5"), 64);
  const auto source = std::make_shared<const MappedSource>(source_of(scratch_.file("at_the_limit.h5")));
  MappedSplitReader reader(source, "train");
  std::vector<std::uint8_t> images(2 * 64 * 64, 1);
  std::vector<std::int32_t> labels(2, -1);
  reader.read(0, 2, images.data(), labels.data());
  EXPECT_EQ(labels, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(std::count(images.begin(), images.end(), 7), 2 * 64 * 64);

  write_file(scratch_.file("over_the_limit.h5"), 65);
  EXPECT_INPUT_ERROR(MappedSource(source_of(scratch_.file("over_the_limit.h5"))),
                     "its chunks split one sample over 4225 chunks (at most 4096");
}

// Without named classes, phalanx numbers them from the largest label: a label of 159,383,811 in a
// damaged file made it build that many names. Past 1,000,000 the labels' dataset is refused, with
// what to do; the named classes of a wide label set are taken as they are.
TEST_F(MappedFiles, LabelsImplyingMoreThanAMillionClassesNeedNames) {
  const std::string path = scratch_.file("wide_labels.h5");
  const std::vector<std::uint8_t> images(2 * 4 * 5, 7);
  for (const char* name : {"/train_x", "/test_x"}) write_array(path, name, H5T_NATIVE_UINT8, {2, 4, 5}, images);
  write_array(path, "/train_y", H5T_NATIVE_INT32, {2}, std::vector<std::int32_t>{0, 1});
  write_array(path, "/test_y", H5T_NATIVE_INT32, {2}, std::vector<std::int32_t>{1000000, 3});
  EXPECT_INPUT_ERROR(MappedSource(source_of(path)),
                     "/test_y (data.source.test.labels): its labels imply 1000001 classes, more than the 1000000");
  config::SourceConfig named = source_of(path);
  named.classes.assign(1000001, "x");
  EXPECT_EQ(MappedSource(named).info().classes.size(), 1000001U);
}

}  // namespace
}  // namespace phalanx::data
