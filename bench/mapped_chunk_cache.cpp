// What sizing a mapped source's chunk cache buys (MappedSplitReader keeps two chunk bands; HDF5's
// default is 1 MiB per dataset). A user's file of float32 NCHW images chunked 1024 samples along N,
// gzip 1 (3.2 MB per chunk at 28x28: larger than the default cache), read the way a carved split
// or a batch that crosses chunk boundaries reads it: runs of a few consecutive samples, in file
// order. With a cache too small for one chunk, HDF5 decompresses the whole chunk again for every
// run; with two bands it decompresses each chunk once. Same reads, same file, only the dataset
// access property list differs:
//   ./phalanx_bench_mapped_chunk_cache [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr hsize_t samples = 12288, height = 28, width = 28, chunk_samples = 1024;
constexpr hsize_t sample_values = height * width;

class ScratchFile {
 public:
  ScratchFile() {
    path_ = (std::filesystem::temp_directory_path() /
             ("phalanx-bench-chunk-cache-" + std::to_string(::getpid()) + ".h5"))
                .string();
    std::vector<float> values(samples * sample_values);
    std::mt19937 generator(3);
    for (auto& value : values) value = static_cast<float>(generator() % 256) / 255.0f;
    const hid_t file = H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t shape[4] = {samples, 1, height, width};
    const hsize_t chunk[4] = {chunk_samples, 1, height, width};
    const hid_t space = H5Screate_simple(4, shape, nullptr);
    const hid_t creation = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(creation, 4, chunk);
    H5Pset_deflate(creation, 1);
    const hid_t dataset =
        H5Dcreate2(file, "/images", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, creation, H5P_DEFAULT);
    if (dataset < 0 || H5Dwrite(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
      throw std::runtime_error("cannot write " + path_);
    H5Dclose(dataset);
    H5Pclose(creation);
    H5Sclose(space);
    H5Fclose(file);
  }
  ~ScratchFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const ScratchFile& scratch() {
  static const ScratchFile file;
  return file;
}

// Reads every sample once in runs of `run` consecutive samples; the cache holds `cache_bytes`
// (0: HDF5's default access properties).
void ReadRuns(benchmark::State& state) {
  const auto run = static_cast<hsize_t>(state.range(0));
  const bool sized = state.range(1) != 0;
  // Two chunk bands, as MappedSplitReader sizes it; the slot count a prime well above the chunks.
  const std::size_t band_bytes = chunk_samples * sample_values * sizeof(float);
  const hid_t file = H5Fopen(scratch().path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t access = H5Pcreate(H5P_DATASET_ACCESS);
  if (sized) H5Pset_chunk_cache(access, 521, 2 * band_bytes, 1.0);
  const hid_t dataset = H5Dopen2(file, "/images", access);
  std::vector<float> buffer(run * sample_values);
  const hsize_t memory_shape[4] = {run, 1, height, width};
  const hid_t memory = H5Screate_simple(4, memory_shape, nullptr);
  const hid_t space = H5Dget_space(dataset);
  std::int64_t reads = 0;
  for (auto _ : state) {
    for (hsize_t first = 0; first + run <= samples; first += run) {
      const hsize_t start[4] = {first, 0, 0, 0};
      H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, memory_shape, nullptr);
      if (H5Dread(dataset, H5T_NATIVE_FLOAT, memory, space, H5P_DEFAULT, buffer.data()) < 0)
        state.SkipWithError("H5Dread failed");
      benchmark::DoNotOptimize(buffer[0]);
      ++reads;
    }
  }
  state.SetItemsProcessed(reads * static_cast<std::int64_t>(run));
  state.SetLabel(sized ? "cache: two chunk bands" : "cache: HDF5 default (1 MiB)");
  H5Sclose(space);
  H5Sclose(memory);
  H5Dclose(dataset);
  H5Pclose(access);
  H5Fclose(file);
}
// Runs of 16 and 256 samples (a carved split's runs; a batch), default then sized cache.
BENCHMARK(ReadRuns)
    ->ArgsProduct({{16, 256}, {0, 1}})
    ->ArgNames({"run", "sized"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
