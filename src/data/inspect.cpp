// `phalanx data inspect`: a human-readable summary of a dataset file. It reads only the schema and
// the labels (never the images), so it answers quickly even for large files, and because it goes
// through the validating reader, a file it prints is a file the trainer accepts.
#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "hdf5_tree.hpp"
#include "phalanx/data/importers.hpp"

namespace phalanx::data {
namespace {

std::string joined(const std::vector<float>& values, int precision) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(precision);
  for (std::size_t index = 0; index < values.size(); ++index) text << (index ? ", " : "") << values[index];
  return text.str();
}

}  // namespace

namespace {

bool is_foreign_hdf5(const std::string& path) {
  const bool hdf5 = [&] {
    const auto hdf5_lock = lock_hdf5();
    return std::filesystem::is_regular_file(path) && H5Fis_hdf5(path.c_str()) > 0;
  }();
  return hdf5 && !is_phalanx_dataset(path);
}

// The trees of HDF5 files in no phalanx schema, and one data.source block over all of them (images
// and labels are often in separate files).
std::string describe_foreign_files(const std::vector<std::string>& paths) {
  std::string text;
  for (const auto& path : paths) {
    if (!text.empty()) text += '\n';
    text += describe_hdf5_tree(path);
  }
  const std::string block = suggest_source_block(paths);
  const char* subject = paths.size() == 1 ? "not a phalanx dataset" : "not phalanx datasets";
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on chains of std::string '+'.
  text += '\n';
  text += subject;
  if (block.empty()) {
    text += ", and no pair of image and label datasets recognised (images: uint8 or float [N,H,W], "
            "[N,H,W,C] or [N,C,H,W]; labels: [N], [N,1,...] or one-hot [N,K] of the same N)";
    if (paths.size() == 1) text += "; images and labels in separate files: name both files";
    text += '\n';
  } else {
    text += "; to train on them in place, paste into the training config (check the pairing):\n\n";
    text += block;
  }
  return text;
}

}  // namespace

std::string inspect(const std::vector<std::string>& paths) {
  std::vector<std::string> foreign;
  std::string text;
  for (const auto& path : paths) {
    if (is_foreign_hdf5(path)) {
      foreign.push_back(path);
      continue;
    }
    if (!text.empty()) text += '\n';
    text += inspect(path);
  }
  if (!foreign.empty()) {
    if (!text.empty()) text += '\n';
    text += describe_foreign_files(foreign);
  }
  return text;
}

std::string inspect(const std::string& path) {
  // Any other HDF5 file: its tree, and a data.source block where its datasets look like a layout.
  if (is_foreign_hdf5(path)) return describe_foreign_files({path});
  const DatasetInfo info = read_dataset_info(path);
  std::ostringstream text;
  text << path << ": " << dataset_format << " version " << info.version << "\n";
  text << "classes (" << info.classes.size() << "): ";
  for (std::size_t index = 0; index < info.classes.size(); ++index)
    text << (index ? ", " : "") << info.classes[index];
  text << "\n";
  text << "mean: [" << joined(info.mean, 4) << "]  std: [" << joined(info.standard_deviation, 4)
       << "]  (per channel, of train, in [0,1] units)\n";

  text << "\n"
       << std::left << std::setw(8) << "split" << std::right << std::setw(10) << "samples"
       << "  shape (N x H x W x C)\n";
  for (const auto& split : info.splits)
    text << std::left << std::setw(8) << split.name << std::right << std::setw(10) << split.count << "  "
         << split.count << " x " << split.height << " x " << split.width << " x " << split.channels << "\n";

  std::vector<std::vector<std::int64_t>> histograms;
  for (const auto& split : info.splits) {
    std::vector<std::int64_t> histogram(info.classes.size(), 0);
    for (const std::int32_t label : read_labels(path, split.name))
      ++histogram[static_cast<std::size_t>(label)];
    histograms.push_back(std::move(histogram));
  }
  std::size_t name_width = 5;
  for (const auto& name : info.classes) name_width = std::max(name_width, name.size());
  text << "\nlabel histogram:\n" << std::left << std::setw(static_cast<int>(name_width + 6)) << "class";
  for (const auto& split : info.splits) text << std::right << std::setw(10) << split.name;
  text << "\n";
  for (std::size_t label = 0; label < info.classes.size(); ++label) {
    text << std::right << std::setw(4) << label << "  " << std::left
         << std::setw(static_cast<int>(name_width)) << info.classes[label];
    for (const auto& histogram : histograms) text << std::right << std::setw(10) << histogram[label];
    text << "\n";
  }
  text << "\n" << describe_hdf5_tree(path);
  return text.str();
}

}  // namespace phalanx::data
