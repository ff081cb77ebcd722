// Loader throughput: how many batches per second the loader thread prepares from a dataset file
// when the consumer takes them as fast as it can, i.e. the ceiling the data stage puts on
// training throughput (a step faster than this shows up as data wait).
#pragma once

#include <string>

#include "phalanx/data/augmentation.hpp"

namespace phalanx::benchmark {

struct LoaderSettings {
  std::string path;
  std::string split = "train";
  int batch_size = 64;
  int prefetch = 4;
  int batches = 500;  // at most; fewer when the split is smaller (one epoch)
  data::AugmentOptions augment;
};

struct LoaderResult {
  double read_seconds = 0;  // reading the split from HDF5 into memory (once per run)
  int batches = 0;
  double seconds = 0;  // consuming `batches`
  double images_per_second = 0, megabytes_per_second = 0, batches_per_second = 0;
};

LoaderResult benchmark_loader(const LoaderSettings& settings);

}  // namespace phalanx::benchmark
