// `phalanx scaling CONFIG --nodes N --gpus-per-node G --fabric NAME|FILE`: a job's step time, images/s
// and scaling efficiency at N x G GPUs before it is queued, from the config's model and bucket plan,
// NCCL's all-reduce cost model on the fabric's published figures, and the compute time of one device
// (a profile from `phalanx bench calibrate`, or its images per second). docs/SCALING.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "model_input.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/nn/model_plan.hpp"
#include "phalanx/scaling/device_preset.hpp"
#include "phalanx/scaling/measured_transport.hpp"
#include "phalanx/scaling/step_prediction.hpp"

namespace phalanx::cli {
namespace {

struct ScalingArguments {
  std::string config_path, layer_table, fabric, transport, profile, sample_shape;
  std::vector<std::string> overrides;
  std::vector<int> sweep_nodes;
  int nodes = 1, gpus_per_node = 1, classes = 0, batch_size = 0;
  double images_per_second = 0, bucket_mb = 0;
  std::string device;
  std::string nccl_algo;  // empty: ring and tree
  std::string buckets_as = "phalanx";
  double fusion_cycle_ms = 5;
  bool fusion_cycle_given = false, nccl_algo_given = false, buckets_as_given = false;
  bool json = false;
  // Given on the command line (a value of 0 or -5 is refused, not taken for the default).
  bool batch_size_given = false, images_per_second_given = false, bucket_mb_given = false;
};

// A bucket of up to 1 TiB (2^20 MiB): its bytes fit a size_t; a larger one is a slip.
constexpr int most_bucket_mb = 1 << 20;

// The bucket size in MiB, from `source` (the option or the config key): finite, > 0, at most
// most_bucket_mb. A bucket too small for the plan is refused by the prediction, by its count.
double checked_bucket_mb(double bucket_mb, const std::string& source) {
  PHALANX_REQUIRE_INPUT(std::isfinite(bucket_mb) && bucket_mb > 0 && bucket_mb <= most_bucket_mb, source,
                        " must be a finite number of MiB > 0 and <= ", most_bucket_mb, " (got ", bucket_mb,
                        ")");
  return bucket_mb;
}

// The command line's counts and figures, before any file is read: a value out of range is refused
// naming the option, not taken for its default or carried into the prediction.
void check_options(const ScalingArguments& arguments) {
  std::vector<int> node_counts =
      arguments.sweep_nodes.empty() ? std::vector<int>{arguments.nodes} : arguments.sweep_nodes;
  PHALANX_REQUIRE_INPUT(
      arguments.gpus_per_node >= 1 && arguments.gpus_per_node <= scaling::most_gpus_per_node,
      "--gpus-per-node must be from 1 to ", scaling::most_gpus_per_node, " (got ", arguments.gpus_per_node,
      ")");
  for (const int nodes : node_counts) {
    PHALANX_REQUIRE_INPUT(nodes >= 1 && nodes <= scaling::most_ranks,
                          "--nodes and --sweep-nodes take counts from 1 to ", scaling::most_ranks, " (got ",
                          nodes, ")");
    const scaling::Topology topology{nodes, arguments.gpus_per_node};
    PHALANX_REQUIRE_INPUT(topology.ranks() <= scaling::most_ranks,
                          "--nodes x --gpus-per-node must be at most ", scaling::most_ranks, " ranks (got ",
                          nodes, " x ", arguments.gpus_per_node, " = ", topology.ranks(), ")");
  }
  if (arguments.batch_size_given)
    PHALANX_REQUIRE_INPUT(arguments.batch_size >= 1 && arguments.batch_size <= scaling::most_local_batch,
                          "--batch-size must be from 1 to ", scaling::most_local_batch, " (got ",
                          arguments.batch_size, ")");
  if (arguments.images_per_second_given)
    PHALANX_REQUIRE_INPUT(std::isfinite(arguments.images_per_second) &&
                              arguments.images_per_second >= scaling::least_images_per_second &&
                              arguments.images_per_second <= scaling::most_images_per_second,
                          "--images-per-second must be a finite number from ",
                          scaling::least_images_per_second, " to ", scaling::most_images_per_second, " (got ",
                          arguments.images_per_second, ")");
  if (arguments.bucket_mb_given) checked_bucket_mb(arguments.bucket_mb, "--bucket-mb");
}

// The model's layers: a layer table, or the config's model for its data's image shape.
scaling::LayerCosts model_layers(const ScalingArguments& arguments, const config::Config* config) {
  if (!arguments.layer_table.empty()) return scaling::read_layer_table(arguments.layer_table);
  const ModelInput input =
      model_input(*config, arguments.config_path, arguments.sample_shape, arguments.classes);
  const nn::ModelPlan plan(config->model, input.sample, input.classes);
  return scaling::layer_costs(plan, config->model.preset.empty() ? config->name : config->model.preset);
}

nlohmann::json to_json(const scaling::AllreduceEstimate& estimate) {
  return {{"algorithm", scaling::name_of(estimate.algorithm)},
          {"protocol", scaling::name_of(estimate.protocol)},
          {"seconds", estimate.seconds},
          {"latency_seconds", estimate.latency},
          {"bandwidth_bytes_per_second", estimate.bandwidth}};
}

nlohmann::json to_json(const scaling::StepPrediction& prediction) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const auto& bucket : prediction.buckets)
    buckets.push_back({{"begin", bucket.begin},
                       {"end", bucket.end},
                       {"bytes", bucket.bytes},
                       {"ready_seconds", bucket.ready},
                       {"start_seconds", bucket.start},
                       {"finish_seconds", bucket.finish},
                       {"ring", to_json(bucket.ring)},
                       {"tree", to_json(bucket.tree)},
                       {"chosen", scaling::name_of(bucket.chosen.algorithm)}});
  return {{"nodes", prediction.topology.nodes},
          {"gpus_per_node", prediction.topology.gpus_per_node},
          {"ranks", prediction.topology.ranks()},
          {"forward_seconds", prediction.forward},
          {"backward_seconds", prediction.backward},
          {"optimizer_seconds", prediction.optimizer},
          {"allreduce_seconds", prediction.allreduce},
          {"exposed_seconds", prediction.exposed},
          {"straggler_seconds", prediction.straggler},
          {"exposed_share", prediction.exposed_share()},
          {"step_seconds", prediction.step},
          {"images_per_second", prediction.images_per_second},
          {"single_device_images_per_second", prediction.single_device_images_per_second},
          {"efficiency", prediction.efficiency},
          {"buckets", buckets}};
}

