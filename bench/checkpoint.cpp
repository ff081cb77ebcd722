// What the checkpoint checksums cost: writing and loading a ResNet-50 checkpoint with AdamW state
// (weights, buffers, two optimizer states: about 300 MB), against XXH64 alone over the same bytes,
// which the writer and the loader each compute once, and the seal's check alone (the whole file
// read and hashed, as every load does first), and the object-header checks alone (each object's
// header read and checked, as a load does before HDF5 decodes it; here for every object of the
// file). Prints medians over repeats.
//   ./phalanx_bench_checkpoint [FOLDER] [REPEATS]
#include "phalanx/train/checkpoint.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/median.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/checked_file_driver.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "phalanx/data/hdf5_objects.hpp"
#include "phalanx/data/object_header_check.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/optimizer.hpp"
#include "phalanx/train/checkpoint_seal.hpp"

using namespace phalanx;

namespace {

// Checks the header of every object in the checkpoint; returns how many there were.
int check_every_object_header(const std::string& path) {
  const auto hdf5_lock = data::lock_hdf5();
  const data::detail::Hdf5Handle access = data::detail::checked_file_access();
  const data::detail::Hdf5Handle file =
      data::detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
  std::vector<std::string> names;
  data::detail::visit_objects(file.get(), [&](const char* name, H5O_type_t) -> herr_t {
    // Absolute names, as a load asks for them ("/" appended to: GCC 12 warns falsely,
    // -Wrestrict, on "/" + std::string at -O3).
    std::string absolute = "/";
    if (std::string(name) != ".") absolute += name;
    names.push_back(absolute);
    return 0;
  });
  for (const std::string& name : names) data::detail::check_object_header(file.get(), name, path);
  return static_cast<int>(names.size());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string folder = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string path = folder + "/phalanx-bench-checkpoint-" + std::to_string(::getpid()) + ".h5";
  auto backend = backend::make_cpu_backend(1);
  config::ModelConfig model_config;
  model_config.preset = "resnet50";
  nn::Model model(model_config, Shape{224, 224, 3}, 1000, *backend, 1);
  config::OptimizerConfig optimizer_config;
  optimizer_config.type = config::OptimizerType::AdamW;
  auto& registry = model.registry();
  auto optimizer = optim::make_optimizer(optimizer_config, *backend, registry.parameter_count());

  // The bytes the checksums cover, in host memory as the writer holds them.
  std::vector<float> host(static_cast<std::size_t>(registry.parameter_count() * 3 + registry.buffer_count()));
  std::size_t filled = 0;
  auto append = [&](const Tensor& tensor, std::int64_t count) {
    backend->copy_to_host(host.data() + filled, tensor.data(),
                          static_cast<std::size_t>(count) * sizeof(float));
    filled += static_cast<std::size_t>(count);
  };
  append(registry.parameters(), registry.parameter_count());
  append(registry.buffers(), registry.buffer_count());
  for (const auto& name : optimizer->state_names())
    append(optimizer->state(name), registry.parameter_count());

  std::vector<double> write_seconds, load_seconds, hash_seconds, seal_seconds, header_seconds;
  int objects = 0;
  const train::TrainingPosition position{};
  for (int repeat = 0; repeat < repeats; ++repeat) {
    Stopwatch write_clock;
    train::write_checkpoint(path, *backend, registry, optimizer.get(), position, 1, 1, "bench");
    write_seconds.push_back(write_clock.seconds());
    Stopwatch load_clock;
    train::load_checkpoint(path, *backend, registry, optimizer.get());
    load_seconds.push_back(load_clock.seconds());
    Stopwatch seal_clock;
    const train::SealCheck seal = train::check_checkpoint_seal(path);
    seal_seconds.push_back(seal_clock.seconds());
    if (seal.state != train::SealState::Sealed) std::printf("the checkpoint is not sealed\n");
    Stopwatch header_clock;
    objects = check_every_object_header(path);
    header_seconds.push_back(header_clock.seconds());
    Stopwatch hash_clock;
    const auto checksum = data::checksum_text(host.data(), filled * sizeof(float));
    hash_seconds.push_back(hash_clock.seconds());
    if (checksum.empty()) return 1;
  }
  std::filesystem::remove(path);
  const double megabytes = static_cast<double>(filled * sizeof(float)) / 1e6;
  const double hash = median(hash_seconds);
  std::printf("resnet50 + AdamW checkpoint: %.1f MB of float datasets, %d repeats (medians)\n", megabytes,
              repeats);
  std::printf("write %.3f s  load %.3f s  xxh64 over the same bytes %.3f s (%.0f MB/s)\n",
              median(write_seconds), median(load_seconds), hash, megabytes / hash);
  std::printf("checksum share: %.1f%% of a write, %.1f%% of a load\n", 100 * hash / median(write_seconds),
              100 * hash / median(load_seconds));
  std::printf("seal check alone (read and hash the file) %.3f s: %.1f%% of a load\n", median(seal_seconds),
              100 * median(seal_seconds) / median(load_seconds));
  std::printf("object-header checks alone (%d objects) %.4f s: %.1f%% of a load\n", objects,
              median(header_seconds), 100 * median(header_seconds) / median(load_seconds));
  return 0;
}
