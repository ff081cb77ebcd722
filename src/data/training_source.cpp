// Choosing and opening the training split's cache (data.cache). The node cache is filled by all
// ranks of a node together, each reading whole chunks of its share straight into the shared copy,
// so the file is read once per node and no rank ever holds a private copy.
#include "phalanx/data/training_source.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

#include "mapped_source_cache.hpp"
#include "phalanx/comm/mpi_io.hpp"
#include "phalanx/comm/node_shared_buffer.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/usable_memory.hpp"
#include "phalanx/data/data_source.hpp"
#include "streaming_source.hpp"

namespace phalanx::data {
namespace {

std::string megabytes(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// Labels follow the images in the shared block, on a cache-line boundary.
std::int64_t labels_offset(std::int64_t image_bytes) {
  return (image_bytes + 63) / 64 * 64;
}

// Keeps the node-shared block alive for as long as any source points into it.
struct NodeCopy {
  std::unique_ptr<comm::NodeSharedBuffer> buffer;
};

// With parallel HDF5, the cache fills open the file with MPI-IO on all ranks and read collectively:
// MPI-IO's aggregators then make few large requests to the (shared) filesystem for the whole job.
// A mapped source's files are the user's, in any layout: they are read with the POSIX driver.
std::unique_ptr<comm::MpiIoAccess> collective_access(const config::DataConfig& data,
                                                     const comm::Communicator& communicator) {
  if (!comm::MpiIoAccess::available() || data.source.enabled()) return nullptr;
  return std::make_unique<comm::MpiIoAccess>(communicator);
}

std::string reads_text(const std::unique_ptr<comm::MpiIoAccess>& access) {
  return access ? ", read with collective MPI-IO" : "";
}

std::shared_ptr<SampleSource> open_rank_cache(const config::DataConfig& data,
                                              const comm::Communicator& communicator) {
  const std::unique_ptr<comm::MpiIoAccess> access = collective_access(data, communicator);
  std::shared_ptr<Split> split;
  if (!access) {
    split = std::make_shared<Split>(read_whole_split(data, data.train_split));
  } else {
    const auto reader = open_split_reader(data, data.train_split, access.get());
    split = std::make_shared<Split>();
    split->name = reader->split().name;
    split->count = reader->split().count;
    split->height = reader->split().height;
    split->width = reader->split().width;
    split->channels = reader->split().channels;
    split->images.resize(static_cast<std::size_t>(split->count * split->image_bytes()));
    split->labels.resize(static_cast<std::size_t>(split->count));
    reader->read(0, split->count, split->images.data(), split->labels.data());
  }
  auto source = MemorySource::of_split(std::move(split));
  source->cache_description = "rank (a copy per rank" + reads_text(access) + ")";
  return source;
}

std::shared_ptr<SampleSource> open_node_cache(const config::DataConfig& data,
                                              const comm::Communicator& communicator) {
  const std::unique_ptr<comm::MpiIoAccess> access = collective_access(data, communicator);
  const auto reader = open_split_reader(data, data.train_split, access.get());
  const auto& split = reader->split();
  const std::int64_t image_total = split.count * reader->image_bytes();
  const std::int64_t offset = labels_offset(image_total);
  auto copy = std::make_shared<NodeCopy>();
  copy->buffer = std::make_unique<comm::NodeSharedBuffer>(
      communicator,
      static_cast<std::size_t>(offset + split.count * static_cast<std::int64_t>(sizeof(std::int32_t))));
  std::uint8_t* images = copy->buffer->data();
  auto* labels = reinterpret_cast<std::int32_t*>(copy->buffer->data() + offset);

  // Each rank of the node reads a contiguous run of whole chunks, so no chunk is read twice.
  const std::int64_t chunk = reader->chunk_samples();
  const std::int64_t chunk_count = (split.count + chunk - 1) / chunk;
  const int local_rank = copy->buffer->local_rank(), local_size = copy->buffer->local_size();
  const std::int64_t first_chunk = chunk_count * local_rank / local_size;
  const std::int64_t end_chunk = chunk_count * (local_rank + 1) / local_size;
  const std::int64_t begin = std::min(split.count, first_chunk * chunk);
  const std::int64_t end = std::min(split.count, end_chunk * chunk);
  std::exception_ptr failure;
  std::string failure_message;
  bool failure_is_input = true;
  try {
    reader->read(begin, end, images + begin * reader->image_bytes(), labels + begin);
  } catch (const Error& error) {
    failure = std::current_exception();
    failure_message = error.what();
    failure_is_input = error.kind() == ErrorKind::InvalidInput;
  } catch (const std::exception& error) {
    failure = std::current_exception();
    failure_message = error.what();
    failure_is_input = false;
  }
  // Every rank learns whether a read failed before anyone waits on the node barrier, and every
  // rank reports the failing rank's message (usually only rank 0's error reaches the user).
  double failed_rank = failure ? communicator.rank() : -1.0;
  communicator.allreduce_max(&failed_rank, 1);
  if (failed_rank >= 0) {
    const int source_rank = static_cast<int>(failed_rank);
    double input_error = failure_is_input ? 1.0 : 0.0;
    communicator.broadcast(&input_error, sizeof input_error, source_rank);
    communicator.broadcast_string(failure_message, source_rank);
    if (failure && communicator.rank() == source_rank) std::rethrow_exception(failure);
    const std::string message = "filling the node cache: " + failure_message;
    if (input_error > 0) throw_input_error(message);
    throw_internal_error(message, __FILE__, __LINE__);
  }
  copy->buffer->publish();

  auto source = std::make_shared<MemorySource>(split.name, split.count, split.height, split.width,
                                               split.channels, images, labels, copy);
  source->cache_description = "node (one " + megabytes(offset + split.count * 4) +
                              " copy per node, shared by " + std::to_string(local_size) + " ranks" +
                              reads_text(access) + ")";
  return source;
}

}  // namespace

std::string cache_mode_name(CacheMode mode) {
  switch (mode) {
    case CacheMode::Rank: return "rank";
    case CacheMode::Node: return "node";
    case CacheMode::None: return "none";
  }
  return "?";
}

std::int64_t cache_budget_bytes(double max_cache_gb) {
  if (max_cache_gb > 0) return static_cast<std::int64_t>(max_cache_gb * 1e9);
  const auto memory = usable_memory_bytes();
  if (!memory) return std::int64_t{4} << 30;  // unknown: a modest 4 GiB
  return static_cast<std::int64_t>(*memory / 2);
}

CacheChoice choose_cache(config::DataCache requested, std::int64_t split_bytes, int ranks_on_node,
                         std::int64_t budget_bytes) {
  const std::string sizes = megabytes(split_bytes) + " split, " + std::to_string(ranks_on_node) +
                            " ranks on this node, budget " + megabytes(budget_bytes) + " per node";
  switch (requested) {
    case config::DataCache::Rank: return {CacheMode::Rank, "data.cache: rank as configured (" + sizes + ")"};
    case config::DataCache::Node: return {CacheMode::Node, "data.cache: node as configured (" + sizes + ")"};
    case config::DataCache::None: return {CacheMode::None, "data.cache: none as configured (" + sizes + ")"};
    case config::DataCache::Auto: break;
  }
  if (split_bytes * std::max(1, ranks_on_node) <= budget_bytes)
    return {CacheMode::Rank, "data.cache: auto chose rank: a copy per rank fits (" + sizes + ")"};
  if (split_bytes <= budget_bytes)
    return {CacheMode::Node,
            "data.cache: auto chose node: one copy per node fits, one per rank would not (" + sizes + ")"};
  return {CacheMode::None,
          "data.cache: auto chose none (streaming): one copy exceeds the budget (" + sizes + ")"};
}

CacheChoice agree_on_cache(CacheChoice choice, const comm::Communicator& communicator) {
  const auto modes = communicator.allgather(static_cast<std::uint64_t>(choice.mode));
  const auto frugal = static_cast<CacheMode>(*std::max_element(modes.begin(), modes.end()));
  if (frugal == choice.mode) return choice;
  return {frugal, "data.cache: auto chose " + cache_mode_name(frugal) +
                      ", as another node's budget allows no more (this node's alone: " + choice.reason + ")"};
}

std::shared_ptr<SampleSource> open_training_source(const config::DataConfig& data,
                                                   const comm::Communicator& communicator) {
  const DatasetInfo info = read_source_info(data);
  const DatasetInfo::SplitInfo* split = info.find_split(data.train_split);
  PHALANX_REQUIRE_INPUT(split != nullptr, source_name(data), ": has no split '", data.train_split,
                        "' (data.train_split)");
  const std::int64_t split_bytes =
      split->count * (static_cast<std::int64_t>(split->height) * split->width * split->channels + 4);
  const CacheChoice choice = agree_on_cache(
      choose_cache(data.cache, split_bytes, communicator.local_size(), cache_budget_bytes(data.max_cache_gb)),
      communicator);
  std::shared_ptr<SampleSource> source;
  switch (choice.mode) {
    case CacheMode::Rank: source = open_rank_cache(data, communicator); break;
    case CacheMode::Node: source = open_node_cache(data, communicator); break;
    case CacheMode::None: {
      auto reader = open_split_reader(data, data.train_split);
      // The caches check every label as they fill, before the run starts; streaming would meet a
      // bad one mid-run, with the run directory written. Each rank checks its share of the labels
      // now (4 bytes a sample), and the set-up agreement makes any failure every rank's.
      const std::int64_t count = reader->split().count;
      reader->check_labels(count * communicator.rank() / communicator.size(),
                           count * (communicator.rank() + 1) / communicator.size());
      auto streaming =
          std::make_shared<StreamingSource>(std::move(reader), std::int64_t{data.stream_window_mb} << 20);
      streaming->cache_description = "none (streaming " + std::to_string(streaming->chunk_samples()) +
                                     "-sample chunks, shuffle window " +
                                     std::to_string(streaming->window_samples()) + " samples per rank)";
      source = std::move(streaming);
      break;
    }
  }
  source->cache_description += "; " + choice.reason;
  if (data.source.enabled()) {
    // What was read and how (layouts, scaling, carving), and chunkings worth a warning.
    const auto mapped = open_mapped_source(data.source);
    source->cache_description += "\n" + mapped->description();
    for (const std::string& warning : mapped->warnings()) source->cache_description += "\nwarning: " + warning;
  }
  return source;
}

}  // namespace phalanx::data