// A measured transport has one time per bucket: the ring and tree columns would repeat it.
void print_measured_schedule(const scaling::StepPrediction& prediction) {
  std::printf(
      "\n# bucket schedule, %lld rank(s), measured all-reduce: times in ms from the start of the step\n",
      static_cast<long long>(prediction.topology.ranks()));
  std::printf("%6s %10s %10s %9s %9s %14s %9s %9s\n", "bucket", "elements", "MB", "ready", "start",
              "all-reduce ms", "finish", "waits");
  for (std::size_t index = 0; index < prediction.buckets.size(); ++index) {
    const auto& bucket = prediction.buckets[index];
    std::printf("%6zu %10lld %10.2f %9.2f %9.2f %14.3f %9.2f %9.2f\n", index,
                static_cast<long long>(bucket.end - bucket.begin), bucket.bytes / 1e6, bucket.ready * 1e3,
                bucket.start * 1e3, bucket.chosen.seconds * 1e3, bucket.finish * 1e3,
                (bucket.start - bucket.ready) * 1e3);
  }
}

void print_schedule(const scaling::StepPrediction& prediction) {
  std::printf("\n# bucket schedule, %d node(s) x %d GPU(s): times in ms from the start of the step\n",
              prediction.topology.nodes, prediction.topology.gpus_per_node);
  std::printf("%6s %10s %10s %9s %9s %16s %16s %6s %9s %9s\n", "bucket", "elements", "MB", "ready", "start",
              "ring ms (proto)", "tree ms (proto)", "uses", "finish", "waits");
  for (std::size_t index = 0; index < prediction.buckets.size(); ++index) {
    const auto& bucket = prediction.buckets[index];
    const auto cell = [](const scaling::AllreduceEstimate& estimate) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3f (%s)", estimate.seconds * 1e3,
                    scaling::name_of(estimate.protocol).c_str());
      return std::string(text);
    };
    std::printf("%6zu %10lld %10.2f %9.2f %9.2f %16s %16s %6s %9.2f %9.2f\n", index,
                static_cast<long long>(bucket.end - bucket.begin), bucket.bytes / 1e6, bucket.ready * 1e3,
                bucket.start * 1e3, cell(bucket.ring).c_str(), cell(bucket.tree).c_str(),
                scaling::name_of(bucket.chosen.algorithm).c_str(), bucket.finish * 1e3,
                (bucket.start - bucket.ready) * 1e3);
  }
}

