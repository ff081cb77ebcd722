// `phalanx eval` and `phalanx predict`: rebuild the model from a checkpoint (its config is in
// the file) and run it on a split of a dataset.
#include <cstdio>

#include "commands.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"
#include "phalanx/train/checkpoint.hpp"
#include "phalanx/train/evaluation.hpp"
#include "phalanx/train/predictions.hpp"
#include "rank_setup.hpp"

namespace phalanx::cli {
namespace {

struct EvaluateArguments {
  std::string checkpoint;
  std::string data;
  std::string split = "test";
  std::string device = "auto";
  std::string output = "predictions.h5";
  int batch_size = 256;
};

struct LoadedModel {
  config::Config config;
  RankResources resources;
  data::DatasetInfo info;
  data::Split split;
  std::unique_ptr<nn::Model> model;
};

// Two steps, each agreed across the ranks: reading the inputs may fail on some ranks only, and the
// device choice that follows is collective over each node.
// `whole_split`: this rank needs every sample (predict writes them all from one rank); otherwise
// it reads only its evaluation part.
void load(const EvaluateArguments& arguments, const comm::Communicator& world, bool whole_split,
          LoadedModel& loaded) {
  PHALANX_REQUIRE_INPUT(arguments.batch_size >= 1, "--batch-size must be >= 1 (got ", arguments.batch_size,
                        ")");
  const auto header = train::read_checkpoint_header(arguments.checkpoint);
  loaded.config = config::parse(header.config_text, arguments.checkpoint + ":/config");
  loaded.info = data::read_dataset_info(arguments.data);
  loaded.split = whole_split ? data::read_split(arguments.data, arguments.split)
                             : train::read_evaluation_part(arguments.data, arguments.split, world);
}

void build_model(const EvaluateArguments& arguments, const comm::Communicator& world, LoadedModel& loaded) {
  const auto& config = loaded.config;
  loaded.resources = make_rank_resources(arguments.device, config.threads, world);
  const Shape sample{loaded.split.height, loaded.split.width, loaded.split.channels};
  loaded.model =
      std::make_unique<nn::Model>(config.model, sample, static_cast<int>(loaded.info.classes.size()),
                                  *loaded.resources.backend, config.seed);
  train::load_checkpoint(arguments.checkpoint, *loaded.resources.backend, loaded.model->registry(), nullptr);
}

int evaluate(const EvaluateArguments& arguments, int* argc, char*** argv) {
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();
  LoadedModel loaded;
  if (int status = agree(world, [&] { load(arguments, world, false, loaded); })) return status;
  if (int status = agree(world, [&] { build_model(arguments, world, loaded); })) return status;
  const auto result = train::evaluate(*loaded.model, loaded.split, loaded.info.mean,
                                      loaded.info.standard_deviation, world, arguments.batch_size);
  if (world.rank() == 0)
    std::printf("%s split of %s: accuracy %.4f  loss %.4f  (%lld samples, %.2f s, %s)\n",
                arguments.split.c_str(), arguments.data.c_str(), result.accuracy, result.loss,
                static_cast<long long>(result.samples), result.seconds,
                loaded.resources.backend->name().c_str());
  return 0;
}

int predict(const EvaluateArguments& arguments, int* argc, char*** argv) {
  comm::MpiSession session(argc, argv);
  const auto world = comm::Communicator::world();
  LoadedModel loaded;
  if (int status = agree(world, [&] { load(arguments, world, world.rank() == 0, loaded); })) return status;
  if (int status = agree(world, [&] { build_model(arguments, world, loaded); })) return status;
  if (world.rank() != 0) return 0;  // one writer; inference of a split is cheap next to training
  return run_or_abort(world, [&] {
    const auto predictions = train::predict_split(*loaded.model, loaded.split, loaded.info.mean,
                                                  loaded.info.standard_deviation, arguments.batch_size);
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
  command->add_option("--data", arguments.data, "Dataset (.h5)")->required();
  command->add_option("--split", arguments.split, "Split to use (default test)");
  command->add_option("--device", arguments.device, "cpu | cuda | auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
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
