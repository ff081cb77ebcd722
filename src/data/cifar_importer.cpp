// Import of the CIFAR-10 / CIFAR-100 binary format into the phalanx dataset. The records store
// each image as three planes (R, G, B); the dataset wants NHWC, so records are transposed while
// they stream in. zlib's gzread reads plain and gzip files alike, so .bin and .bin.gz both work.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "compressed_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/data/importers.hpp"

namespace phalanx::data {
namespace {

constexpr int image_side = 32;
constexpr int image_channels = 3;
constexpr std::size_t plane_bytes = image_side * image_side;
constexpr std::size_t image_bytes = plane_bytes * image_channels;
// Records are read in blocks of this many, so memory stays bounded by the output, not doubled.
constexpr std::size_t records_per_block = 4096;
// Stream id of the train/val permutation, apart from the training and synthetic streams.
constexpr std::uint64_t validation_stream = 0x4349464152ull;  // "CIFAR"

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw_input_error(file + ": " + what);
}

// How one variant lays out its files and records.
struct Layout {
  std::string subfolder;                 // the folder the official archive unpacks to
  std::vector<std::string> train_files;  // concatenated in this order
  std::string test_file;
  std::string names_file;                // optional class names, one a line
  int label_bytes;                       // label bytes before the pixels of each record
  int used_label;                        // which label byte is the class
  std::vector<int> label_limits;         // exclusive upper bound of each label byte
  std::vector<std::string> label_names;  // to name the label byte in errors
};

Layout layout_of(CifarVariant variant) {
  if (variant == CifarVariant::Cifar10)
    return {
        "cifar-10-batches-bin",
        {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"},
        "test_batch.bin",
        "batches.meta.txt",
        1,
        0,
        {10},
        {"label"}};
  return {"cifar-100-binary",
          {"train.bin"},
          "test.bin",
          "fine_label_names.txt",
          2,
          1,
          {20, 100},
          {"coarse label", "fine label"}};
}

// The path of `name` (or `name`.gz) in `folder`, or empty when neither exists.
std::string find_in(const std::filesystem::path& folder, const std::string& name) {
  for (const std::string& candidate : {name, name + ".gz"})
    if (std::filesystem::is_regular_file(folder / candidate)) return (folder / candidate).string();
  return {};
}

// The folder holding the data: `directory` itself or the archive's subfolder, decided by where
// the first training file is, so a partly unpacked copy reports the file it lacks, not the folder.
std::filesystem::path data_folder(const std::filesystem::path& directory, const Layout& layout) {
  const std::string& first = layout.train_files.front();
  if (!find_in(directory, first).empty()) return directory;
  if (!find_in(directory / layout.subfolder, first).empty()) return directory / layout.subfolder;
  fail(directory.string(), "missing " + first + " (looked in the folder and in " + layout.subfolder + "/)");
}

std::string require_file(const std::filesystem::path& folder, const std::string& name) {
  const std::string path = find_in(folder, name);
  if (path.empty()) fail(folder.string(), "missing " + name + " (or " + name + ".gz)");
  return path;
}

using RecordFile = detail::CompressedFile;

// Appends the records of one file to `split`: the class label, and the planar RGB pixels
// transposed to HWC. Every label byte is range-checked, as a wrong variant or a corrupt file
// shows there first.
void append_records(const std::string& path, const Layout& layout, Split& split) {
  RecordFile file(path);
  const std::size_t record_bytes = static_cast<std::size_t>(layout.label_bytes) + image_bytes;
  std::vector<std::uint8_t> block(records_per_block * record_bytes);
  std::size_t total_bytes = 0;
  std::int64_t record_index = 0;
  while (true) {
    const std::size_t got = file.read(block.data(), block.size());
    total_bytes += got;
    if (got % record_bytes != 0) {
      // A short read happens only at the end of the file, so the total size is now known.
      total_bytes += file.read(block.data(), block.size());
      fail(path, "size " + std::to_string(total_bytes) + " bytes is not a multiple of the record size " +
                     std::to_string(record_bytes) + " (truncated or not a " + layout.subfolder + " file?)");
    }
    const std::size_t records = got / record_bytes;
    const std::size_t images_before = split.images.size();
    split.images.resize(images_before + records * image_bytes);
    std::uint8_t* output = split.images.data() + images_before;
    for (std::size_t record = 0; record < records; ++record, ++record_index) {
      const std::uint8_t* input = block.data() + record * record_bytes;
      for (int label_byte = 0; label_byte < layout.label_bytes; ++label_byte)
        if (input[label_byte] >= layout.label_limits[static_cast<std::size_t>(label_byte)])
          fail(path, "record " + std::to_string(record_index) + ": " +
                         layout.label_names[static_cast<std::size_t>(label_byte)] + " " +
                         std::to_string(input[label_byte]) + " is outside [0, " +
                         std::to_string(layout.label_limits[static_cast<std::size_t>(label_byte)]) + ")");
      split.labels.push_back(input[layout.used_label]);
      const std::uint8_t* red = input + layout.label_bytes;
      const std::uint8_t* green = red + plane_bytes;
      const std::uint8_t* blue = green + plane_bytes;
      for (std::size_t pixel = 0; pixel < plane_bytes; ++pixel) {
        output[0] = red[pixel];
        output[1] = green[pixel];
        output[2] = blue[pixel];
        output += image_channels;
      }
    }
    if (got < block.size()) break;
  }
  if (total_bytes == 0) fail(path, "is empty (no records)");
  split.count = static_cast<std::int64_t>(split.labels.size());
}

Split read_split_files(const std::string& name, const std::vector<std::string>& paths, const Layout& layout) {
  Split split;
  split.name = name;
  split.height = image_side;
  split.width = image_side;
  split.channels = image_channels;
  for (const std::string& path : paths) append_records(path, layout, split);
  return split;
}

// Class names from the archive's names file: one a line, blank lines (the file ends with some)
// and trailing spaces or carriage returns ignored.
std::vector<std::string> read_class_names(const std::string& path, std::size_t expected_count) {
  std::ifstream stream(path);
  if (!stream) fail(path, "cannot open");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(stream, line)) {
    const auto end = line.find_last_not_of(" \t\r");
    if (end == std::string::npos) continue;
    names.push_back(line.substr(0, end + 1));
  }
  if (names.size() != expected_count)
    fail(path,
         "has " + std::to_string(names.size()) + " class names, expected " + std::to_string(expected_count));
  return names;
}

std::vector<std::string> default_class_names(CifarVariant variant) {
  if (variant == CifarVariant::Cifar10) return cifar10_classes();
  std::vector<std::string> names;
  for (int index = 0; index < 100; ++index) names.push_back("class" + std::to_string(index));
  return names;
}

// Copies the samples at `indices` (ascending) of `source` into a new split called `name`.
Split gather(const Split& source, const std::string& name, const std::vector<std::size_t>& indices) {
  Split split;
  split.name = name;
  split.height = source.height;
  split.width = source.width;
  split.channels = source.channels;
  split.count = static_cast<std::int64_t>(indices.size());
  const auto bytes = static_cast<std::size_t>(source.image_bytes());
  split.images.resize(indices.size() * bytes);
  split.labels.reserve(indices.size());
  for (std::size_t position = 0; position < indices.size(); ++position) {
    std::memcpy(split.images.data() + position * bytes, source.images.data() + indices[position] * bytes,
                bytes);
    split.labels.push_back(source.labels[indices[position]]);
  }
  return split;
}

// Moves a seeded random `validation_fraction` of `train` into a new "val" split.
Split carve_validation(const std::string& directory, Split& train, double validation_fraction,
                       std::uint64_t seed) {
  const auto count = static_cast<std::size_t>(train.count);
  const auto validation_count =
      static_cast<std::size_t>(std::llround(validation_fraction * static_cast<double>(count)));
  if (validation_count == 0 || validation_count >= count)
    fail(directory, "validation fraction " + std::to_string(validation_fraction) + " of " +
                        std::to_string(count) + " training samples leaves " +
                        std::to_string(validation_count) +
                        " for validation; train and val both need at least one sample");
  // Fisher-Yates on a Philox stream: the carve is a pure function of (seed, count).
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  RandomStream random(seed, validation_stream);
  for (std::size_t index = count; index > 1; --index)
    std::swap(order[index - 1], order[static_cast<std::size_t>(random.next_below(index))]);
  // Each side keeps the file order, so the carve is easy to check and reads stay sequential.
  std::vector<std::size_t> validation_indices(order.begin(),
                                              order.begin() + static_cast<std::ptrdiff_t>(validation_count));
  std::vector<std::size_t> train_indices(order.begin() + static_cast<std::ptrdiff_t>(validation_count),
                                         order.end());
  std::sort(validation_indices.begin(), validation_indices.end());
  std::sort(train_indices.begin(), train_indices.end());
  Split validation = gather(train, "val", validation_indices);
  train = gather(train, train.name, train_indices);
  return validation;
}

}  // namespace