void print_summary_header() {
  std::printf("%6s %6s %10s %10s %12s %11s %9s %12s %11s\n", "nodes", "ranks", "step ms", "compute ms",
              "all-reduce ms", "exposed ms", "exposed %", "images/s", "efficiency");
}

void print_summary_row(const scaling::StepPrediction& prediction) {
  std::printf("%6d %6lld %10.2f %10.2f %12.2f %11.2f %9.1f %12.1f %10.1f%%\n", prediction.topology.nodes,
              static_cast<long long>(prediction.topology.ranks()), prediction.step * 1e3,
              (prediction.forward + prediction.backward) * 1e3, prediction.allreduce * 1e3,
              prediction.exposed * 1e3, 100 * prediction.exposed_share(), prediction.images_per_second,
              100 * prediction.efficiency);
}

int run_scaling(const ScalingArguments& arguments) {
  PHALANX_REQUIRE_INPUT(arguments.config_path.empty() != arguments.layer_table.empty(),
                        "give either a CONFIG or --layers FILE (a layer table), not both");
  check_options(arguments);
  PHALANX_REQUIRE_INPUT(int{!arguments.profile.empty()} + int{arguments.images_per_second_given} +
                                int{!arguments.device.empty()} ==
                            1,
                        "give the compute time of one device: --profile FILE (phalanx bench calibrate), "
                        "--images-per-second X or "
                        "--device NAME, one of them");
  std::optional<config::Config> config;
  if (!arguments.config_path.empty()) config = config::load(arguments.config_path, arguments.overrides);
  const scaling::LayerCosts costs = model_layers(arguments, config ? &*config : nullptr);
  PHALANX_REQUIRE_INPUT(
      arguments.fabric.empty() != arguments.transport.empty(),
      "give the all-reduce's fabric, --fabric NAME|FILE (NCCL's cost model on its figures), "
      "or --transport NAME (one measured by `phalanx bench calibrate`, with --profile), one "
      "of them");
  PHALANX_REQUIRE_INPUT(arguments.transport.empty() || !arguments.profile.empty(), "--transport ",
                        arguments.transport,
                        " reads the measured transport from the profile: give --profile FILE");
  PHALANX_REQUIRE_INPUT(!arguments.nccl_algo_given || arguments.transport.empty(),
                        "--nccl-algo chooses among NCCL's algorithms on a --fabric; --transport ",
                        arguments.transport, " is the all-reduce the profile measured");
  // A measured transport is phalanx's own MPI all-reduce, advancing at its calls in backward: the
  // job predicted is phalanx's, with phalanx's buckets.
  PHALANX_REQUIRE_INPUT(
      !arguments.buckets_as_given || arguments.buckets_as == "phalanx" || arguments.transport.empty(),
      "--buckets-as ", arguments.buckets_as,
      " predicts that framework's job over NCCL on a --fabric; --transport ", arguments.transport,
      " is phalanx's measured all-reduce");
  const scaling::AlgorithmChoice algorithms =
      arguments.nccl_algo_given ? scaling::parse_algorithm_choice(arguments.nccl_algo, "--nccl-algo")
                                : scaling::AlgorithmChoice{};
  std::optional<scaling::Fabric> fabric;
  std::optional<scaling::MeasuredTransport> transport;
  if (arguments.transport.empty())
    fabric = scaling::find_fabric(arguments.fabric);
  else
    transport = scaling::read_measured_transport(arguments.profile, arguments.transport);

  const std::vector<int> node_counts =
      arguments.sweep_nodes.empty() ? std::vector<int>{arguments.nodes} : arguments.sweep_nodes;

  scaling::StepSettings settings;
  int batch = arguments.batch_size;
  if (!arguments.batch_size_given) {
    PHALANX_REQUIRE_INPUT(config.has_value(), "--layers needs --batch-size (images per rank and step)");
    PHALANX_REQUIRE_INPUT(
        config->distributed.local_batches.empty(), arguments.config_path,
        ": distributed.local_batches fixes the ranks; predict with --batch-size B (per rank)");
    batch = config->train.batch_size;
  }
  PHALANX_REQUIRE_INPUT(batch >= 1 && batch <= scaling::most_local_batch, arguments.config_path,
                        ": train.batch_size must be from 1 to ", scaling::most_local_batch,
                        " to predict (got ", batch, ")");
  settings.local_batch = batch;
  double bucket_mb = 25.0;
  if (arguments.bucket_mb_given)
    bucket_mb = arguments.bucket_mb;
  else if (config)
    bucket_mb =
        checked_bucket_mb(config->distributed.bucket_mb, arguments.config_path + ": distributed.bucket_mb");
  settings.bucket_bytes = static_cast<std::size_t>(bucket_mb * (1 << 20));
  settings.bucket_cut = scaling::parse_bucket_cut(arguments.buckets_as, "--buckets-as");
  PHALANX_REQUIRE_INPUT(!arguments.fusion_cycle_given || settings.bucket_cut == scaling::BucketCut::Horovod,
                        "--fusion-cycle-ms is Horovod's cycle: give it with --buckets-as horovod");
  PHALANX_REQUIRE_INPUT(std::isfinite(arguments.fusion_cycle_ms) && arguments.fusion_cycle_ms >= 1e-3 &&
                            arguments.fusion_cycle_ms <= 1e4,
                        "--fusion-cycle-ms must be from 0.001 to 10000 (got ", arguments.fusion_cycle_ms,
                        ")");
  settings.fusion_cycle = arguments.fusion_cycle_ms * 1e-3;
  const bool bf16_gradients = config && config->distributed.grad_dtype == config::GradientDtype::Bf16;
  // Training sends bf16 gradients over NCCL only (MPI ranks refuse the key): over a measured MPI
  // transport the prediction would be of a job that cannot run.
  PHALANX_REQUIRE_INPUT(!bf16_gradients || !transport || transport->name == "nccl", arguments.config_path,
                        ": distributed.grad_dtype bf16 is sent over NCCL only; --transport ",
                        transport ? transport->name : "",
                        " is an MPI transport (use --transport nccl, or --fabric)");
  settings.wire_bytes_per_element = bf16_gradients ? 2 : 4;
  scaling::ComputeTimes times;
  if (!arguments.profile.empty()) {
    times = scaling::compute_from_profile(costs, arguments.profile, batch);
  } else if (!arguments.device.empty()) {
    std::string how;
    const double rate = scaling::device_images_per_second(scaling::device_preset(arguments.device),
                                                          costs.multiply_adds(), &how);
    // The rate is derived, not given: out of range, it is the model's size that is, not an option.
    PHALANX_REQUIRE_INPUT(std::isfinite(rate) && rate >= scaling::least_images_per_second &&
                              rate <= scaling::most_images_per_second,
                          "--device ", arguments.device, ": a model of ", costs.multiply_adds(),
                          " multiply-adds per image comes to ", rate, " images/s on it, outside ",
                          scaling::least_images_per_second, " to ", scaling::most_images_per_second,
                          " (is the layer table's multiply_adds per image?)");
    times = scaling::compute_from_throughput(costs, rate, batch);
    times.source = how + "; " + times.source;
  } else {
    times = scaling::compute_from_throughput(costs, arguments.images_per_second, batch);
  }

  std::vector<scaling::StepPrediction> predictions;
  for (const int nodes : node_counts) {
    const scaling::Topology topology{nodes, arguments.gpus_per_node};
    settings.global_batch = std::int64_t{batch} * topology.ranks();
    if (fabric) {
      predictions.push_back(scaling::predict_step(costs, times, settings, topology, *fabric, algorithms));
      continue;
    }
    // Shared memory joins the ranks of one host only.
    PHALANX_REQUIRE_INPUT(transport->name != "shared_memory" || nodes == 1,
                          "--transport shared_memory joins the ranks of one node, not ", nodes,
                          " (--nodes): a job over nodes is measured as --transport network");
    PHALANX_REQUIRE_INPUT(topology.ranks() == 1 || topology.ranks() == transport->ranks, arguments.profile,
                          ": transport '", transport->name, "' was measured at ", transport->ranks,
                          " ranks, and says nothing about ", topology.ranks(),
                          " (--nodes x --gpus-per-node)");
    predictions.push_back(scaling::predict_step(
        costs, times, settings, topology,
        [&](std::size_t bytes) {
          const scaling::AllreduceEstimate estimate = scaling::estimate_allreduce(*transport, bytes);
          return scaling::BucketAllreduce{estimate, estimate, estimate,
                                          scaling::call_stages(*transport, bytes)};
        },
        transport->progresses_during_backward()));
  }
  const std::string allreduce_name =
      fabric ? fabric->name : "measured " + transport->name + " (" + transport->profile + ")";
  char transport_text[200] = "";
  if (transport)
    std::snprintf(transport_text, sizeof transport_text,
                  "fitted at %lld ranks: %.1f us latency, %.3f GB/s (time = latency + bytes / bandwidth)",
                  static_cast<long long>(transport->ranks), transport->latency * 1e6,
                  1e-9 / transport->seconds_per_byte);
  std::string allreduce_source = fabric ? fabric->source : transport_text;
  if (fabric) {
    char gpus[120];
    std::snprintf(gpus, sizeof gpus, "; GPUs of compute capability %.1f; NCCL algorithms: %s",
                  fabric->gpu_compute_capability, scaling::name_of(algorithms).c_str());
    allreduce_source += gpus;
  }
  if (transport && !transport->progresses_during_backward())
    allreduce_source += transport->progress.empty()
                            ? "; no progress stages in the profile: each starts when backward ends"
                            : "; advancing at MPI calls in the stages measured per size";

  if (arguments.json) {
    nlohmann::json output = {
        {"model", costs.model},
        {"parameters", costs.parameters},
        {"gradient_elements", costs.gradient_elements},
        {"multiply_adds_per_sample", costs.multiply_adds()},
        {"local_batch", batch},
        {"bucket_bytes", settings.bucket_bytes},
        {"buckets_as", scaling::name_of(settings.bucket_cut)},
        {"fusion_cycle_seconds", settings.bucket_cut == scaling::BucketCut::Horovod
                                     ? nlohmann::json(settings.fusion_cycle)
                                     : nlohmann::json(nullptr)},
        {"fabric", allreduce_name},
        {"fabric_source", allreduce_source},
        {"nccl_algorithms", fabric ? nlohmann::json(scaling::name_of(algorithms)) : nlohmann::json(nullptr)},
        {"compute_source", times.source},
        {"predictions", nlohmann::json::array()}};
    for (const auto& prediction : predictions) output["predictions"].push_back(to_json(prediction));
    std::printf("%s\n", output.dump(2).c_str());
    return 0;
  }
  std::string cut_text = scaling::name_of(settings.bucket_cut) + "'s";
  if (settings.bucket_cut == scaling::BucketCut::Horovod) {
    char cycle[64];
    std::snprintf(cycle, sizeof cycle, ", fused every %g ms", settings.fusion_cycle * 1e3);
    cut_text += cycle;
  }
  std::printf(
      "# phalanx scaling: %s, %lld parameters (%.1f MB of gradients on the wire), %.2f GFLOP per image "
      "forward, local batch %d, buckets of %.1f MiB (%s)\n",
      costs.model.c_str(), static_cast<long long>(costs.parameters),
      costs.gradient_elements * settings.wire_bytes_per_element / 1e6, 2.0 * costs.multiply_adds() / 1e9,
      batch, bucket_mb, cut_text.c_str());
  std::printf("# %s %s: %s\n", fabric ? "fabric" : "all-reduce", allreduce_name.c_str(),
              allreduce_source.c_str());
  std::printf("# compute: %s; forward %.2f ms, backward %.2f ms, update %.2f ms per step\n",
              times.source.c_str(), times.forward_seconds() * 1e3, times.backward_seconds() * 1e3,
              times.optimizer * 1e3);
  if (!times.rank_steps.empty())
    for (const auto& prediction : predictions)
      if (prediction.topology.ranks() > 1) {
        const scaling::RankSpread& spread = prediction.spread;
        std::printf(
            "# %lld ranks (steps as the profile's %zu ranks stepped side by side): the slowest rank's median "
            "step %.1f%% above the profile's rank 0, the ranks' own %.1f%%; a rank waits %.2f ms for the "
            "slowest\n",
            static_cast<long long>(prediction.topology.ranks()), times.rank_steps.size(),
            100 * (spread.slowest - 1), 100 * (spread.typical - 1), prediction.straggler * 1e3);
      }
  if (predictions.size() == 1) {
    if (fabric)
      print_schedule(predictions.front());
    else
      print_measured_schedule(predictions.front());
  }
  std::printf("\n");
  print_summary_header();
  for (const auto& prediction : predictions) print_summary_row(prediction);
  return 0;
}

}  // namespace

