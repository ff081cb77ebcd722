// data.cache: node under MPI. The ranks of a node fill one shared copy together; measured from
// /proc/self/smaps_rollup, the node's ranks together hold one copy (their proportional set sizes
// grow by one copy in total, their private memory hardly at all), where rank mode holds one per
// rank; and every sample read from the shared copy equals the same sample read by rank mode. In a
// parallel-HDF5 build both caches are filled with collective MPI-IO reads.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/mpi_io.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/importers.hpp"
#include "phalanx/data/training_source.hpp"
#include "support/test_support.hpp"

namespace phalanx {
namespace {

// Fields of /proc/self/smaps_rollup in bytes (Rss, Pss, Private_Dirty, ...). What the cache holds
// is measured, not what the allocator keeps after it was freed: a collective MPI-IO fill passes the
// data through an aggregator's buffers, which glibc keeps on its heap once freed (rank 0's private
// memory grew 4.5 to 7.7 MB over runs of the parallel flavour, against a 5 MB bound); handing those
// pages back first leaves only memory still in use.
std::map<std::string, double> memory_now() {
  malloc_trim(0);
  std::ifstream file("/proc/self/smaps_rollup");
  std::map<std::string, double> fields;
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream words(line);
    std::string key;
    double kilobytes = 0;
    if (words >> key >> kilobytes && key.back() == ':')
      fields[key.substr(0, key.size() - 1)] = kilobytes * 1024;
  }
  return fields;
}

double private_bytes(const std::map<std::string, double>& fields) {
  return fields.at("Private_Clean") + fields.at("Private_Dirty");
}

// Rank 0 writes a 3x32x32 dataset of about 25 MB; every rank gets its path.
std::string shared_dataset(const comm::Communicator& world, const std::string& name) {
  std::string path;
  if (world.rank() == 0) {
    static testing::ScratchDirectory scratch("node_cache");
    path = scratch.file(name);
    data::Split train;
    train.name = "train";
    train.count = 8192;
    train.height = train.width = 32;
    train.channels = 3;
    train.images.resize(static_cast<std::size_t>(train.count * train.image_bytes()));
    std::uint32_t state = 17;
    for (auto& byte : train.images)
      byte = static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
    for (std::int64_t sample = 0; sample < train.count; ++sample)
      train.labels.push_back(static_cast<std::int32_t>(sample % 10));
    data::Split test = train;
    test.name = "test";
    test.count = 16;
    test.images.resize(static_cast<std::size_t>(test.count * test.image_bytes()));
    test.labels.resize(16);
    data::write_dataset(path, data::digit_classes(), {&train, &test}, {.chunk_samples = 256});
  }
  world.broadcast_string(path, 0);
  return path;
}

struct Measured {
  double private_growth = 0;   // this rank
  double node_pss_growth = 0;  // summed over the node's ranks (one node here)
  std::vector<std::uint8_t> checksum_bytes;
};

// Opens the training split with `cache`, touches every byte (as training would over an epoch)
// and measures the memory it added.
Measured open_and_touch(const comm::Communicator& world, const std::string& path, const std::string& cache,
                        std::vector<std::uint8_t>& every_image) {
  config::DataConfig settings;
  settings.path = path;
  settings.cache = *config::word_named<config::DataCache>(cache);
  world.barrier();
  const auto before = memory_now();
  auto source = data::open_training_source(settings, world);
  // A parallel-HDF5 build fills the caches with collective MPI-IO reads, and says so.
  EXPECT_EQ(source->cache_description.find("collective MPI-IO") != std::string::npos,
            comm::MpiIoAccess::available())
      << source->cache_description;
  // Touch every sample one at a time (as an epoch of training would), measure, and only then
  // take a full copy for the comparison, so the copy is not counted as the cache's.
  std::uint64_t sum = 0;
  std::vector<std::uint8_t> one(static_cast<std::size_t>(source->image_bytes()));
  for (std::int64_t index = 0; index < source->count; ++index) {
    std::int32_t label = 0;
    source->gather(&index, 1, one.data(), &label);
    sum += one[0];
  }
  world.barrier();
  const auto after = memory_now();
  every_image.resize(static_cast<std::size_t>(source->count * source->image_bytes()));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(source->count));
  std::vector<std::int64_t> indices(static_cast<std::size_t>(source->count));
  for (std::size_t index = 0; index < indices.size(); ++index)
    indices[index] = static_cast<std::int64_t>(index);
  source->gather(indices.data(), indices.size(), every_image.data(), labels.data());
  Measured measured;
  measured.private_growth = private_bytes(after) - private_bytes(before);
  double pss = after.at("Pss") - before.at("Pss");
  world.allreduce_sum(&pss, 1);
  measured.node_pss_growth = pss;
  EXPECT_GT(sum, 0u);
  world.barrier();
  return measured;
}

