// The tree and the suggested data.source block of `data inspect`. The suggestion uses the same
// shape rules as the mapped reader (source_layout.hpp), so a block it prints is one the reader
// accepts as far as shapes go; dtypes and values are still checked when training opens it.
#include "hdf5_tree.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>
#include <vector>

#include "mapped_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "phalanx/data/hdf5_objects.hpp"
#include "phalanx/data/object_header_check.hpp"
#include "source_layout.hpp"

namespace phalanx::data {
namespace {

struct Entry {
  std::string file;  // absolute, so a block works from whichever folder the training starts in
  std::string name;
  bool group = false;
  std::vector<std::uint64_t> shape;
  std::string dtype;
  H5T_class_t type_class = H5T_NO_CLASS;
  mapped::Storage storage;
};

std::vector<Entry> list_entries(const std::string& path) {
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  detail::Hdf5Handle file = mapped::open_file(path, "");
  std::vector<Entry> entries;
  const std::string absolute = std::filesystem::absolute(path).lexically_normal().string();
  detail::visit_objects(file.get(), [&](const char* name, H5O_type_t type) -> herr_t {
    if (std::string(name) == ".") return 0;
    Entry entry;
    entry.name = "/";  // appended: GCC 12 warns falsely (-Wrestrict) on "/" + std::string at -O3
    entry.name += name;
    if (type == H5O_TYPE_GROUP) {
      entry.group = true;
      // HDF5 visits the group's links next: its header (and local heap) is checked first.
      detail::check_object_header(file.get(), entry.name, path);
    } else if (type == H5O_TYPE_DATASET) {
      const detail::Hdf5Handle dataset = detail::open_checked_dataset(file.get(), entry.name, path);
      if (!dataset.valid()) return 0;
      detail::Hdf5Handle datatype = detail::datatype_handle(H5Dget_type(dataset.get()));
      entry.dtype = datatype.valid() ? detail::describe_type(datatype.get()) : "?";
      entry.type_class = datatype.valid() ? H5Tget_class(datatype.get()) : H5T_NO_CLASS;
      entry.shape = mapped::dimensions(dataset.get());
      entry.storage = mapped::storage(dataset.get());
    } else {
      return 0;
    }
    entry.file = absolute;
    entries.push_back(std::move(entry));
    return 0;
  });
  return entries;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// train, test or val from a dataset's path ("/x_train", "/test/images", "/X_valid"), else "".
std::string split_role(const std::string& name) {
  const std::string text = lower(name);
  if (text.find("train") != std::string::npos) return "train";
  if (text.find("test") != std::string::npos) return "test";
  if (text.find("val") != std::string::npos) return "val";
  return "";
}

bool is_numeric(const Entry& entry) {
  return entry.type_class == H5T_INTEGER || entry.type_class == H5T_FLOAT;
}

bool looks_like_images(const Entry& entry) {
  return !entry.group && (entry.dtype == "uint8" || entry.type_class == H5T_FLOAT) &&
         image_shape(entry.shape, config::SourceLayout::Auto).error.empty();
}

bool looks_like_labels(const Entry& entry) {
  if (entry.group || !is_numeric(entry)) return false;
  const LabelShape shape = label_shape(entry.shape, config::LabelEncoding::Auto);
  return shape.error.empty() && shape.classes <= 10000;
}

// The file's name without folder and extension ("y_train" for /data/y_train.h5).
std::string file_stem(const Entry& entry) { return lower(std::filesystem::path(entry.file).stem().string()); }

// A dataset's split role from its own name, else from its file's name (images and labels kept in
// one file per split: x_train.h5:/x).
std::string entry_role(const Entry& entry) {
  const std::string role = split_role(entry.name);
  return role.empty() ? split_role(file_stem(entry)) : role;
}

// Higher for names that say "label" (or y/target) than for any numeric dataset; the dataset's
// name first, then its file's.
int label_name_score(const Entry& entry) {
  for (const std::string& text : {lower(entry.name.substr(entry.name.rfind('/') + 1)), file_stem(entry)}) {
    if (text.find("label") != std::string::npos || text.find("target") != std::string::npos) return 2;
    if (text.compare(0, 1, "y") == 0) return 1;
  }
  return 0;
}

}  // namespace

bool is_phalanx_dataset(const std::string& path) {
  const auto hdf5_lock = lock_hdf5();
  detail::silence_hdf5_error_printing();
  detail::Hdf5Handle file = mapped::open_file(path, "");
  if (H5Aexists(file.get(), "format") <= 0) return false;
  detail::Hdf5Handle attribute = detail::attribute_handle(H5Aopen(file.get(), "format", H5P_DEFAULT));
  detail::Hdf5Handle type = detail::datatype_handle(attribute.valid() ? H5Aget_type(attribute.get()) : -1);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING) return false;
  // phalanx writes one string; the read below has room for one, and HDF5 writes as many as the
  // file declares, so a file declaring another count is not read (and is not phalanx's).
  detail::Hdf5Handle space = detail::dataspace_handle(H5Aget_space(attribute.get()));
  if (!space.valid() || H5Sget_simple_extent_npoints(space.get()) != 1) return false;
  std::string value;
  bool read = false;
  std::string refusal;  // taken at once: the next HDF5 call clears the error stack
  if (H5Tis_variable_str(type.get()) > 0) {
    char* text = nullptr;
    detail::Hdf5Handle memory_type = detail::variable_string_type_for(type.get());
    read = H5Aread(attribute.get(), memory_type.get(), &text) >= 0;
    if (!read) refusal = detail::checked_file_refusal();
    if (read && text) value = text;
    if (text) H5free_memory(text);
  } else {
    std::vector<char> buffer(H5Tget_size(type.get()) + 1, '\0');
    read = H5Aread(attribute.get(), type.get(), buffer.data()) >= 0;
    if (read) value = buffer.data();
  }
  // A format that cannot be read is a damaged file, not a foreign one (a damaged global heap is
  // refused by the checked driver: say where).
  if (!read)
    throw_input_error(path + ": " + detail::unreadable_message("attribute \"format\" of /", refusal));
  return value == dataset_format;
}

std::string describe_hdf5_tree(const std::string& path) {
  const std::vector<Entry> entries = list_entries(path);
  std::size_t name_width = 4;
  for (const auto& entry : entries)
    name_width = std::max(name_width, entry.name.size() + (entry.group ? 1 : 0));
  std::ostringstream text;
  text << path << " (HDF5: " << entries.size() << " objects)\n";
  for (const auto& entry : entries) {
    text << "  " << std::left << std::setw(static_cast<int>(name_width))
         << (entry.group ? entry.name + "/" : entry.name);
    if (entry.group) {
      text << "  group\n";
      continue;
    }
    text << "  " << std::setw(8) << entry.dtype << "  " << std::setw(20) << dimensions_text(entry.shape)
         << "  " << std::setw(25)
         << (entry.storage.chunk.empty() ? std::string("contiguous")
                                         : "chunks " + dimensions_text(entry.storage.chunk))
         << "  " << (entry.storage.compression.empty() ? "uncompressed" : entry.storage.compression) << "\n";
  }
  return text.str();
}

std::string suggest_source_block(const std::vector<std::string>& paths) {
  std::vector<Entry> entries;
  for (const auto& path : paths) {
    auto listed = list_entries(path);
    entries.insert(entries.end(), std::make_move_iterator(listed.begin()), std::make_move_iterator(listed.end()));
  }
  // Pair every image dataset with the label dataset of the same count, preferring the same split
  // role, a label-like name and the same file.
  std::map<std::string, std::pair<const Entry*, const Entry*>> splits;
  for (const auto& images : entries) {
    if (!looks_like_images(images)) continue;
    const std::string role = entry_role(images);
    const Entry* best = nullptr;
    int best_score = -1;
    for (const auto& labels : entries) {
      if (&labels == &images || !looks_like_labels(labels) || labels.shape[0] != images.shape[0]) continue;
      if (looks_like_images(labels)) continue;
      const int score = (entry_role(labels) == role ? 8 : 0) + 2 * label_name_score(labels) +
                        (labels.file == images.file ? 1 : 0);
      if (score > best_score) best = &labels, best_score = score;
    }
    const std::string key = role.empty() ? "train" : role;
    if (best && !splits.count(key)) splits[key] = {&images, best};
  }
  if (!splits.count("train")) return "";
  const Entry* class_names = nullptr;
  for (const auto& entry : entries)
    if (!entry.group && entry.type_class == H5T_STRING && entry.shape.size() == 1) class_names = &entry;

  std::ostringstream block;
  block << "data:\n  source:\n";
  for (const char* role : {"train", "test", "val"}) {
    if (!splits.count(role)) continue;
    const auto [images, labels] = splits.at(role);
    block << "    " << role << ": {images: " << images->file << ":" << images->name
          << ", labels: " << labels->file << ":" << labels->name << "}\n";
  }
  if (!splits.count("test")) block << "    test_fraction: 0.1   # the file has no test split: carve one\n";
  const auto& train_images = *splits.at("train").first;
  const ImageShape shape = image_shape(train_images.shape, config::SourceLayout::Auto);
  block << "    layout: " << layout_name(shape.layout) << "   # from shape "
        << dimensions_text(train_images.shape) << "\n";
  const LabelShape labels = label_shape(splits.at("train").second->shape, config::LabelEncoding::Auto);
  block << "    labels: " << label_encoding_name(labels.encoding) << "\n";
  if (class_names) block << "    classes: " << class_names->file << ":" << class_names->name << "\n";
  return block.str();
}

}  // namespace phalanx::data
