// The image-folder importer (see image_folder.hpp). Samples are stored in a seeded random order,
// never grouped by class: streaming (data.cache: none) shuffles whole chunks and then within a
// window, so a class-sorted file would give class-sorted batches. Images are decoded a slab at a
// time on every core, the next slab while the writer writes this one, so an import of any size
// holds two slabs.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/core/usable_cores.hpp"
#include "phalanx/core/utf8.hpp"
#include "phalanx/data/image_folder.hpp"

namespace phalanx::data {
namespace {

namespace fs = std::filesystem;

// Stream ids of the importer's draws, apart from every other stream.
constexpr std::uint64_t test_stream = 0x494d47544553ull;   // "IMGTES"
constexpr std::uint64_t val_stream = 0x494d4756414cull;    // "IMGVAL"
constexpr std::uint64_t order_stream = 0x494d474f5244ull;  // "IMGORD"

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw_input_error(path + ": " + what);
}

struct Item {
  std::string path;
  std::int32_t label = 0;
};

bool is_image_name(const fs::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char letter) { return static_cast<char>(std::tolower(letter)); });
  return extension == ".png" || extension == ".jpg" || extension == ".jpeg";
}

bool hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

// What `entry` is, links followed. A link that loops or leads nowhere, or an entry that cannot be
// read, is refused naming it: skipped, an image the user put there would go missing unsaid.
fs::file_type entry_type(const fs::directory_entry& entry) {
  std::error_code error;
  const fs::file_status status = entry.status(error);
  if (error) fail(entry.path().string(), "cannot be read (" + error.message() + ")");
  return status.type();
}

std::vector<std::string> class_folders(const fs::path& tree) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator entry(tree, error), end; !error && entry != end; entry.increment(error))
    if (!hidden(entry->path()) && entry_type(*entry) == fs::file_type::directory) {
      // The folder's name becomes the class name, which reports and predictions write as UTF-8.
      const std::string name = entry->path().filename().string();
      if (const std::string problem = utf8_problem(name); !problem.empty())
        fail(entry->path().string(), "the folder's name (a class name) is " + problem + ": rename it");
      names.push_back(name);
    }
  if (error) fail(tree.string(), "cannot be listed (" + error.message() + ")");
  std::sort(names.begin(), names.end());
  return names;
}

// Every image file of `tree`, labelled by its class folder's place in `classes`, in name order.
std::vector<Item> list_items(const fs::path& tree, const std::vector<std::string>& classes,
                             std::int64_t& skipped) {
  std::vector<Item> items;
  for (const std::string& folder : class_folders(tree)) {
    const auto found = std::find(classes.begin(), classes.end(), folder);
    if (found == classes.end())
      fail((tree / folder).string(),
           "class folder not present in the training tree (classes: " + std::to_string(classes.size()) + ")");
    std::vector<std::string> files;
    std::error_code error;
    for (fs::recursive_directory_iterator entry(tree / folder, error), end; !error && entry != end;
         entry.increment(error)) {
      if (hidden(entry->path())) {
        // Nothing under a hidden folder either (.ipynb_checkpoints holds copies of the images).
        std::error_code ignored;  // a hidden entry is left out whatever it is, a broken link too
        if (entry->is_directory(ignored)) entry.disable_recursion_pending();
        continue;
      }
      if (entry_type(*entry) != fs::file_type::regular) continue;
      if (is_image_name(entry->path()))
        files.push_back(entry->path().string());
      else
        ++skipped;
    }
    if (error) fail((tree / folder).string(), "cannot be listed (" + error.message() + ")");
    std::sort(files.begin(), files.end());
    for (auto& file : files)
      items.push_back({std::move(file), static_cast<std::int32_t>(found - classes.begin())});
  }
  return items;
}

void shuffle(std::vector<Item>& items, std::uint64_t seed, std::uint64_t stream) {
  RandomStream random(seed, stream);
  for (std::size_t index = items.size(); index > 1; --index)
    std::swap(items[index - 1], items[static_cast<std::size_t>(random.next_below(index))]);
}

// Moves round(fraction * size) items, drawn by seed from each class in turn, out of `items`.
std::vector<Item> carve(std::vector<Item>& items, double fraction, std::uint64_t seed, std::uint64_t stream,
                        std::size_t class_count) {
  std::vector<Item> kept, carved;
  for (std::size_t label = 0; label < class_count; ++label) {
    std::vector<Item> members;
    for (const Item& item : items)
      if (static_cast<std::size_t>(item.label) == label) members.push_back(item);
    shuffle(members, mix_seed(seed, label), stream);
    const auto count = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(members.size())));
    carved.insert(carved.end(), members.begin(), members.begin() + static_cast<std::ptrdiff_t>(count));
    kept.insert(kept.end(), members.begin() + static_cast<std::ptrdiff_t>(count), members.end());
  }
  items = std::move(kept);
  return carved;
}

