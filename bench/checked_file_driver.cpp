// What the checked file driver costs against HDF5's sec2 driver, which it replaced under the
// dataset readers. The same phalanx dataset (Fashion-MNIST-shaped, 1024-sample chunks with
// Fletcher-32, as `data synth` and the importers write it) read two ways, only the file-access
// property list differing:
//   - a streaming epoch: the training split in batches of 256, images and labels, as SplitReader
//     reads it with data.cache: none (the read hot path; the driver adds one comparison per read);
//   - an open that reads the class names: the root's variable-length strings live in a global heap
//     collection, which the checked driver walks before HDF5 parses it (plus its superblock probe).
// And the gzip chunk check (checked_chunk_decoding.hpp): the same epoch of a gzip-compressed copy
// (background pixels zero, as in Fashion-MNIST), both through the checked driver, read with plain
// H5Dread (0) and with read_checked in a first epoch (1: the driver inflates each chunk once more
// to count it) and in later ones (2: a chunk that passed is known by a hash of its bytes).
// Interleaved so that both see the same machine load:
//   ./phalanx_bench_checked_file_driver --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include "phalanx/data/checked_file_driver.hpp"

#include <benchmark/benchmark.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "phalanx/data/checked_chunk_decoding.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/importers.hpp"

namespace {

namespace detail = phalanx::data::detail;
using detail::Hdf5Handle;

constexpr std::int64_t train_samples = 20480, test_samples = 1024, batch = 256;

class ScratchDataset {
 public:
  // `gzip_level` 0: uncompressed, random pixels; otherwise gzip, with 60% of the pixels zero.
  explicit ScratchDataset(int gzip_level)
      : path_((std::filesystem::temp_directory_path() /
               ("phalanx-bench-checked-driver-" + std::to_string(::getpid()) + "-" +
                std::to_string(gzip_level) + ".h5"))
                  .string()) {
    std::mt19937 generator(5);
    const auto make = [&](const char* name, std::int64_t count) {
      phalanx::data::Split split;
      split.name = name;
      split.count = count;
      split.height = split.width = 28;
      split.channels = 1;
      split.images.resize(static_cast<std::size_t>(count * 784));
      for (auto& pixel : split.images) {
        const auto value = static_cast<std::uint8_t>(generator());
        pixel = gzip_level > 0 && value < 154 ? 0 : value;
      }
      for (std::int64_t index = 0; index < count; ++index)
        split.labels.push_back(static_cast<std::int32_t>(index % 10));
      return split;
    };
    const phalanx::data::Split train = make("train", train_samples), test = make("test", test_samples);
    phalanx::data::write_dataset(path_, phalanx::data::digit_classes(), {&train, &test},
                                 {.gzip_level = gzip_level});
  }
  ~ScratchDataset() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& dataset_path() {
  static const ScratchDataset dataset(0);
  return dataset.path();
}

const std::string& gzip_dataset_path() {
  static const ScratchDataset dataset(4);
  return dataset.path();
}

// Driver 0: HDF5's sec2; 1: the checked driver.
Hdf5Handle file_access(std::int64_t driver) {
  if (driver == 1) return detail::checked_file_access();
  Hdf5Handle access = detail::property_list_handle(H5Pcreate(H5P_FILE_ACCESS));
  H5Pset_fapl_sec2(access.get());
  return access;
}

using Read = herr_t (*)(hid_t, hid_t, hid_t, hid_t, hid_t, void*);

// One streamed epoch of `file`'s training split in batches of 256; false when a read failed.
bool stream_epoch(hid_t file, Read read, std::vector<std::uint8_t>& images,
                  std::vector<std::int32_t>& labels) {
  const Hdf5Handle image_set = detail::dataset_handle(H5Dopen2(file, "/train/images", H5P_DEFAULT));
  const Hdf5Handle label_set = detail::dataset_handle(H5Dopen2(file, "/train/labels", H5P_DEFAULT));
  const Hdf5Handle image_space = detail::dataspace_handle(H5Dget_space(image_set.get()));
  const Hdf5Handle label_space = detail::dataspace_handle(H5Dget_space(label_set.get()));
  const hsize_t image_count[4] = {batch, 28, 28, 1};
  const hsize_t label_count = batch;
  const Hdf5Handle image_memory = detail::dataspace_handle(H5Screate_simple(4, image_count, nullptr));
  const Hdf5Handle label_memory = detail::dataspace_handle(H5Screate_simple(1, &label_count, nullptr));
  for (std::int64_t begin = 0; begin < train_samples; begin += batch) {
    const hsize_t image_start[4] = {static_cast<hsize_t>(begin), 0, 0, 0};
    const hsize_t label_start = static_cast<hsize_t>(begin);
    H5Sselect_hyperslab(image_space.get(), H5S_SELECT_SET, image_start, nullptr, image_count, nullptr);
    H5Sselect_hyperslab(label_space.get(), H5S_SELECT_SET, &label_start, nullptr, &label_count, nullptr);
    if (read(image_set.get(), H5T_NATIVE_UINT8, image_memory.get(), image_space.get(), H5P_DEFAULT,
             images.data()) < 0 ||
        read(label_set.get(), H5T_NATIVE_INT32, label_memory.get(), label_space.get(), H5P_DEFAULT,
             labels.data()) < 0)
      return false;
    benchmark::DoNotOptimize(images.data());
  }
  return true;
}

void StreamingEpoch(benchmark::State& state) {
  const std::string& path = dataset_path();
  const Hdf5Handle access = file_access(state.range(0));
  std::vector<std::uint8_t> images(static_cast<std::size_t>(batch * 784));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (auto _ : state) {
    const Hdf5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
    if (!stream_epoch(file.get(), H5Dread, images, labels)) {
      state.SkipWithError("read failed");
      return;
    }
  }
  state.SetLabel(state.range(0) == 1 ? "checked" : "sec2");
  state.SetBytesProcessed(state.iterations() * train_samples * (784 + 4));
}
BENCHMARK(StreamingEpoch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// 0: H5Dread; 1: read_checked, the file opened afresh (a first epoch: every chunk inflated twice);
// 2: read_checked, the file kept open from a first epoch before the timing (later epochs: each
// chunk hashed, found among those that passed, and inflated by HDF5 alone).
void StreamingGzipEpoch(benchmark::State& state) {
  const std::string& path = gzip_dataset_path();
  const Hdf5Handle access = detail::checked_file_access();
  std::vector<std::uint8_t> images(static_cast<std::size_t>(batch * 784));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  const Read read = state.range(0) > 0 ? detail::read_checked : H5Dread;
  // Only for 2: an open file is shared by HDF5 with every other open of it, passed chunks and all.
  const Hdf5Handle kept = state.range(0) == 2
                              ? detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()))
                              : Hdf5Handle();
  if (state.range(0) == 2 && !stream_epoch(kept.get(), read, images, labels))
    state.SkipWithError("read failed");
  for (auto _ : state) {
    const Hdf5Handle file = state.range(0) == 2
                                ? Hdf5Handle()
                                : detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
    if (!stream_epoch(state.range(0) == 2 ? kept.get() : file.get(), read, images, labels)) {
      state.SkipWithError("read failed");
      return;
    }
  }
  state.SetLabel(state.range(0) == 0   ? "H5Dread"
                 : state.range(0) == 1 ? "read_checked, first epoch"
                                       : "read_checked, later epochs");
  state.SetBytesProcessed(state.iterations() * train_samples * (784 + 4));
}
BENCHMARK(StreamingGzipEpoch)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void OpenAndReadClassNames(benchmark::State& state) {
  const std::string& path = dataset_path();
  const Hdf5Handle access = file_access(state.range(0));
  const Hdf5Handle type = detail::variable_string_type();
  std::vector<char*> names(10, nullptr);
  for (auto _ : state) {
    const Hdf5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
    const Hdf5Handle classes = detail::attribute_handle(H5Aopen(file.get(), "classes", H5P_DEFAULT));
    const Hdf5Handle space = detail::dataspace_handle(H5Aget_space(classes.get()));
    if (H5Aread(classes.get(), type.get(), names.data()) < 0) {
      state.SkipWithError("read failed");
      return;
    }
    benchmark::DoNotOptimize(names[0]);
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, names.data());
  }
  state.SetLabel(state.range(0) == 1 ? "checked" : "sec2");
}
BENCHMARK(OpenAndReadClassNames)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
