// `phalanx data import-hdf5`: a mapped source written out in the phalanx schema. It reads through
// the same MappedSplitReader training uses, so the copy holds exactly the bytes a run on the
// mapped source trains on, and the two train to the same weights.
#include <memory>
#include <vector>

#include "phalanx/data/importers.hpp"
#include "mapped_source.hpp"
#include "mapped_split_reader.hpp"

namespace phalanx::data {

void import_mapped_source(const config::SourceConfig& source, const std::string& output_path,
                          const WriteOptions& options) {
  const auto mapped = std::make_shared<const MappedSource>(source);
  std::vector<Split> splits;
  for (const auto& info : mapped->info().splits) {
    const MappedSplitReader reader(mapped, info.name);
    Split split;
    split.name = info.name;
    split.count = info.count;
    split.height = info.height;
    split.width = info.width;
    split.channels = info.channels;
    split.images.resize(static_cast<std::size_t>(split.count * split.image_bytes()));
    split.labels.resize(static_cast<std::size_t>(split.count));
    reader.read(0, split.count, split.images.data(), split.labels.data());
    splits.push_back(std::move(split));
  }
  std::vector<const Split*> pointers;
  for (const auto& split : splits) pointers.push_back(&split);
  write_dataset(output_path, mapped->info().classes, pointers, options);
}

}  // namespace phalanx::data