// Decodes and resizes items [first, first + count) into `images` on `threads` threads. Each image
// has its own slot, so the bytes do not depend on the thread count; when several files fail, the
// one first in the stored order is reported, so the message does not either.
void decode_slab(const std::vector<Item>& items, std::int64_t first, std::int64_t count,
                 const ImageFolderOptions& options, int threads, std::uint8_t* images, std::int32_t* labels) {
  const auto image_bytes = static_cast<std::size_t>(options.height) * options.width * options.channels;
  std::atomic<std::int64_t> next{0};
  std::mutex failure_mutex;
  std::int64_t failed_index = count;
  std::exception_ptr failure;
  const auto work = [&] {
    ImageScratch scratch;  // one per thread, reused from image to image
    DecodedImage decoded, resized;
    for (std::int64_t index = next++; index < count; index = next++) {
      const Item& item = items[static_cast<std::size_t>(first + index)];
      try {
        decode_image(item.path, options.channels, decoded, scratch);
        resize_image(decoded, options.height, options.width, resized, scratch);
        std::copy(resized.pixels.begin(), resized.pixels.end(),
                  images + static_cast<std::size_t>(index) * image_bytes);
        labels[index] = item.label;
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        if (index < failed_index) {
          failed_index = index;
          failure = std::current_exception();
        }
      }
    }
  };
  {
    std::vector<std::jthread> helpers;
    for (int thread = 1; thread < std::min<std::int64_t>(threads, count); ++thread)
      helpers.emplace_back(work);
    work();
  }
  if (failure) std::rethrow_exception(failure);
}

SplitStream decode_split(const std::string& name, std::vector<Item> items, const ImageFolderOptions& options,
                         std::uint64_t split_number) {
  shuffle(items, mix_seed(options.seed, split_number), order_stream);
  // Every core the job was given (its affinity), not every core of the node.
  const int threads = options.threads > 0 ? options.threads : usable_cores();
  auto shared = std::make_shared<const std::vector<Item>>(std::move(items));
  return SplitStream{name,
                     static_cast<std::int64_t>(shared->size()),
                     options.height,
                     options.width,
                     options.channels,
                     [shared, options, threads](std::int64_t first, std::int64_t count, std::uint8_t* images,
                                                std::int32_t* labels) {
                       decode_slab(*shared, first, count, options, threads, images, labels);
                     },
                     /*fill_beside_writes=*/true};
}

}  // namespace

ImageFolderSummary import_image_folder(const std::string& directory, const std::string& output_path,
                                       const ImageFolderOptions& options, const WriteOptions& write_options) {
  PHALANX_REQUIRE_INPUT(
      options.height >= 1 && options.width >= 1 && options.height <= 4096 && options.width <= 4096,
      "image size ", options.height, "x", options.width, " must be within 1..4096");
  PHALANX_REQUIRE_INPUT(options.channels == 1 || options.channels == 3, "channels must be 1 or 3 (got ",
                        options.channels, ")");
  PHALANX_REQUIRE_INPUT(options.test_fraction >= 0.0 && options.test_fraction < 1.0,
                        "test fraction must be in [0, 1) (got ", options.test_fraction, ")");
  PHALANX_REQUIRE_INPUT(options.validation_fraction >= 0.0 && options.validation_fraction <= 0.5,
                        "validation fraction must be in [0, 0.5] (got ", options.validation_fraction, ")");
  std::error_code error;
  if (!fs::is_directory(directory, error)) fail(directory, "no such folder");
  const fs::path root(directory);
  const bool presplit = fs::is_directory(root / "train", error) && fs::is_directory(root / "test", error);
  const fs::path train_tree = presplit ? root / "train" : root;

  ImageFolderSummary summary;
  summary.classes = class_folders(train_tree);
  if (summary.classes.empty())
    fail(train_tree.string(), "no class folders (expected one folder of images per class)");
  std::vector<Item> train = list_items(train_tree, summary.classes, summary.skipped_files);
  std::vector<Item> test =
      presplit ? list_items(root / "test", summary.classes, summary.skipped_files)
               : carve(train, options.test_fraction, options.seed, test_stream, summary.classes.size());
  std::vector<Item> validation;
  if (options.validation_fraction > 0)
    validation = carve(train, options.validation_fraction, options.seed, val_stream, summary.classes.size());
  if (train.empty()) fail(train_tree.string(), "no .png/.jpg/.jpeg images left for the train split");
  if (test.empty())
    fail(directory, "no images for the test split (add a test/ tree or raise --test-fraction)");
  if (options.validation_fraction > 0 && validation.empty())
    fail(directory, "the validation fraction leaves no images for the val split");

  std::vector<SplitStream> splits = {decode_split("train", std::move(train), options, 0),
                                     decode_split("test", std::move(test), options, 1)};
  if (!validation.empty()) splits.push_back(decode_split("val", std::move(validation), options, 2));
  summary.train = splits[0].count;
  summary.test = splits[1].count;
  summary.validation = splits.size() > 2 ? splits[2].count : 0;
  write_dataset_in_slabs(output_path, summary.classes, splits, write_options);
  return summary;
}

}  // namespace phalanx::data
