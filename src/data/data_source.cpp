// Dispatch between a native dataset file and a mapped source. Both end in a SplitRangeReader, so
// past this file nothing differs.
#include "phalanx/data/data_source.hpp"

#include "mapped_source_cache.hpp"
#include "mapped_split_reader.hpp"
#include "phalanx/data/split_reader.hpp"

namespace phalanx::data {

DatasetInfo read_source_info(const config::DataConfig& data) {
  if (!data.source.enabled()) return read_dataset_info(data.path);
  return open_mapped_source(data.source)->info();
}

std::unique_ptr<SplitRangeReader> open_split_reader(const config::DataConfig& data,
                                                    const std::string& split_name,
                                                    const comm::MpiIoAccess* mpi_io) {
  if (!data.source.enabled()) return std::make_unique<SplitReader>(data.path, split_name, mpi_io);
  return std::make_unique<MappedSplitReader>(open_mapped_source(data.source), split_name);
}

Split read_whole_split(const config::DataConfig& data, const std::string& split_name) {
  if (!data.source.enabled()) return read_split(data.path, split_name);
  const MappedSplitReader reader(open_mapped_source(data.source), split_name);
  Split split;
  split.name = reader.split().name;
  split.count = reader.split().count;
  split.height = reader.split().height;
  split.width = reader.split().width;
  split.channels = reader.split().channels;
  split.images.resize(static_cast<std::size_t>(split.count * split.image_bytes()));
  split.labels.resize(static_cast<std::size_t>(split.count));
  reader.read(0, split.count, split.images.data(), split.labels.data());
  return split;
}

std::string source_name(const config::DataConfig& data) {
  return data.source.enabled() ? data.source.train.images.text() + " (data.source)" : data.path;
}

}  // namespace phalanx::data
