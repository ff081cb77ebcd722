// `phalanx bench devices|allreduce|loader|transfer`: the measurements a user of a GPU cluster
// asks for first, from the same binary that trains (docs/OBSERVABILITY.md):
//   devices    the same model for N steps on the CPU and (when present) on the GPU, each in fp32
//              and in bf16, side by side
//   allreduce  bus bandwidth by message size for MPI and (GPU ranks) NCCL, like nccl-tests
//   loader     batches and images per second the loader thread sustains from a dataset file
//   transfer   host-to-device bandwidth from pinned and from pageable memory (needs a GPU)
//   calibrate  the profile `phalanx scaling --profile` predicts from (docs/SCALING.md)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "model_input.hpp"
#include "phalanx/backend/cuda_backend.hpp"
#include "phalanx/backend/cuda_transfer.hpp"
#include "phalanx/benchmark/allreduce_benchmark.hpp"
#include "phalanx/benchmark/calibration.hpp"
#include "phalanx/benchmark/loader_benchmark.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/comm/nccl_communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/nn/model.hpp"
#include "phalanx/optim/optimizer.hpp"
#include "phalanx/scaling/compute_times.hpp"
#include "phalanx/scaling/layer_costs.hpp"
#include "phalanx/train/arithmetic.hpp"
#include "phalanx/train/job.hpp"
#include "phalanx/train/rank_resources.hpp"
#include "rank_setup.hpp"

