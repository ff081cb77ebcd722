// Importers that turn other formats into the phalanx HDF5 dataset, and a synthetic generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/data/dataset.hpp"

namespace phalanx::data {

// Reads the four standard gzip IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz; plain, uncompressed files also accepted)
// from `directory` and writes `output_path`. `classes` names the classes (size decides the count);
// empty means "0".."9".
void import_idx(const std::string& directory, const std::string& output_path,
                const std::vector<std::string>& classes, const WriteOptions& options = {});

// Class names of the well-known IDX datasets.
std::vector<std::string> fashion_mnist_classes();
std::vector<std::string> digit_classes();

struct SynthOptions {
  std::int64_t train_count = 1024;
  std::int64_t test_count = 256;
  int height = 28, width = 28, channels = 1;
  int classes = 10;
  std::uint64_t seed = 0;
};

// Random images whose class is learnable (each class has its own mean pattern plus noise), so
// synthetic data can also check that training makes progress.
void synthesize(const std::string& output_path, const SynthOptions& options, const WriteOptions& write_options = {});

// Human-readable summary of a dataset file (classes, splits, shapes, mean/std, label histogram).
std::string inspect(const std::string& path);

}  // namespace phalanx::data
