// `phalanx data import-idx | import-cifar | import-images | import-hdf5 | synth | inspect | preview`: dataset
// preparation, no MPI needed.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/image_folder.hpp"
#include "phalanx/data/importers.hpp"
#include "phalanx/data/preview.hpp"

namespace phalanx::cli {
namespace {

std::vector<std::string> class_names(const std::string& choice) {
  if (choice == "fashion" || choice == "fashion-mnist") return data::fashion_mnist_classes();
  if (choice == "digits" || choice == "mnist" || choice.empty()) return data::digit_classes();
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= choice.size()) {
    const auto comma = choice.find(',', start);
    names.push_back(choice.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const auto& name : names)
    PHALANX_REQUIRE_INPUT(!name.empty(), "--classes: empty class name in '", choice, "'");
  return names;
}

}  // namespace

std::function<int()> add_data_command(CLI::App& app) {
  auto* data_command = app.add_subcommand("data", "Prepare datasets (HDF5)");
  data_command->require_subcommand(1);

  struct Arguments {
    std::string input, output, classes = "digits";
    std::vector<std::string> inspected;
    data::WriteOptions write;
    data::SynthOptions synth;
    bool cifar100 = false;
    double validation_fraction = 0.0;
    std::uint64_t validation_seed = 0;
    bool verify = false;
    data::PreviewOptions preview;
    data::ImageFolderOptions images;
    std::string size;
  };
  auto arguments = std::make_shared<Arguments>();

  auto* import_idx = data_command->add_subcommand("import-idx", "Import MNIST-style gzip IDX files");
  import_idx
      ->add_option("directory", arguments->input,
                   "Folder with train-images-idx3-ubyte.gz and the other three")
      ->required();
  import_idx->add_option("-o,--output", arguments->output, "Output dataset (.h5)")->required();
  import_idx->add_option("--classes", arguments->classes,
                         "Class names: 'digits' (default), 'fashion', or a comma-separated list");
  import_idx->add_option("--chunk", arguments->write.chunk_samples, "Samples per HDF5 chunk (default 1024)");
  import_idx->add_option("--gzip", arguments->write.gzip_level, "gzip level 0-9 (default 0: none)");
  import_idx->add_flag("--lzf", arguments->write.lzf, "LZF compression (needs the HDF5 LZF plugin)");

  auto* import_cifar = data_command->add_subcommand("import-cifar", "Import the CIFAR-10/100 binary format");
  import_cifar
      ->add_option(
          "directory", arguments->input,
          "Folder with data_batch_1.bin.. (CIFAR-10) or train.bin (CIFAR-100), or their archive folder")
      ->required();
  import_cifar->add_option("-o,--output", arguments->output, "Output dataset (.h5)")->required();
  import_cifar->add_flag("--cifar100", arguments->cifar100, "CIFAR-100 (fine labels) instead of CIFAR-10");
  import_cifar->add_option("--val-fraction", arguments->validation_fraction,
                           "Share of train moved to a 'val' split, 0-0.5 (default 0: none)");
  // CLI11 wraps "-1" into a huge unsigned seed; refusing negatives keeps a typo from passing silently.
  import_cifar->add_option("--seed", arguments->validation_seed, "Seed of the val split (default 0)")
      ->check([](const std::string& text) {
        return text.find('-') == std::string::npos ? std::string() : "must be >= 0 (got " + text + ")";
      });
  import_cifar->add_option("--chunk", arguments->write.chunk_samples,
                           "Samples per HDF5 chunk (default 1024)");
  import_cifar->add_option("--gzip", arguments->write.gzip_level, "gzip level 0-9 (default 0: none)");
  import_cifar->add_flag("--lzf", arguments->write.lzf, "LZF compression (needs the HDF5 LZF plugin)");

  auto* import_images = data_command->add_subcommand(
      "import-images",
      "Import a folder tree of PNG/JPEG images, one folder per class (or train/ and test/ trees)");
  import_images->add_option("directory", arguments->input, "Folder with one subfolder of images per class")
      ->required();
  import_images->add_option("-o,--output", arguments->output, "Output dataset (.h5)")->required();
  import_images->add_option("--size", arguments->size, "Stored image size HxW, e.g. 64x64 (default 32x32)");
  import_images->add_option("--channels", arguments->images.channels, "3: RGB (default), 1: grey");
  import_images->add_option(
      "--test-fraction", arguments->images.test_fraction,
      "Share of each class kept for test when there is no test/ tree, in [0, 1) (default 0.2)");
  import_images->add_option("--val-fraction", arguments->images.validation_fraction,
                            "Share of train moved to a 'val' split, 0-0.5 (default 0: none)");
  import_images
      ->add_option("--seed", arguments->images.seed, "Seed of the splits and the stored order (default 0)")
      ->check([](const std::string& text) {
        return text.find('-') == std::string::npos ? std::string() : "must be >= 0 (got " + text + ")";
      });
  import_images
      ->add_option("--threads", arguments->images.threads,
                   "Decoding threads, 0-1024 (default 0: one per core the job may run on)")
      ->check(CLI::Range(0, 1024));
  import_images->add_option("--chunk", arguments->write.chunk_samples,
                            "Samples per HDF5 chunk (default 1024)");
  import_images->add_option("--gzip", arguments->write.gzip_level, "gzip level 0-9 (default 0: none)");
  import_images->add_flag("--lzf", arguments->write.lzf, "LZF compression (needs the HDF5 LZF plugin)");

  auto* synth = data_command->add_subcommand("synth", "Write a synthetic dataset of any shape");
  synth->add_option("-o,--output", arguments->output, "Output dataset (.h5)")->required();
  synth->add_option("--train", arguments->synth.train_count, "Training samples (default 1024)");
  synth->add_option("--test", arguments->synth.test_count, "Test samples (default 256)");
  synth->add_option("--height", arguments->synth.height, "Image height (default 28)");
  synth->add_option("--width", arguments->synth.width, "Image width (default 28)");
  synth->add_option("--channels", arguments->synth.channels, "Channels (default 1)");
  synth->add_option("--classes", arguments->synth.classes, "Classes (default 10)");
  synth->add_option("--seed", arguments->synth.seed, "Seed (default 0)");
  synth->add_option("--chunk", arguments->write.chunk_samples, "Samples per HDF5 chunk (default 1024)");
  synth->add_option("--gzip", arguments->write.gzip_level, "gzip level 0-9 (default 0: none)");
  synth->add_flag("--lzf", arguments->write.lzf, "LZF compression (needs the HDF5 LZF plugin)");

  auto* import_hdf5 = data_command->add_subcommand(
      "import-hdf5", "Copy a data.source mapping (your own HDF5 files, any layout) into the phalanx schema");
  import_hdf5
      ->add_option("config", arguments->input,
                   "YAML file with a data.source block (a training config, or just data.source)")
      ->required();
  import_hdf5->add_option("-o,--output", arguments->output, "Output dataset (.h5)")->required();
  import_hdf5->add_option("--chunk", arguments->write.chunk_samples, "Samples per HDF5 chunk (default 1024)");
  import_hdf5->add_option("--gzip", arguments->write.gzip_level, "gzip level 0-9 (default 0: none)");
  import_hdf5->add_flag("--lzf", arguments->write.lzf, "LZF compression (needs the HDF5 LZF plugin)");

  auto* inspect = data_command->add_subcommand(
      "inspect", "Describe a dataset file, or any HDF5 file's tree with a data.source block to paste");
  inspect
      ->add_option("files", arguments->inspected,
                   "Dataset or any HDF5 files (.h5); name images and labels kept in separate files together")
      ->required();
  inspect->add_flag("--verify", arguments->verify,
                    "Recompute the checksums stored at import (reads every byte); exit 2 if any differ");

  auto* preview =
      data_command->add_subcommand("preview", "Draw a PNG grid of samples with their class names");
  preview->add_option("file", arguments->input, "Dataset (.h5)")->required();
  preview->add_option("-o,--output", arguments->output, "Output image (.png)")->required();
  preview->add_option("--split", arguments->preview.split, "Split to show (default train)");
  preview->add_option("--count", arguments->preview.count, "Samples to show, 1-1024 (default 64)");
  // As for import-cifar: CLI11 would wrap "-1" into a huge unsigned seed.
  preview->add_option("--seed", arguments->preview.seed, "Which samples: same seed, same samples (default 0)")
      ->check([](const std::string& text) {
        return text.find('-') == std::string::npos ? std::string() : "must be >= 0 (got " + text + ")";
      });

  return [=]() -> int {
    if (!*data_command) return -1;
    Stopwatch stopwatch;
    if (*import_idx) {
      PHALANX_REQUIRE_INPUT(arguments->write.gzip_level >= 0 && arguments->write.gzip_level <= 9,
                            "--gzip must be in 0..9 (got ", arguments->write.gzip_level, ")");
      PHALANX_REQUIRE_INPUT(arguments->write.chunk_samples >= 1, "--chunk must be >= 1");
      data::import_idx(arguments->input, arguments->output, class_names(arguments->classes),
                       arguments->write);
      std::printf("imported %s into %s in %.2f s\n", arguments->input.c_str(), arguments->output.c_str(),
                  stopwatch.seconds());
      std::printf("%s", data::inspect(arguments->output).c_str());
    } else if (*import_hdf5) {
      PHALANX_REQUIRE_INPUT(arguments->write.gzip_level >= 0 && arguments->write.gzip_level <= 9,
                            "--gzip must be in 0..9 (got ", arguments->write.gzip_level, ")");
      PHALANX_REQUIRE_INPUT(arguments->write.chunk_samples >= 1, "--chunk must be >= 1");
      PHALANX_REQUIRE_INPUT(!(arguments->write.lzf && arguments->write.gzip_level > 0),
                            "--gzip and --lzf: choose one compression");
      data::import_mapped_source(config::load_data_source(arguments->input), arguments->output,
                                 arguments->write);
      std::printf("imported the data.source of %s into %s in %.2f s\n", arguments->input.c_str(),
                  arguments->output.c_str(), stopwatch.seconds());
      std::printf("%s", data::inspect(arguments->output).c_str());
    } else if (*import_cifar) {
      PHALANX_REQUIRE_INPUT(arguments->write.gzip_level >= 0 && arguments->write.gzip_level <= 9,
                            "--gzip must be in 0..9 (got ", arguments->write.gzip_level, ")");
      PHALANX_REQUIRE_INPUT(arguments->write.chunk_samples >= 1, "--chunk must be >= 1");
      // NaN fails both comparisons, so "nan" is refused too.
      PHALANX_REQUIRE_INPUT(arguments->validation_fraction >= 0.0 && arguments->validation_fraction <= 0.5,
                            "--val-fraction must be in [0, 0.5] (got ", arguments->validation_fraction, ")");
      data::import_cifar(arguments->input, arguments->output,
                         arguments->cifar100 ? data::CifarVariant::Cifar100 : data::CifarVariant::Cifar10,
                         arguments->write, arguments->validation_fraction, arguments->validation_seed);
      std::printf("imported %s into %s in %.2f s\n", arguments->input.c_str(), arguments->output.c_str(),
                  stopwatch.seconds());
      std::printf("%s", data::inspect(arguments->output).c_str());
    } else if (*import_images) {
      PHALANX_REQUIRE_INPUT(arguments->write.gzip_level >= 0 && arguments->write.gzip_level <= 9,
                            "--gzip must be in 0..9 (got ", arguments->write.gzip_level, ")");
      PHALANX_REQUIRE_INPUT(arguments->write.chunk_samples >= 1, "--chunk must be >= 1");
      PHALANX_REQUIRE_INPUT(!(arguments->write.lzf && arguments->write.gzip_level > 0),
                            "--gzip and --lzf: choose one compression");
      if (!arguments->size.empty()) {
        // Read as whole numbers that must fill the text (no sscanf %d: past int's range it wraps,
        // and 4294967300x4 would import at 4x4); the importer checks the range.
        const std::string& size = arguments->size;
        const auto separator = size.find('x');
        long long height = 0, width = 0;
        const auto read = [&size](std::size_t begin, std::size_t end, long long& value) {
          const auto [stop, error] = std::from_chars(size.data() + begin, size.data() + end, value);
          return begin < end && error == std::errc() && stop == size.data() + end;
        };
        PHALANX_REQUIRE_INPUT(separator != std::string::npos && read(0, separator, height) &&
                                  read(separator + 1, size.size(), width) && height >= 1 && width >= 1 &&
                                  height <= 4096 && width <= 4096,
                              "--size must be HxW with each side from 1 to 4096, e.g. 64x64 (got '", size,
                              "')");
        arguments->images.height = static_cast<int>(height);
        arguments->images.width = static_cast<int>(width);
      }
      const data::ImageFolderSummary summary =
          data::import_image_folder(arguments->input, arguments->output, arguments->images, arguments->write);
      std::printf("imported %s into %s in %.2f s: %zu classes, %lld train, %lld test, %lld val images",
                  arguments->input.c_str(), arguments->output.c_str(), stopwatch.seconds(),
                  summary.classes.size(), static_cast<long long>(summary.train),
                  static_cast<long long>(summary.test), static_cast<long long>(summary.validation));
      if (summary.skipped_files > 0)
        std::printf(" (skipped %lld files that are not .png/.jpg/.jpeg)",
                    static_cast<long long>(summary.skipped_files));
      std::printf("\n%s", data::inspect(arguments->output).c_str());
    } else if (*synth) {
      const auto& options = arguments->synth;
      PHALANX_REQUIRE_INPUT(options.train_count >= 1 && options.test_count >= 1 && options.height >= 1 &&
                                options.width >= 1 && options.channels >= 1 && options.classes >= 2,
                            "data synth: counts and sizes must be >= 1 and --classes >= 2");
      data::synthesize(arguments->output, options, arguments->write);
      std::printf("wrote %s in %.2f s\n", arguments->output.c_str(), stopwatch.seconds());
    } else if (*inspect) {
      // Verify first, so a damaged file answers with one error message and nothing else.
      PHALANX_REQUIRE_INPUT(!arguments->verify || arguments->inspected.size() == 1,
                            "data inspect --verify checks one dataset file at a time (got ",
                            arguments->inspected.size(), " files)");
      const std::string verdict =
          arguments->verify ? data::verify_checksums(arguments->inspected.front()) : std::string();
      std::printf("%s", data::inspect(arguments->inspected).c_str());
      if (arguments->verify) std::printf("\n%s\n", verdict.c_str());
    } else if (*preview) {
      PHALANX_REQUIRE_INPUT(
          arguments->preview.count >= 1 && arguments->preview.count <= data::largest_preview_count,
          "--count must be in [1, ", data::largest_preview_count, "] (got ", arguments->preview.count, ")");
      const data::PreviewLayout layout =
          data::write_preview(arguments->input, arguments->output, arguments->preview);
      std::printf("wrote %s: %zu samples of %s, %dx%d grid, images upscaled %dx, %dx%d pixels\n",
                  arguments->output.c_str(), layout.samples.size(), arguments->preview.split.c_str(),
                  layout.columns, layout.rows, layout.scale, layout.width, layout.height);
    }
    return 0;
  };
}

}  // namespace phalanx::cli