namespace phalanx::cli {
namespace {

struct BenchArguments {
  std::string config_path, data_path, split = "train", run_directory, output = "profile.json", sample_shape;
  int classes = 0, calibration_batch = 0;
  bool calibration_batch_given = false;  // --batch-size of calibrate: 0 or -5 is refused, not the default
  std::vector<std::string> overrides;
  std::int64_t steps = 50;
  std::size_t minimum_bytes = 4096, maximum_bytes = std::size_t{64} << 20;
  int iterations = 20, warmup = 5, batch_size = 64, prefetch = 4, batches = 500, device = 0;
  data::AugmentOptions augment;
};

bool every_rank(const comm::Communicator& world, bool value) {
  const auto values = world.allgather(static_cast<std::uint64_t>(value));
  return std::all_of(values.begin(), values.end(), [](std::uint64_t one) { return one == 1; });
}

// ----- devices -------------------------------------------------------------------------------

struct DeviceRun {
  std::string device, precision, activations, backend_name, arithmetic_note;
  nlohmann::json summary;
};

int bench_devices(const BenchArguments& arguments, int* argc, char*** argv) {
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();
  config::Config config;
  std::string run_root = arguments.run_directory;
  int status = agreed_status(world, [&] {
    PHALANX_REQUIRE_INPUT(arguments.steps >= 1, "--steps must be >= 1 (got ", arguments.steps, ")");
    config = config::load(arguments.config_path, arguments.overrides);
  });
  if (status) return status;
  config.train.max_steps = arguments.steps;
  config.trace.steps = 0;
  config.checkpoint.every_steps = 0;
  const bool keep = !run_root.empty();
  if (!keep) {
    run_root =
        world.rank() == 0
            ? (std::filesystem::temp_directory_path() / ("phalanx-bench-devices-" + std::to_string(getpid())))
                  .string()
            : std::string();
    world.broadcast_string(run_root, 0);
  }

  std::vector<std::string> devices{"cpu"};
  const train::LocalGpu gpu = train::find_local_gpu(world);
  const bool gpus = every_rank(world, gpu.device >= 0);
  if (gpus) devices.push_back("cuda");
  // bf16 activations where the configuration asks for them (bf16, or auto: where the rank can hold
  // them); otherwise bf16 compute on fp32 activations, which every device has.
  using config::Precision;
  const Precision bf16_activations =
      config.train.activation_dtype == Precision::Bf16 || config.train.activation_dtype == Precision::Auto
          ? config.train.activation_dtype
          : Precision::Fp32;
  std::vector<DeviceRun> runs;
  for (const auto& [device, precision] : std::vector<std::pair<std::string, std::string>>{
           {"cpu", "fp32"}, {"cpu", "bf16"}, {"cuda", "fp32"}, {"cuda", "bf16"}}) {
    if (std::find(devices.begin(), devices.end(), device) == devices.end()) continue;
    config.device = *config::word_named<config::Device>(device);
    config.train.precision = *config::word_named<Precision>(precision);
    config.train.activation_dtype = precision == "bf16" ? bf16_activations : Precision::Fp32;
    // Set up as `phalanx train` sets up a job: on a GPU of every rank, gradients summed over NCCL
    // at any size.
    train::JobRequest request;
    request.config = config;
    request.config_source = arguments.config_path;
    request.run_directory = run_root + "/" + device + (precision == "fp32" ? "" : "-" + precision);
    std::unique_ptr<train::Job> job;
    try {
      job = std::make_unique<train::Job>(std::move(request), world);
    } catch (const comm::AgreedFailure& failure) {
      return report(failure, world);
    }
    DeviceRun run{device,
                  precision,
                  config::name_of(job->activation_dtype()),
                  job->backend().name(),
                  job->backend().arithmetic_note(),
                  {}};
    status = run_or_abort(world, [&] { run.summary = job->run(); });
    if (status) return status;
    runs.push_back(std::move(run));
  }
  world.barrier();
  if (world.rank() != 0) return 0;
  if (!keep) std::filesystem::remove_all(run_root);

  std::printf(
      "\n# bench devices: %lld steps of %s, batch %d per rank, %d rank(s); images/s leaves out the 3 "
      "warm-up steps, the breakdown (mean ms per step) covers every step\n",
      static_cast<long long>(arguments.steps), arguments.config_path.c_str(), config.train.batch_size,
      world.size());
  std::printf("%-6s %-9s %10s %9s %8s %8s %9s %9s %11s %10s %8s  %s\n", "device", "precision", "images/s",
              "step ms", "data", "h2d", "forward", "backward", "all-reduce", "optimizer", "h2d %", "backend");
  for (const auto& run : runs) {
    const auto& breakdown = run.summary["time_breakdown"];
    const auto ms = [&](const char* stage) { return breakdown[stage]["ms_per_step"].get<double>(); };
    const std::string precision =
        run.precision + (run.precision == "bf16" && run.activations == "bf16" ? "+act" : "");
    const std::string backend =
        run.backend_name + (run.arithmetic_note.empty() ? std::string() : "; " + run.arithmetic_note);
    std::printf("%-6s %-9s %10.0f %9.2f %8.2f %8.3f %9.2f %9.2f %11.2f %10.2f %8.2f  %s\n",
                run.device.c_str(), precision.c_str(), run.summary["images_per_sec"].get<double>(),
                breakdown["step_ms"].get<double>(), ms("data_wait"), ms("host_to_device"), ms("forward"),
                ms("backward"), ms("allreduce_wait"), ms("optimizer"),
                100.0 * breakdown["host_to_device"]["share"].get<double>(), backend.c_str());
  }
  if (!gpus)
    std::printf("cuda   not measured: %s\n", backend::cuda_device_count() == 0
                                                 ? "no CUDA device (or a build without the CUDA backend)"
                                                 : "not every rank has a GPU of its own");
  if (keep)
    std::printf("run directories (with report.html): %s/{%s}\n", run_root.c_str(),
                gpus ? "cpu,cpu-bf16,cuda,cuda-bf16" : "cpu,cpu-bf16");
  return 0;
}

// ----- allreduce -----------------------------------------------------------------------------

// Every rank's CUDA backend on its GPU and the NCCL communicator over them; the agreed status
// (0, or every rank's exit status when one of them failed).
int open_nccl(const comm::Communicator& world, int device, std::unique_ptr<backend::Backend>& backend,
              std::unique_ptr<comm::NcclCommunicator>& nccl) {
  return agreed_status(world, [&] {
    backend = backend::make_cuda_backend(device);
    nccl = std::make_unique<comm::NcclCommunicator>(world, *backend);
  });
}

int bench_allreduce(const BenchArguments& arguments, int* argc, char*** argv) {
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();
  benchmark::AllreduceSettings settings;
  int status = agreed_status(world, [&] {
    PHALANX_REQUIRE_INPUT(arguments.minimum_bytes >= 4 && arguments.minimum_bytes <= arguments.maximum_bytes,
                          "--min-bytes must be >= 4 and <= --max-bytes (got ", arguments.minimum_bytes,
                          " and ", arguments.maximum_bytes, ")");
    PHALANX_REQUIRE_INPUT(arguments.maximum_bytes <= benchmark::most_benchmark_bytes,
                          "--max-bytes must be below 8 GiB (at most ", benchmark::most_benchmark_bytes,
                          ", one MPI count of floats; got ", arguments.maximum_bytes, ")");
    PHALANX_REQUIRE_INPUT(arguments.iterations >= 1 && arguments.warmup >= 0,
                          "--iterations must be >= 1 and --warmup >= 0");
  });
  if (status) return status;
  settings.bytes = benchmark::doubling_sizes(arguments.minimum_bytes, arguments.maximum_bytes);
  settings.iterations = arguments.iterations;
  settings.warmup = arguments.warmup;

  std::vector<std::string> names{"MPI_Allreduce (blocking)", "MPI_Iallreduce + wait (as GradSync)"};
  std::vector<std::vector<benchmark::AllreduceResult>> columns;
  status = run_or_abort(world, [&] {
    columns.push_back(benchmark::benchmark_mpi_allreduce(world, settings, false));
    columns.push_back(benchmark::benchmark_mpi_allreduce(world, settings, true));
  });
  if (status) return status;

  const train::LocalGpu gpu = train::find_local_gpu(world);
  const bool gpus = every_rank(world, gpu.device >= 0);
  if (gpus) {
    std::unique_ptr<backend::Backend> backend;
    std::unique_ptr<comm::NcclCommunicator> nccl;
    status = open_nccl(world, gpu.device, backend, nccl);
    if (status) return status;
    status = run_or_abort(world, [&] {
      columns.push_back(benchmark::benchmark_nccl_allreduce(*nccl, *backend, world, settings));
    });
    if (status) return status;
    names.push_back("NCCL (device memory)");
  }
  if (world.rank() == 0) {
    std::printf("%s", benchmark::allreduce_table(world.size(), names, columns).c_str());
    if (!gpus) std::printf("# NCCL not measured: not every rank has a GPU of its own\n");
    if (world.size() == 1)
      std::printf("# one rank: nothing crosses a link (busbw 0); run under mpirun -np N\n");
  }
  return 0;
}

// ----- calibrate -----------------------------------------------------------------------------

int bench_calibrate(const BenchArguments& arguments, int* argc, char*** argv) {
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();
  config::Config config;
  ModelInput input;
  benchmark::AllreduceSettings settings;
  int status = agreed_status(world, [&] {
    config = config::load(arguments.config_path, arguments.overrides);
    input = model_input(config, arguments.config_path, arguments.sample_shape, arguments.classes);
    PHALANX_REQUIRE_INPUT(arguments.iterations >= 1, "--iterations must be >= 1 (got ", arguments.iterations,
                          ")");
    // The bound `phalanx scaling` takes a profile's batch to: a larger one it would refuse.
    PHALANX_REQUIRE_INPUT(
        !arguments.calibration_batch_given ||
            (arguments.calibration_batch >= 1 && arguments.calibration_batch <= scaling::most_local_batch),
        "--batch-size must be from 1 to ", scaling::most_local_batch, " (got ", arguments.calibration_batch,
        ")");
    PHALANX_REQUIRE_INPUT(arguments.minimum_bytes >= 4 && arguments.minimum_bytes < arguments.maximum_bytes,
                          "--min-bytes must be >= 4 and below --max-bytes (got ", arguments.minimum_bytes,
                          " and ", arguments.maximum_bytes, ")");
    PHALANX_REQUIRE_INPUT(arguments.maximum_bytes <= benchmark::most_benchmark_bytes,
                          "--max-bytes must be below 8 GiB (at most ", benchmark::most_benchmark_bytes,
                          ", one MPI count of floats; got ", arguments.maximum_bytes, ")");
    // The transport fit is a line through the timed sizes: it needs two of them.
    PHALANX_REQUIRE_INPUT(
        benchmark::doubling_sizes(arguments.minimum_bytes, arguments.maximum_bytes).size() >= 2,
        "--max-bytes must be at least twice --min-bytes (rounded down to whole floats): the "
        "all-reduce is timed at doubling sizes and fitted by a line through two or more (got ",
        arguments.minimum_bytes, " and ", arguments.maximum_bytes, ")");
  });
  if (status) return status;
  settings.bytes = benchmark::doubling_sizes(arguments.minimum_bytes, arguments.maximum_bytes);
  settings.iterations = arguments.iterations;
  settings.warmup = arguments.warmup;

  // Transports: MPI as GradSync drives it (non-blocking) within one host or across hosts, and NCCL
  // where every rank has a GPU. One rank has nothing to fit.
  std::vector<benchmark::TransportFit> transports;
  const train::LocalGpu gpu = train::find_local_gpu(world);
  const bool gpus = every_rank(world, gpu.device >= 0);
  if (world.size() > 1) {
    status = run_or_abort(world, [&] {
      const bool one_host = world.local_size() == world.size();
      transports.push_back(
          benchmark::fit_transport(one_host ? "shared_memory" : "network", world.size(),
                                   benchmark::benchmark_mpi_allreduce(world, settings, true)));
      // Fewer launches than the timed sizes: each count of calls is its own series.
      transports.back().progress =
          benchmark::measure_progress_stages(world, settings, std::min(settings.iterations, 5));
    });
    if (status) return status;
    if (gpus) {
      std::unique_ptr<backend::Backend> backend;
      std::unique_ptr<comm::NcclCommunicator> nccl;
      status = open_nccl(world, gpu.device, backend, nccl);
      if (status) return status;
      status = run_or_abort(world, [&] {
        transports.push_back(benchmark::fit_transport(
            "nccl", world.size(), benchmark::benchmark_nccl_allreduce(*nccl, *backend, world, settings)));
      });
      if (status) return status;
    }
  }

  // Layers and buckets on this rank's device (a GPU where it has one), in the run's arithmetic, with
  // the run's optimizer: every rank at once, each whole step started together, as they train.
  benchmark::ModelTimings timings;
  std::string device, precision, model_name = config.model.preset.empty() ? config.name : config.model.preset;
  const int batch = arguments.calibration_batch_given ? arguments.calibration_batch : config.train.batch_size;
  status = agreed_status(
      world,
      [&] {
        std::unique_ptr<backend::Backend> backend =
            gpu.device >= 0 ? backend::make_cuda_backend(gpu.device)
                            : train::make_rank_resources(config::Device::Cpu, config.threads, world).backend;
        const train::Arithmetic arithmetic = train::apply_arithmetic(config, *backend);
        precision = config::name_of(arithmetic.precision);
        device = backend->name();
        nn::Model model(nn::ModelPlan(config.model, input.sample, input.classes), *backend, config.seed);
        const std::unique_ptr<optim::Optimizer> optimizer =
            optim::make_optimizer(config.optimizer, *backend, model.registry().parameter_count());
        nn::ModelPlan plan(config.model, input.sample, input.classes);
        const scaling::LayerCosts costs = scaling::layer_costs(plan, model_name);
        timings = benchmark::time_model(model, costs, batch, arguments.iterations,
                                        static_cast<std::size_t>(config.distributed.bucket_mb * (1 << 20)),
                                        std::size_t{1} << 20, optimizer.get(), [&] { world.barrier(); });
      },
      config.distributed.timeout_s);
  if (status) return status;
  // Every rank's steps, for what the slowest of them costs a step (they ran the same count).
  std::vector<benchmark::RankSteps> ranks(static_cast<std::size_t>(world.size()));
  const std::vector<std::string> hosts = world.gather_strings(world.host_name(), 0);
  for (int rank = 0; rank < world.size(); ++rank) {
    ranks[static_cast<std::size_t>(rank)].rank = rank;
    if (world.rank() == 0) ranks[static_cast<std::size_t>(rank)].host = hosts[static_cast<std::size_t>(rank)];
  }
  for (const double step : timings.steps) {
    const std::vector<double> all = world.allgather(step);
    for (std::size_t rank = 0; rank < all.size(); ++rank) ranks[rank].steps.push_back(all[rank]);
  }
  if (world.rank() == 0) {
    write_file_atomically(
        arguments.output,
        benchmark::profile_json(model_name, device, precision, timings, ranks, transports).dump(1) + "\n");
    std::printf(
        "# bench calibrate: %s at batch %d on %s, %s: forward %.2f ms, backward %.2f ms, update %.2f ms "
        "(medians of %d)\n",
        model_name.c_str(), batch, device.c_str(), precision.c_str(), timings.forward * 1e3,
        timings.backward * 1e3, timings.optimizer * 1e3, timings.iterations);
    for (const auto& transport : transports)
      std::printf("# %s over %d ranks: latency %.1f us, %.3f GB/s (fitted to %zu sizes)\n",
                  transport.name.c_str(), transport.ranks, transport.latency * 1e6,
                  transport.seconds_per_byte > 0 ? 1e-9 / transport.seconds_per_byte : 0.0,
                  transport.measured.size());
    if (world.size() == 1) std::printf("# one rank: no transport measured (run under mpirun -np N)\n");
    std::printf("wrote %s (%zu layers, %zu buckets)\n", arguments.output.c_str(), timings.layers.size(),
                timings.buckets.size());
  }
  return 0;
}

// ----- loader and transfer -------------------------------------------------------------------

int bench_loader(const BenchArguments& arguments) {
  benchmark::LoaderSettings settings{arguments.data_path, arguments.split,   arguments.batch_size,
                                     arguments.prefetch,  arguments.batches, arguments.augment};
  const auto result = benchmark::benchmark_loader(settings);
  std::printf("# bench loader: %s split '%s', batch %d, prefetch %d, augment %s\n",
              arguments.data_path.c_str(), arguments.split.c_str(), arguments.batch_size, arguments.prefetch,
              arguments.augment.enabled() || arguments.augment.random_resized_crop.enabled() ? "on" : "off");
  std::printf("read split into memory: %.3f s\n", result.read_seconds);
  std::printf("%d batches in %.6f s: %.1f batches/s, %.0f images/s, %.1f MB/s\n", result.batches,
              result.seconds, result.batches_per_second, result.images_per_second,
              result.megabytes_per_second);
  return 0;
}

int bench_transfer(const BenchArguments& arguments) {
  PHALANX_REQUIRE_INPUT(arguments.minimum_bytes >= 1 && arguments.minimum_bytes <= arguments.maximum_bytes,
                        "--min-bytes must be >= 1 and <= --max-bytes");
  // Also keeps the quadrupling below from wrapping past size_t's end.
  PHALANX_REQUIRE_INPUT(arguments.maximum_bytes <= benchmark::most_benchmark_bytes,
                        "--max-bytes must be below 8 GiB (at most ", benchmark::most_benchmark_bytes,
                        ", one MPI count of floats; got ", arguments.maximum_bytes, ")");
  std::vector<std::size_t> sizes;
  for (std::size_t bytes = arguments.minimum_bytes; bytes <= arguments.maximum_bytes; bytes *= 4)
    sizes.push_back(bytes);
  const auto results = backend::measure_host_to_device(arguments.device, sizes, arguments.iterations);
  std::printf(
      "# bench transfer: host to device, CUDA device %d, median of %d copies timed with CUDA events\n",
      arguments.device, arguments.iterations);
  std::printf("%12s | %10s %12s | %10s %12s | %8s\n", "size (B)", "pinned us", "pinned GB/s", "pageable us",
              "pageable GB/s", "ratio");
  for (const auto& result : results)
    std::printf("%12zu | %10.1f %12.2f | %10.1f %12.2f | %8.2f\n", result.bytes, result.pinned_seconds * 1e6,
                result.pinned_bandwidth / 1e9, result.pageable_seconds * 1e6, result.pageable_bandwidth / 1e9,
                result.pageable_bandwidth > 0 ? result.pinned_bandwidth / result.pageable_bandwidth : 0.0);
  return 0;
}

}  // namespace

std::function<int()> add_bench_command(CLI::App& app, int* argc, char*** argv) {
  auto* command =
      app.add_subcommand("bench", "Measure devices, all-reduce, loader and host-to-device transfers");
  command->require_subcommand(1);
  auto arguments = std::make_shared<BenchArguments>();

  auto* devices =
      command->add_subcommand("devices", "The same model for N steps on CPU and GPU, side by side");
  devices->add_option("config", arguments->config_path, "Training config (YAML)")->required();
  devices->add_option("--steps", arguments->steps, "Training steps per device (default 50)");
  devices->add_option("--set", arguments->overrides, "Override a config key (repeatable)");
  devices->add_option("--run-dir", arguments->run_directory,
                      "Keep the runs under DIR/cpu and DIR/cuda (default: a temporary folder, removed)");

  auto* allreduce =
      command->add_subcommand("allreduce", "All-reduce bus bandwidth by size (run under mpirun)");
  allreduce->add_option("--min-bytes", arguments->minimum_bytes, "Smallest message (default 4096)");
  allreduce->add_option("--max-bytes", arguments->maximum_bytes, "Largest message (default 64 MiB)");
  allreduce->add_option("--iterations", arguments->iterations, "Timed iterations per size (default 20)");
  allreduce->add_option("--warmup", arguments->warmup, "Untimed iterations per size (default 5)");

  auto* loader = command->add_subcommand("loader", "Loader thread throughput from a dataset file");
  loader->add_option("data", arguments->data_path, "Dataset (.h5)")->required();
  loader->add_option("--split", arguments->split, "Split (default train)");
  loader->add_option("--batch-size", arguments->batch_size, "Batch size (default 64)");
  loader->add_option("--prefetch", arguments->prefetch, "Batches prepared ahead (default 4)");
  loader->add_option("--batches", arguments->batches, "Batches to take (default 500)");
  loader->add_option("--random-resized-crop", arguments->augment.random_resized_crop.size,
                     "Augmentation: RandomResizedCrop to this size (scale [0.08, 1], ratio [3/4, 4/3])");
  loader->add_option("--crop-padding", arguments->augment.random_crop_padding,
                     "Augmentation: random crop padding");
  loader->add_flag("--flip", arguments->augment.horizontal_flip, "Augmentation: horizontal flip");
  loader->add_option("--cutout", arguments->augment.cutout, "Augmentation: cutout side");
  auto* trivial_augment = loader->add_flag_callback(
      "--trivial-augment",
      [arguments] { arguments->augment.auto_augment.policy = data::AutoAugmentPolicy::TrivialAugmentWide; },
      "Augmentation: TrivialAugmentWide (31 bins)");
  loader
      ->add_option_function<int>(
          "--rand-augment",
          [arguments](int num_ops) {
            arguments->augment.auto_augment = {data::AutoAugmentPolicy::RandAugment, num_ops, 9, 31};
          },
          "Augmentation: RandAugment with this many ops (magnitude 9 of 31)")
      ->check(CLI::Range(1, max_augment_operations))
      ->excludes(trivial_augment);

  auto* transfer =
      command->add_subcommand("transfer", "Host-to-device bandwidth, pinned vs pageable (needs a GPU)");
  transfer->add_option("--min-bytes", arguments->minimum_bytes, "Smallest copy (default 4096)");
  transfer->add_option("--max-bytes", arguments->maximum_bytes, "Largest copy (default 64 MiB)");
  transfer->add_option("--iterations", arguments->iterations, "Timed copies per size (default 20)");
  transfer->add_option("--device", arguments->device, "CUDA device (default 0)");

  auto* calibrate = command->add_subcommand(
      "calibrate", "Profile for `phalanx scaling`: transport fits, per-layer times, bucket ready times");
  calibrate->add_option("config", arguments->config_path, "Training config (YAML)")->required();
  calibrate->add_option("--output", arguments->output, "Profile to write (default profile.json)");
  calibrate->add_option("--iterations", arguments->iterations,
                        "Timed passes and all-reduces per size (default 20)");
  calibrate->add_option("--batch-size", arguments->calibration_batch,
                        "Batch to time (default train.batch_size)");
  calibrate->add_option("--min-bytes", arguments->minimum_bytes, "Smallest all-reduce (default 4096)");
  calibrate->add_option("--max-bytes", arguments->maximum_bytes, "Largest all-reduce (default 64 MiB)");
  calibrate->add_option("--sample-shape", arguments->sample_shape,
                        "One image as HxWxC, without the dataset file");
  calibrate->add_option("--classes", arguments->classes, "Classes, with --sample-shape");
  calibrate->add_option("--set", arguments->overrides, "Override a config key (repeatable)");

  return [=]() -> int {
    if (!*command) return -1;
    arguments->calibration_batch_given = calibrate->count("--batch-size") > 0;
    if (*calibrate) return bench_calibrate(*arguments, argc, argv);
    if (*devices) return bench_devices(*arguments, argc, argv);
    if (*allreduce) return bench_allreduce(*arguments, argc, argv);
    if (*loader) return bench_loader(*arguments);
    return bench_transfer(*arguments);
  };
}

}  // namespace phalanx::cli
