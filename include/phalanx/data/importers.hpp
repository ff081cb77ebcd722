// Importers that turn other formats into the phalanx HDF5 dataset, and a synthetic generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/config/config.hpp"
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

enum class CifarVariant { Cifar10, Cifar100 };

// Reads the CIFAR binary files (CIFAR-10: data_batch_1.bin..data_batch_5.bin, test_batch.bin;
// CIFAR-100: train.bin, test.bin, using the fine label) from `directory` or from its standard
// subfolder (cifar-10-batches-bin/, cifar-100-binary/) and writes `output_path` as NHWC uint8
// [N, 32, 32, 3]. Class names come from batches.meta.txt / fine_label_names.txt when present.
// `validation_fraction` in [0, 0.5] moves that share of train, chosen by a permutation that
// depends only on `seed`, into a "val" split.
void import_cifar(const std::string& directory, const std::string& output_path, CifarVariant variant,
                  const WriteOptions& options = {}, double validation_fraction = 0.0, std::uint64_t seed = 0);

// The ten CIFAR-10 class names in label order (used when batches.meta.txt is absent).
std::vector<std::string> cifar10_classes();

struct SynthOptions {
  std::int64_t train_count = 1024;
  std::int64_t test_count = 256;
  int height = 28, width = 28, channels = 1;
  int classes = 10;
  std::uint64_t seed = 0;
};

// Random images whose class is learnable (each class has its own mean pattern plus noise), so
// synthetic data can also check that training makes progress.
void synthesize(const std::string& output_path, const SynthOptions& options,
                const WriteOptions& write_options = {});

// Human-readable summary of a dataset file (classes, splits, shapes, mean/std, label histogram).
std::string inspect(const std::string& path);
// Several files: each phalanx dataset as above; the other HDF5 files' trees and one data.source
// block over all of them (images and labels in separate files).
std::string inspect(const std::vector<std::string>& paths);

// Copies a mapped source (data.source: the user's own HDF5 files, any layout) into the phalanx
// schema at `output_path`: images NHWC uint8 as the trainer reads them, labels int32, carved
// splits as carved, mean and std of train. For users who want a copy chunked for phalanx.
void import_mapped_source(const config::SourceConfig& source, const std::string& output_path,
                          const WriteOptions& options = {});

}  // namespace phalanx::data
