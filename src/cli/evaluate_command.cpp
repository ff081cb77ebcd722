// `phalanx eval` and `phalanx predict`: rebuild the model from a checkpoint (its config is in
// the file) and run it on a split of a dataset: --data, or without it the data the checkpoint was
// trained on (its config's data.path or data.source, so a mapped source evaluates in place too).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "commands.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/distinct_files.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/data/source_statistics.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/evaluation.hpp"
#include "phalanx/train/input_size.hpp"
#include "phalanx/train/predictions.hpp"
#include "phalanx/train/rank_resources.hpp"
#include "phalanx/train/top_k.hpp"
#include "rank_setup.hpp"

namespace phalanx::cli {
namespace {

struct EvaluateArguments {
  std::string checkpoint;
  std::string data;
  std::string split = "test";
  config::Device device = config::Device::Auto;
  std::string output = "predictions.h5";
  int batch_size = 256;
};

struct LoadedModel {
  config::Config config;
  train::RankResources resources;
  data::DatasetInfo info;
  data::Split split;
  std::unique_ptr<nn::Model> model;
  // Open from reading the config to loading the weights: one seal check, one header parse.
  std::unique_ptr<train::OpenCheckpoint> checkpoint;
};

// Two steps, each agreed across the ranks: reading the inputs may fail on some ranks only, and the
// device choice that follows is collective over each node.
// `whole_split`: this rank needs every sample (predict writes them all from one rank); otherwise
// it reads only its evaluation part.
void load(const EvaluateArguments& arguments, const comm::Communicator& world, bool whole_split,
          LoadedModel& loaded) {
  PHALANX_REQUIRE_INPUT(arguments.batch_size >= 1, "--batch-size must be >= 1 (got ", arguments.batch_size,
                        ")");
  loaded.checkpoint = std::make_unique<train::OpenCheckpoint>(arguments.checkpoint);
  const train::CheckpointHeader& header = loaded.checkpoint->header();
  loaded.config = config::parse(header.config_text, arguments.checkpoint + ":/config");
  if (!arguments.data.empty()) {
    loaded.info = data::read_dataset_info(arguments.data);
    loaded.split = train::evaluation_input(
        loaded.config.data, whole_split
                                ? data::read_split(arguments.data, arguments.split)
                                : train::read_evaluation_part(arguments.data, arguments.split, world));
    return;
  }
  // The training data's mean and std: a mapped source's come from the sidecar in the checkpoint's
  // run directory (RUN/checkpoints/step-N.h5), or are computed again, exactly, when it is not there.
  const auto& data = loaded.config.data;
  // The path is the training run's, relative to where that run started: said so, with the way out.
  PHALANX_REQUIRE_INPUT(data.source.enabled() || std::filesystem::exists(data.path), data.path,
                        ": no such file (data.path of ", arguments.checkpoint,
                        ":/config, as the training run named it; give the dataset with --data FILE)");
  const std::string run_directory =
      std::filesystem::path(arguments.checkpoint).parent_path().parent_path().string();
  loaded.info = data::describe_dataset(data, run_directory, world);
  loaded.split =
      train::evaluation_input(data, whole_split ? data::read_whole_split(data, arguments.split)
                                                : train::read_evaluation_part(data, arguments.split, world));
}

// What was evaluated, for the report line: the file, or the mapped split's images.
// --batch-size, but no more than the samples this rank holds: a batch larger than the split would
// only allocate buffers for samples that do not exist.
int inference_batch(const EvaluateArguments& arguments, const LoadedModel& loaded) {
  return static_cast<int>(std::clamp<std::int64_t>(loaded.split.count, 1, arguments.batch_size));
}

std::string data_name(const EvaluateArguments& arguments, const LoadedModel& loaded) {
  if (!arguments.data.empty()) return arguments.data;
  const auto& data = loaded.config.data;
  if (!data.source.enabled()) return data.path;
  const auto& source = data.source;
  const config::SourceSplitConfig& split = arguments.split == "test"  ? source.test
                                           : arguments.split == "val" ? source.val
                                                                      : source.train;
  if (!split.empty()) return split.images.text() + " (data.source)";
  return source.train.images.text() + " (data.source, carved from train)";
}

void build_model(const EvaluateArguments& arguments, const comm::Communicator& world, LoadedModel& loaded) {
  const auto& config = loaded.config;
  loaded.resources = train::make_rank_resources(arguments.device, config.threads, world);
  const Shape sample{loaded.split.height, loaded.split.width, loaded.split.channels};
  try {
    loaded.model =
        std::make_unique<nn::Model>(config.model, sample, static_cast<int>(loaded.info.classes.size()),
                                    *loaded.resources.backend, config.seed);
  } catch (const Error& error) {
    // A model that does not fit the data: which checkpoint, which data.
    if (error.exit_status() != 2) throw;
    throw_input_error(arguments.checkpoint + " on " + data_name(arguments, loaded) + ": " + error.message());
  }
  loaded.checkpoint->load(*loaded.resources.backend, loaded.model->registry(), nullptr);
  loaded.checkpoint.reset();
}

int evaluate(const EvaluateArguments& arguments, int* argc, char*** argv) {
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();
  LoadedModel loaded;
  if (int status = agreed_status(world, [&] { load(arguments, world, false, loaded); })) return status;
  if (int status = agreed_status(
          world, [&] { build_model(arguments, world, loaded); }, loaded.config.distributed.timeout_s))
    return status;
  // Top-5 besides top-1 when the model has more than 5 classes, as training reports.
  const auto top_k = train::reported_top_k({}, loaded.model->classes(), data_name(arguments, loaded));
  const auto result =
      train::evaluate(*loaded.model, loaded.split, loaded.info.mean, loaded.info.standard_deviation, world,
                      inference_batch(arguments, loaded), top_k);
  std::string top_k_text;
  for (const auto& top : result.top_k) {
    char text[64];
    std::snprintf(text, sizeof(text), "  top-%d accuracy %.4f", top.k, top.accuracy);
    top_k_text += text;
  }
  if (world.rank() == 0)
    std::printf("%s split of %s: accuracy %.4f  loss %.4f%s  (%lld samples, %.2f s, %s)\n",
                arguments.split.c_str(), data_name(arguments, loaded).c_str(), result.accuracy, result.loss,
                top_k_text.c_str(), static_cast<long long>(result.samples), result.seconds,
                loaded.resources.backend->name().c_str());
  return 0;
}

int predict(const EvaluateArguments& arguments, int* argc, char*** argv) {
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();
  LoadedModel loaded;
  if (int status = agreed_status(world, [&] {
        load(arguments, world, world.rank() == 0, loaded);
        require_another_file(arguments.checkpoint, arguments.output, "checkpoint");
        const std::string data = arguments.data.empty() ? loaded.config.data.path : arguments.data;
        if (!data.empty()) require_another_file(data, arguments.output, "dataset");
      }))
    return status;
  if (int status = agreed_status(
          world, [&] { build_model(arguments, world, loaded); }, loaded.config.distributed.timeout_s))
    return status;
  if (world.rank() != 0) return 0;  // one writer; inference of a split is cheap next to training
  return run_or_abort(world, [&] {
    const auto predictions =
        train::predict_split(*loaded.model, loaded.split, loaded.info.mean, loaded.info.standard_deviation,
                             inference_batch(arguments, loaded));
    train::write_predictions(arguments.output, predictions, loaded.info.classes);
    std::int64_t correct = 0;
    for (std::size_t index = 0; index < predictions.labels.size(); ++index)
      correct += predictions.predicted_class[index] == predictions.labels[index];
    std::printf("wrote %zu predictions to %s (accuracy %.4f)\n", predictions.labels.size(),
                arguments.output.c_str(),
                predictions.labels.empty() ? 0.0 : static_cast<double>(correct) / predictions.labels.size());
  });
}

void add_common_options(CLI::App* command, EvaluateArguments& arguments) {
  command->add_option("--checkpoint", arguments.checkpoint, "Checkpoint (.h5) written by phalanx train")
      ->required();
  command->add_option("--data", arguments.data,
                      "Dataset (.h5); default: the data the checkpoint was trained on (data.path or data.source)");
  command->add_option("--split", arguments.split, "Split to use (default test)");
  std::map<std::string, config::Device> devices;
  for (const auto& name : config::names_of<config::Device>()) devices[name] = *config::word_named<config::Device>(name);
  command->add_option("--device", arguments.device, "cpu | cuda | auto")->transform(CLI::CheckedTransformer(devices));
  command->add_option("--batch-size", arguments.batch_size, "Inference batch size (default 256)");
}

}  // namespace

std::function<int()> add_eval_command(CLI::App& app, int* argc, char*** argv) {
  auto arguments = std::make_shared<EvaluateArguments>();
  auto* command = app.add_subcommand("eval", "Evaluate a checkpoint on a dataset split");
  add_common_options(command, *arguments);
  return [arguments, argc, argv, command] { return *command ? evaluate(*arguments, argc, argv) : -1; };
}

std::function<int()> add_predict_command(CLI::App& app, int* argc, char*** argv) {
  auto arguments = std::make_shared<EvaluateArguments>();
  auto* command = app.add_subcommand("predict", "Write a checkpoint's predictions for a dataset split");
  add_common_options(command, *arguments);
  command->add_option("--output", arguments->output, "Output file (default predictions.h5)");
  return [arguments, argc, argv, command] { return *command ? predict(*arguments, argc, argv) : -1; };
}

}  // namespace phalanx::cli
