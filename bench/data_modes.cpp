// Loader throughput per data.cache mode under MPI: every rank opens the training split as the
// trainer does (rank copy, node-shared copy, or streaming), runs the Loader over `--batches`
// batches of its shard and reports images/s; rank 0 prints the median and slowest rank and the
// node's memory (smaps_rollup: proportional set size summed over ranks, private memory per rank).
//   mpirun -np 4 ./phalanx_bench_data_modes FILE.h5 --cache node --batch 256 --batches 400
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/core/allocator.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/loader.hpp"
#include "phalanx/data/training_source.hpp"

namespace {

double smaps_bytes(const std::string& field) {
  std::ifstream file("/proc/self/smaps_rollup");
  std::string line;
  double total = 0;
  while (std::getline(file, line)) {
    std::istringstream words(line);
    std::string key;
    double kilobytes = 0;
    if (words >> key >> kilobytes && key == field + ":") total += kilobytes * 1024;
  }
  return total;
}

double private_bytes() {
  return smaps_bytes("Private_Clean") + smaps_bytes("Private_Dirty");
}

}  // namespace

int main(int argc, char** argv) {
  phalanx::comm::MpiSession session(&argc, &argv);
  const auto world = phalanx::comm::Communicator::world();
  if (argc < 2) {
    if (world.rank() == 0)
      std::fprintf(stderr,
                   "usage: %s FILE.h5 [--cache rank|node|none] [--batch B] [--batches N] [--window-mb M]\n",
                   argv[0]);
    return 2;
  }
  phalanx::config::DataConfig settings;
  settings.path = argv[1];
  settings.cache = phalanx::config::DataCache::Rank;
  int batch = 256, prefetch = 4;
  std::int64_t batches = 200;
  for (int index = 2; index + 1 < argc; index += 2) {
    const std::string option = argv[index], value = argv[index + 1];
    if (option == "--cache") settings.cache = phalanx::config::word_named<phalanx::config::DataCache>(value).value_or(phalanx::config::DataCache::Auto);
    if (option == "--batch") batch = std::atoi(value.c_str());
    if (option == "--batches") batches = std::atoll(value.c_str());
    if (option == "--window-mb") settings.stream_window_mb = std::atoi(value.c_str());
  }
  try {
    world.barrier();
    const double private_before = private_bytes(), pss_before = smaps_bytes("Pss");
    phalanx::Stopwatch open_time;
    auto source = phalanx::data::open_training_source(settings, world);
    const double open_seconds = open_time.seconds();
    const phalanx::data::ShardPlan plan(source->count, batch, world.rank(), world.size(), 1, source->order());
    const std::int64_t epochs = (batches + plan.steps_per_epoch() - 1) / plan.steps_per_epoch();
    world.barrier();
    phalanx::Stopwatch stopwatch;
    std::int64_t images = 0;
    {
      phalanx::data::Loader loader(source, plan, prefetch, 0, 0, epochs, phalanx::HostAllocator::instance());
      for (std::int64_t count = 0; count < batches; ++count) {
        const auto* next = loader.next();
        if (!next) break;
        images += next->size;
      }
    }
    const double seconds = stopwatch.seconds();
    const double rate = static_cast<double>(images) / seconds;
    double pss = smaps_bytes("Pss") - pss_before;
    const double private_growth = private_bytes() - private_before;
    world.allreduce_sum(&pss, 1);
    std::vector<double> rates = world.allgather(rate);
    std::vector<double> privates = world.allgather(private_growth);
    if (world.rank() == 0) {
      std::sort(rates.begin(), rates.end());
      std::printf(
          "cache %s, %d ranks, %lld samples of %dx%dx%d, batch %d: median %.0f img/s per rank "
          "(slowest %.0f), open %.2f s; node Pss +%.0f MB, private per rank +%.0f MB (max)\n",
          phalanx::config::name_of(settings.cache).c_str(), world.size(), static_cast<long long>(source->count), source->channels,
          source->height, source->width, batch, rates[rates.size() / 2], rates.front(), open_seconds,
          pss / 1e6, *std::max_element(privates.begin(), privates.end()) / 1e6);
      std::printf("  %s\n", source->cache_description.c_str());
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rank %d: %s\n", world.rank(), error.what());
    phalanx::comm::MpiSession::abort(1);
  }
  return 0;
}
