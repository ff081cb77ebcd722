// Import of the IDX format (MNIST, Fashion-MNIST) into the phalanx dataset. zlib's gzread reads
// gzip and plain files alike, so both the published .gz files and unpacked copies work; every
// header field is checked and every error names the IDX file at fault.

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "compressed_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/importers.hpp"

namespace phalanx::data {
namespace {

constexpr std::uint32_t image_magic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t label_magic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
// Read in pieces so that a corrupt header claiming terabytes fails on the short read, not on malloc.
constexpr std::size_t read_piece_bytes = std::size_t{64} << 20;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw_input_error(file + ": " + what);
}

// An IDX file: the shared compressed reader plus the IDX header and payload rules.
class IdxFile : public detail::CompressedFile {
 public:
  using detail::CompressedFile::CompressedFile;

  std::uint32_t read_big_endian(const std::string& field) {
    std::array<unsigned char, 4> bytes{};
    if (read(bytes.data(), bytes.size()) != bytes.size()) fail(path(), "truncated header (no " + field + ")");
    return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
           (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
  }

  // Reads exactly `bytes` payload bytes into `output` and checks nothing follows them.
  void read_payload(std::vector<std::uint8_t>& output, std::size_t bytes, const std::string& what) {
    output.clear();
    while (output.size() < bytes) {
      const std::size_t before = output.size();
      output.resize(before + std::min(read_piece_bytes, bytes - before));
      const std::size_t got = read(output.data() + before, output.size() - before);
      if (got < output.size() - before)
        fail(path(), "truncated: expected " + std::to_string(bytes) + " bytes of " + what + ", got " +
                         std::to_string(before + got));
    }
    unsigned char extra = 0;
    if (read(&extra, 1) != 0)
      fail(path(), "has extra bytes after the " + std::to_string(bytes) + " bytes of " + what);
  }
};

// The IDX file for `base_name` in `directory`: the .gz one when present, else the plain one.
std::string find_idx_file(const std::filesystem::path& directory, const std::string& base_name) {
  for (const std::string& candidate : {base_name + ".gz", base_name})
    if (std::filesystem::is_regular_file(directory / candidate)) return (directory / candidate).string();
  fail(directory.string(), "missing " + base_name + ".gz (or " + base_name + ")");
}

struct IdxImages {
  std::int64_t count = 0;
  int rows = 0, columns = 0;
  std::vector<std::uint8_t> pixels;
};

IdxImages read_idx_images(const std::string& path) {
  IdxFile file(path);
  const std::uint32_t magic = file.read_big_endian("magic number");
  if (magic != image_magic)
    fail(path, "magic number " + std::to_string(magic) + " is not that of an IDX image file (expected " +
                   std::to_string(image_magic) + (magic == label_magic ? "; this is a label file" : "") +
                   ")");
  const std::uint32_t count = file.read_big_endian("image count");
  const std::uint32_t rows = file.read_big_endian("row count");
  const std::uint32_t columns = file.read_big_endian("column count");
  if (count == 0 || rows == 0 || columns == 0 || rows > 65536 || columns > 65536)
    fail(path, "implausible dimensions " + std::to_string(count) + " x " + std::to_string(rows) + " x " +
                   std::to_string(columns));
  IdxImages images;
  images.count = count;
  images.rows = static_cast<int>(rows);
  images.columns = static_cast<int>(columns);
  file.read_payload(images.pixels, std::size_t{count} * rows * columns, "pixels");
  return images;
}

std::vector<std::int32_t> read_idx_labels(const std::string& path, std::int32_t class_count) {
  IdxFile file(path);
  const std::uint32_t magic = file.read_big_endian("magic number");
  if (magic != label_magic)
    fail(path, "magic number " + std::to_string(magic) + " is not that of an IDX label file (expected " +
                   std::to_string(label_magic) + (magic == image_magic ? "; this is an image file" : "") +
                   ")");
  const std::uint32_t count = file.read_big_endian("label count");
  if (count == 0) fail(path, "holds no labels");
  std::vector<std::uint8_t> bytes;
  file.read_payload(bytes, count, "labels");
  std::vector<std::int32_t> labels(bytes.begin(), bytes.end());
  for (std::size_t index = 0; index < labels.size(); ++index)
    if (labels[index] >= class_count)
      fail(path, "label[" + std::to_string(index) + "] = " + std::to_string(labels[index]) +
                     " is outside [0, " + std::to_string(class_count) + ") (" + std::to_string(class_count) +
                     " classes)");
  return labels;
}

Split read_idx_split(const std::filesystem::path& directory, const std::string& split_name,
                     const std::string& prefix, std::int32_t class_count) {
  const std::string images_path = find_idx_file(directory, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_idx_file(directory, prefix + "-labels-idx1-ubyte");
  IdxImages images = read_idx_images(images_path);
  Split split;
  split.labels = read_idx_labels(labels_path, class_count);
  if (static_cast<std::int64_t>(split.labels.size()) != images.count)
    fail(labels_path, "has " + std::to_string(split.labels.size()) + " labels but " + images_path + " has " +
                          std::to_string(images.count) + " images");
  split.name = split_name;
  split.count = images.count;
  split.height = images.rows;
  split.width = images.columns;
  split.channels = 1;
  split.images = std::move(images.pixels);
  return split;
}

}  // namespace

std::vector<std::string> fashion_mnist_classes() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
}

std::vector<std::string> digit_classes() {
  return {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
}

void import_idx(const std::string& directory, const std::string& output_path,
                const std::vector<std::string>& classes, const WriteOptions& options) {
  if (!std::filesystem::is_directory(directory)) fail(directory, "no such directory");
  const std::vector<std::string> class_names = classes.empty() ? digit_classes() : classes;
  if (class_names.size() > 256)
    fail(directory, "IDX labels are bytes: at most 256 classes, got " + std::to_string(class_names.size()));
  const auto class_count = static_cast<std::int32_t>(class_names.size());

  const Split train = read_idx_split(directory, "train", "train", class_count);
  const Split test = read_idx_split(directory, "test", "t10k", class_count);
  if (test.height != train.height || test.width != train.width)
    fail(directory, "test images are " + std::to_string(test.height) + "x" + std::to_string(test.width) +
                        " but train images are " + std::to_string(train.height) + "x" +
                        std::to_string(train.width));
  write_dataset(output_path, class_names, {&train, &test}, options);
}

}  // namespace phalanx::data
