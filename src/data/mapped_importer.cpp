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
  // Copied a slab at a time, so a source larger than memory imports (the writer holds one slab).
  std::vector<SplitStream> splits;
  for (const auto& info : mapped->info().splits) {
    auto reader = std::make_shared<const MappedSplitReader>(mapped, info.name);
    splits.push_back(
        SplitStream{info.name, info.count, info.height, info.width, info.channels,
                    [reader](std::int64_t first, std::int64_t count, std::uint8_t* images,
                             std::int32_t* labels) { reader->read(first, first + count, images, labels); }});
  }
  write_dataset_in_slabs(output_path, mapped->info().classes, splits, options);
}

}  // namespace phalanx::data