std::vector<std::string> cifar10_classes() {
  return {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
}

void import_cifar(const std::string& directory, const std::string& output_path, CifarVariant variant,
                  const WriteOptions& options, double validation_fraction, std::uint64_t seed) {
  if (!(validation_fraction >= 0.0 && validation_fraction <= 0.5))
    fail(directory, "validation fraction " + std::to_string(validation_fraction) + " is outside [0, 0.5]");
  if (!std::filesystem::is_directory(directory)) fail(directory, "no such directory");
  const Layout layout = layout_of(variant);
  const std::filesystem::path folder = data_folder(directory, layout);

  // Every file is located before any is read, so a missing one is reported at once.
  std::vector<std::string> train_paths;
  for (const std::string& name : layout.train_files) train_paths.push_back(require_file(folder, name));
  const std::string test_path = require_file(folder, layout.test_file);
  const std::size_t class_count =
      static_cast<std::size_t>(layout.label_limits[static_cast<std::size_t>(layout.used_label)]);
  const std::filesystem::path names_path = folder / layout.names_file;
  const std::vector<std::string> classes = std::filesystem::is_regular_file(names_path)
                                               ? read_class_names(names_path.string(), class_count)
                                               : default_class_names(variant);

  Split train = read_split_files("train", train_paths, layout);
  const Split test = read_split_files("test", {test_path}, layout);
  if (validation_fraction > 0.0) {
    const Split validation = carve_validation(directory, train, validation_fraction, seed);
    write_dataset(output_path, classes, {&train, &test, &validation}, options);
  } else {
    write_dataset(output_path, classes, {&train, &test}, options);
  }
}

}  // namespace phalanx::data