TEST(NodeCache, OneCopyPerNodeAndTheSameBytesAsRankMode) {
  const auto world = comm::Communicator::world();
  ASSERT_EQ(world.local_size(), world.size()) << "this test runs on one node";
  const std::string path = shared_dataset(world, "node_cache.h5");
  const double copy = 8192.0 * 3 * 32 * 32;

  std::vector<std::uint8_t> from_node, from_rank;
  const Measured node = open_and_touch(world, path, "node", from_node);
  const Measured rank = open_and_touch(world, path, "rank", from_rank);
  if (world.rank() == 0)
    std::printf(
        "node cache: %d ranks, copy %.1f MB; node mode: node Pss +%.1f MB, rank 0 private +%.1f MB; "
        "rank mode: node Pss +%.1f MB, rank 0 private +%.1f MB\n",
        world.size(), copy / 1e6, node.node_pss_growth / 1e6, node.private_growth / 1e6,
        rank.node_pss_growth / 1e6, rank.private_growth / 1e6);
  // One copy per node: the ranks' proportional shares add up to about one copy (plus a little per
  // rank: HDF5's chunk cache, page tables), and no rank holds the data privately. A lone rank's
  // window is ordinary private memory in Open MPI, so that part needs two ranks or more.
  // Under TSan every touched page of the copy also gets shadow pages (several times its size, in
  // each rank that touches it), and under ASan shadow memory and the allocator's quarantine add to
  // every rank (node mode: +48 MB for a 25 MB copy with 4 ranks): the memory bounds hold only
  // without a sanitizer; the bytes are checked anyway.
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  // The upper bound is 2 copies, well apart from rank mode's 5: with the freed pages handed back,
  // node mode measures 1.15 copies in the parallel-HDF5 flavour (28.9 MB for a 25.2 MB copy on 4
  // ranks; 1.54 without the trim, as its collective fill's buffers stayed on the heap).
  EXPECT_GT(node.node_pss_growth, 0.8 * copy);
  EXPECT_LT(node.node_pss_growth, 2.0 * copy);
  if (world.local_size() > 1) {
    EXPECT_LT(node.private_growth, 0.2 * copy);
  }
  // Rank mode, for contrast: a private copy in every rank. Its growth can read a little under one
  // copy: memory the node phase freed (at one rank its window is private memory) may already be
  // counted before this phase and be reused by the allocator (89% seen once), so the bound leaves
  // room; node mode's 20% above keeps the contrast.
  EXPECT_GT(rank.private_growth, 0.75 * copy);
  EXPECT_GT(rank.node_pss_growth, 0.9 * copy * world.size());
#endif
  EXPECT_TRUE(from_node == from_rank) << "the node copy differs from the file's bytes";
}

// data.cache: auto decides per node (its rank count, its memory budget); the ranks then take the
// most frugal choice any of them made, and a rank whose own choice was not that one says why.
TEST(CacheAgreement, EveryRankTakesTheMostFrugalChoice) {
  const auto world = comm::Communicator::world();
  const auto last = world.size() - 1;
  const auto agreed = [&](data::CacheMode mine) { return data::agree_on_cache({mine, "mine"}, world); };
  const auto all_rank = agreed(data::CacheMode::Rank);
  EXPECT_EQ(all_rank.mode, data::CacheMode::Rank);
  EXPECT_EQ(all_rank.reason, "mine");  // its own choice, its own words
  // The last rank's node holds no copy: every rank streams.
  const auto one_streams = agreed(world.rank() == last ? data::CacheMode::None : data::CacheMode::Rank);
  EXPECT_EQ(one_streams.mode, data::CacheMode::None);
  if (world.rank() != last && world.size() > 1) {
    EXPECT_NE(one_streams.reason.find("auto chose none, as another node's budget allows no more"),
              std::string::npos)
        << one_streams.reason;
    EXPECT_NE(one_streams.reason.find("(this node's alone: mine)"), std::string::npos) << one_streams.reason;
  }
  // A node copy somewhere and per-rank copies elsewhere: the node copy everywhere.
  const auto one_node = agreed(world.rank() == 0 ? data::CacheMode::Node : data::CacheMode::Rank);
  EXPECT_EQ(one_node.mode, data::CacheMode::Node);
}

}  // namespace
}  // namespace phalanx