std::function<int()> add_scaling_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "scaling", "Predict step time, images/s and scaling efficiency at N GPUs from the fabric's figures");
  auto arguments = std::make_shared<ScalingArguments>();
  command->add_option("config", arguments->config_path, "Training config (YAML); or --layers");
  command->add_option("--layers", arguments->layer_table,
                      "A layer table (JSON: per layer parameters and multiply-adds) instead of a config");
  auto* nodes = command->add_option("--nodes", arguments->nodes, "Nodes (default 1)");
  command->add_option("--gpus-per-node", arguments->gpus_per_node, "GPUs (ranks) per node (default 1)");
  command->add_option("--fabric", arguments->fabric, "A fabric preset or a fabric file (JSON)");
  command->add_option(
      "--transport", arguments->transport,
      "Instead of --fabric: the all-reduce measured by `bench calibrate` (shared_memory, network "
      "or nccl, from --profile), at the rank count it was measured at");
  command->add_option("--profile", arguments->profile,
                      "Per-layer times from `phalanx bench calibrate` (JSON)");
  command->add_option("--images-per-second", arguments->images_per_second,
                      "One device's training images/s at the local batch (instead of --profile)");
  command->add_option("--device", arguments->device,
                      "A published GPU (p100, v100, a100, h100, h200; fp32) instead of --images-per-second");
  command->add_option("--batch-size", arguments->batch_size,
                      "Images per rank and step (default: train.batch_size)");
  command->add_option("--bucket-mb", arguments->bucket_mb,
                      "Bucket size in MiB (default: distributed.bucket_mb)");
  command->add_option("--sweep-nodes", arguments->sweep_nodes, "Node counts to predict, e.g. 1,2,4,8")
      ->delimiter(',')
      ->excludes(nodes);
  command->add_option("--sample-shape", arguments->sample_shape,
                      "One image as HxWxC, where the config's dataset is not at hand");
  command->add_option("--classes", arguments->classes, "Classes, with --sample-shape");
  command->add_option("--set", arguments->overrides, "Override a config key (repeatable)");
  command->add_option("--nccl-algo", arguments->nccl_algo,
                      "The algorithms NCCL may use, as NCCL_ALGO: ring, tree or ring,tree (the default; "
                      "NCCL before 2.4 had rings only)");
  command->add_option("--buckets-as", arguments->buckets_as,
                      "Whose gradient buckets: phalanx (the flat buffer cut, the default), ddp (PyTorch "
                      "DDP's, whole tensors) or horovod (Horovod's tensor fusion per cycle, whole tensors)");
  command->add_option("--fusion-cycle-ms", arguments->fusion_cycle_ms,
                      "With --buckets-as horovod: its cycle in ms (HOROVOD_CYCLE_TIME, default 5)");
  command->add_flag("--json", arguments->json, "Print the prediction as JSON");
  return [=]() -> int {
    if (!*command) return -1;
    arguments->batch_size_given = command->count("--batch-size") > 0;
    arguments->images_per_second_given = command->count("--images-per-second") > 0;
    arguments->bucket_mb_given = command->count("--bucket-mb") > 0;
    arguments->fusion_cycle_given = command->count("--fusion-cycle-ms") > 0;
    arguments->nccl_algo_given = command->count("--nccl-algo") > 0;
    arguments->buckets_as_given = command->count("--buckets-as") > 0;
    return run_scaling(*arguments);
  };
}

}  // namespace phalanx::cli
