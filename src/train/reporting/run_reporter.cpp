// What a run writes and prints about itself (run_reporter.hpp): start lines, epoch events and
// lines, summary.json. Events go to metrics.jsonl (and TensorBoard) through the run directory;
// lines through Progress, which only rank 0 prints.
#include "reporting/run_reporter.hpp"

#include <algorithm>
#include <cstdio>

#include "phalanx/core/timer.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/report/run_report.hpp"
#include "phalanx/train/build_information.hpp"
#include "phalanx/train/top_k.hpp"
#include "reporting/breakdown_table.hpp"
#include "reporting/step_time_statistics.hpp"

namespace phalanx::train {
namespace {

nlohmann::json machine_json(const std::vector<monitor::MetricField>& fields) {
  nlohmann::json machine;
  for (const auto& field : fields) machine[field.name] = field.value;
  return machine;
}

std::string elastic_line(const nlohmann::json& facts, const TrainingSetup& setup, int world_size) {
  const std::string checkpoint_ranks = std::to_string(facts["checkpoint_world_size"].get<int>());
  if (!facts.contains("learning_rate_rule"))
    return "elastic resume: the checkpoint's " + checkpoint_ranks + " ranks' global batch of " +
           std::to_string(setup.global_batch) + " continues on " + std::to_string(world_size) +
           " ranks (same samples per update, same schedule); their running loss sums merged on rank 0";
  char rates[160];
  std::snprintf(rates, sizeof(rates), "learning rate %g -> %g (elastic.learning_rate_rule: %s)",
                facts["checkpoint_learning_rate"].get<double>(), setup.learning_rate,
                facts["learning_rate_rule"].get<std::string>().c_str());
  return "elastic resume: global batch " + std::to_string(facts["checkpoint_global_batch"].get<std::int64_t>()) +
         " on " + checkpoint_ranks + " ranks -> " + std::to_string(setup.global_batch) + " on " +
         std::to_string(world_size) + " ranks (elastic.global_batch: change), " + rates + ", continuing at batch " +
         std::to_string(setup.position.step_in_epoch) + " of " + std::to_string(setup.steps_per_epoch) +
         " of epoch " + std::to_string(setup.position.epoch + 1);
}

// test_accuracy, test_loss and each test_top<k>_accuracy, in that order; then the weight
// average's, each with ema_ before it.
nlohmann::json test_fields(const EpochEvaluation& evaluation) {
  nlohmann::json fields = nlohmann::json::object();
  const auto add = [&](const EvaluationResult& result, const std::string& prefix) {
    fields[prefix + "test_accuracy"] = result.accuracy;
    fields[prefix + "test_loss"] = result.loss;
    for (const TopKAccuracy& top : result.top_k)
      fields[prefix + "test_" + top_k_accuracy_name(top.k)] = top.accuracy;
  };
  add(evaluation.test, "");
  if (evaluation.average) add(*evaluation.average, "ema_");
  return fields;
}

// Wall seconds from the start of the run to the first evaluation at or above each accuracy.
nlohmann::json seconds_to_accuracy(const nlohmann::json& history) {
  nlohmann::json to_accuracy = nlohmann::json::object();
  for (const double threshold : {0.85, 0.90, 0.91, 0.92, 0.93})
    for (const auto& entry : history)
      if (entry["test_accuracy"].get<double>() >= threshold) {
        char key[16];
        std::snprintf(key, sizeof(key), "%.2f", threshold);
        to_accuracy[key] = entry["elapsed_seconds"];
        break;
      }
  return to_accuracy;
}

std::string batch_split_line(const BatchSplit& split, int world_size) {
  std::string line = "batch split: " + split.description();
  if (split.stored_in.empty()) return line;
  if (split.checkpoint_local_batches.empty()) return line + " (as stored in " + split.stored_in + ")";
  return line + " (the global batch of " + split.stored_in + " cut over " + std::to_string(world_size) + " ranks)";
}

}  // namespace

nlohmann::json evaluation_fields(const EpochEvaluation& evaluation) {
  nlohmann::json fields = test_fields(evaluation);
  fields["train_loss"] = evaluation.train_loss;
  return fields;
}

RunReporter::RunReporter(const TrainingSetup& setup, const comm::Communicator& communicator,
                         const backend::Backend& backend, RunDirectory& run_directory, Progress& progress,
                         double start_wall)
    : setup_(setup),
      communicator_(communicator),
      backend_(backend),
      run_directory_(run_directory),
      progress_(progress),
      start_wall_(start_wall),
      machine_(backend) {
  if (const std::string reason = machine_.gpu_unavailable_reason(); !reason.empty())
    progress_.line("GPU metrics unavailable: " + reason);
}

void RunReporter::start() {
  // What train.precision/activation_dtype: auto became here, then how the backend computes so.
  std::string arithmetic_note = describe_resolution(setup_.config.train, setup_.arithmetic);
  if (const std::string backend_note = backend_.arithmetic_note(); !backend_note.empty())
    arithmetic_note += (arithmetic_note.empty() ? "" : ", ") + backend_note;
  const auto rank_lines = communicator_.gather_strings(
      "rank " + std::to_string(communicator_.rank()) + ", host " + communicator_.host_name() + ", device " +
          backend_.name() + ", threads " + std::to_string(setup_.threads) +
          (arithmetic_note.empty() ? std::string() : ", " + arithmetic_note),
      0);
  for (const auto& line : rank_lines) progress_.line(line);
  progress_.line(setup_.model->summary() + "; " + std::to_string(setup_.train_split->count) +
                 " training images, global batch " + std::to_string(setup_.global_batch) + ", " +
                 std::to_string(setup_.steps_per_epoch) + " steps per epoch");
  if (!setup_.batch_split.local_batches.empty())
    progress_.line(batch_split_line(setup_.batch_split, communicator_.size()));
  progress_.line("data cache: " + setup_.train_split->cache_description);
  initial_weights_lines();
  if (setup_.resumed_from.empty()) return;
  const TrainingPosition& position = setup_.position;
  progress_.line("resumed from " + setup_.resumed_from + " at epoch " + std::to_string(position.epoch + 1) +
                 ", step " + std::to_string(position.step_in_epoch));
  if (setup_.elastic.is_object()) progress_.line(elastic_line(setup_.elastic, setup_, communicator_.size()));
  if (!setup_.resumed_totals &&
      (position.step_in_epoch > 0 || position.global_step % setup_.config.train.log_every_steps != 0))
    progress_.line("the checkpoint holds no running loss totals (written by an earlier version): epoch " +
                   std::to_string(position.epoch + 1) +
                   "'s train_loss and the next step event's loss count the steps after the resume only");
}

void RunReporter::initial_weights_lines() {
  const InitialWeights& initial = setup_.initial_weights;
  if (!initial.file.empty()) {
    progress_.line("weights from " + initial.file + " (" + std::to_string(initial.tensors) +
                   " parameters and buffers, names and shapes checked)");
    if (!initial.reinitialised.empty()) {
      std::string names;
      for (const std::string& name : initial.reinitialised) names += (names.empty() ? "" : ", ") + name;
      progress_.line("classifier head re-initialised for " + std::to_string(setup_.dataset.classes.size()) +
                     " classes (the file's has another class count): " + names);
    }
  }
  if (initial.frozen_tensors > 0) {
    std::string prefixes;
    for (const std::string& prefix : setup_.config.train.freeze)
      prefixes += (prefixes.empty() ? "" : ", ") + prefix;
    progress_.line("frozen (train.freeze: " + prefixes + "): " + std::to_string(initial.frozen_tensors) +
                   " of " + std::to_string(setup_.model->registry().parameters_info().size()) +
                   " parameter tensors, " + std::to_string(initial.frozen_values) + " of " +
                   std::to_string(setup_.model->size().parameters) + " values");
  }
}

void RunReporter::accumulation(const std::vector<std::uint64_t>& micro_batches) {
  if (std::none_of(micro_batches.begin(), micro_batches.end(), [](std::uint64_t count) { return count > 1; }))
    return;
  const auto& train = setup_.config.train;
  std::string text = "gradient accumulation: micro-batches per rank [";
  for (std::size_t rank = 0; rank < micro_batches.size(); ++rank)
    text += (rank ? ", " : "") + std::to_string(micro_batches[rank]);
  progress_.line(text + "], one all-reduce and update per step (train.accumulation_steps: " +
                 (train.accumulation_steps ? std::to_string(train.accumulation_steps) : "auto") +
                 ", train.batch_size " + std::to_string(train.batch_size) + ")");
}

void RunReporter::close_epoch_metrics(double epoch_seconds) {
  epoch_machine_fields_ = machine_.close_interval(epoch_seconds);
}

void RunReporter::epoch_end(std::int64_t epoch, const TrainingRecord& record, double epoch_seconds,
                            const EpochEvaluation& evaluation, const GradientNorms& gradient_norms) {
  const std::int64_t epoch_steps = record.epoch_steps;
  const EvaluationResult& result = evaluation.test;
  last_evaluation_ = evaluation_fields(evaluation);
  const double images_per_sec =
      epoch_seconds > 0
          ? static_cast<double>(epoch_steps) * static_cast<double>(setup_.global_batch) / epoch_seconds
          : 0.0;
  const double elapsed = wall_seconds_since_epoch() - start_wall_;
  nlohmann::json entry = {{"epoch", epoch + 1}, {"elapsed_seconds", elapsed}};
  entry.update(last_evaluation_);
  entry["epoch_seconds"] = epoch_seconds;
  entry["eval_seconds"] = result.seconds;
  history_.push_back(std::move(entry));
  const nlohmann::json breakdown = record.epoch_times.to_json(epoch_steps);
  nlohmann::json epoch_event = {{"event", "epoch"},
                                {"epoch", epoch + 1},
                                {"step", setup_.position.global_step},
                                {"train_loss", evaluation.train_loss},
                                {"seconds", epoch_seconds},
                                {"time", elapsed},
                                {"images_per_sec", images_per_sec},
                                {"time_breakdown", breakdown}};
  if (gradient_norms.updates > 0) epoch_event["grad_norm"] = gradient_norms.to_json();
  if (!epoch_machine_fields_.empty()) epoch_event["machine"] = machine_json(epoch_machine_fields_);
  run_directory_.append_metrics(epoch_event);
  nlohmann::json eval_event = {
      {"event", "eval"}, {"epoch", epoch + 1}, {"step", setup_.position.global_step}};
  eval_event.update(test_fields(evaluation));
  eval_event["seconds"] = result.seconds + (evaluation.average ? evaluation.average->seconds : 0.0);
  eval_event["time"] = elapsed;
  run_directory_.append_metrics(eval_event);
  if (communicator_.rank() == 0) {
    char average[96] = "";
    if (evaluation.average)
      std::snprintf(average, sizeof(average), "  ema test loss %.4f  ema test accuracy %.4f",
                    evaluation.average->loss, evaluation.average->accuracy);
    char text[640];
    std::snprintf(
        text, sizeof(text),
        "epoch %lld: train loss %.4f  test loss %.4f  test accuracy %.4f%s  (%.1f s, %.0f img/s; per step: "
        "data %.1f ms, forward %.1f, backward %.1f, all-reduce wait %.1f, optimizer %.1f)",
        static_cast<long long>(epoch + 1), evaluation.train_loss, result.loss, result.accuracy, average,
        epoch_seconds, images_per_sec, breakdown["data_wait"]["ms_per_step"].get<double>(),
        breakdown["forward"]["ms_per_step"].get<double>(), breakdown["backward"]["ms_per_step"].get<double>(),
        breakdown["allreduce_wait"]["ms_per_step"].get<double>(),
        breakdown["optimizer"]["ms_per_step"].get<double>());
    progress_.line(text);
  }
  print_breakdown_table(breakdown);
}

void RunReporter::partial_epoch_end(const EpochEvaluation& evaluation) {
  last_evaluation_ = evaluation_fields(evaluation);
  nlohmann::json eval_event = {
      {"event", "eval"}, {"step", setup_.position.global_step}, {"epoch", setup_.position.epoch}};
  eval_event.update(test_fields(evaluation));
  eval_event["time"] = wall_seconds_since_epoch() - start_wall_;
  run_directory_.append_metrics(eval_event);
}

void RunReporter::print_breakdown_table(const nlohmann::json& breakdown) {
  // Collective: every rank's breakdown of the epoch, one row each, printed by rank 0.
  const auto gathered = communicator_.gather_strings(breakdown.dump(), 0);
  if (communicator_.rank() != 0) return;
  std::vector<nlohmann::json> breakdowns;
  for (const auto& text : gathered) breakdowns.push_back(nlohmann::json::parse(text));
  progress_.line("time per step by rank (ms):\n" + breakdown_table(breakdowns));
}

nlohmann::json RunReporter::rank_entry(const TrainingRecord& record, int micro_batches, double local_rate) {
  const int local_batch = setup_.local_batches[static_cast<std::size_t>(communicator_.rank())];
  nlohmann::json entry = {
      {"rank", communicator_.rank()}, {"host", communicator_.host_name()},
      {"device", backend_.name()},    {"threads", setup_.threads},
      {"images_per_sec", local_rate}, {"time_breakdown", record.run_times.to_json(record.run_steps)},
      {"local_batch", local_batch},   {"micro_batches", micro_batches}};
  entry["step_time_ms"] = record.step_statistics.to_json();
  for (const auto& [name, value] : machine_.totals()) entry["machine"][name] = value;
  return entry;
}

nlohmann::json RunReporter::finish(const TrainingRecord& record, int micro_batches) {
  const TrainingPosition& position = setup_.position;
  const int local_batch = setup_.local_batches[static_cast<std::size_t>(communicator_.rank())];
  // Throughput over all ranks: every rank runs the same number of steps in lockstep.
  const double local_rate =
      record.measured_seconds > 0
          ? static_cast<double>(record.measured_steps * local_batch) / record.measured_seconds
          : 0.0;
  double slowest_seconds = record.measured_seconds;
  communicator_.allreduce_max(&slowest_seconds, 1);
  const double overall_rate =
      slowest_seconds > 0 ? static_cast<double>(record.measured_steps * setup_.global_batch) / slowest_seconds
                          : 0.0;
  const auto rank_entries = communicator_.gather_strings(rank_entry(record, micro_batches, local_rate).dump(), 0);

  nlohmann::json summary = last_evaluation_;
  const std::int64_t schedule_step = position.epoch * setup_.steps_per_epoch + position.step_in_epoch;
  summary["epochs"] = static_cast<double>(schedule_step) / static_cast<double>(setup_.steps_per_epoch);
  summary["steps"] = position.global_step;
  summary["global_batch"] = setup_.global_batch;
  BatchSplit split = setup_.batch_split;
  if (split.local_batches.empty()) {
    split.method = "equal";
    split.local_batches = setup_.local_batches;
  }
  summary["batch_split"] = split.to_json();
  summary["world_size"] = communicator_.size();
  summary["version"] = build_information();
  summary["images_per_sec"] = overall_rate;
  summary["wall_seconds"] = wall_seconds_since_epoch() - start_wall_;
  summary["time_breakdown"] = record.run_times.to_json(record.run_steps);
  summary["ranks"] = nlohmann::json::array();
  for (const auto& entry : rank_entries) summary["ranks"].push_back(nlohmann::json::parse(entry));
  summary["step_time_skew"] = step_time_skew(summary["ranks"]);
  summary["history"] = history_;
  for (const auto& [name, value] : machine_.totals()) summary["machine"][name] = value;
  summary["seconds_to_accuracy"] = seconds_to_accuracy(history_);
  summary["run_dir"] = run_directory_.path();
  summary["dataset"] = data::source_name(setup_.config.data);  // data.path, or the mapped training images
  summary["parameters"] = setup_.model->size().parameters;
  if (!setup_.resumed_from.empty()) summary["resumed_from"] = setup_.resumed_from;
  if (!setup_.initial_weights.file.empty())
    summary["init_from"] = {{"file", setup_.initial_weights.file},
                            {"reinitialised", setup_.initial_weights.reinitialised}};
  if (setup_.initial_weights.frozen_tensors > 0)
    summary["frozen"] = {{"tensors", setup_.initial_weights.frozen_tensors},
                         {"values", setup_.initial_weights.frozen_values}};
  if (setup_.elastic.is_object()) summary["elastic"] = setup_.elastic;
  if (setup_.loss_scaler)
    summary["loss_scaling"] = {{"final_scale", setup_.loss_scaler->scale()},
                               {"skipped_steps", setup_.loss_scaler->state().skipped_steps}};
  else if (setup_.nonfinite_guard->policy() == config::NonFinite::Skip)
    summary["nonfinite_skipped_steps"] = setup_.nonfinite_guard->skipped_steps();
  for (const auto& [key, value] : summary_additions_.items()) summary[key] = value;
  run_directory_.write_summary(summary);
  if (communicator_.rank() == 0) write_report();

  char text[256];
  std::snprintf(text, sizeof(text), "test accuracy %.4f  test loss %.4f  (%.0f img/s over %d ranks, %.1f s)",
                summary.value("test_accuracy", 0.0), summary.value("test_loss", 0.0), overall_rate,
                communicator_.size(), summary["wall_seconds"].get<double>());
  progress_.line(text);
  progress_.line("run directory: " + run_directory_.path());
  return summary;
}

void RunReporter::write_report() {
  // The report is a view of files already safely written: a failure to draw it must not turn a
  // finished run into a failed one.
  try {
    report::write_run_report(run_directory_.path());
  } catch (const std::exception& error) {
    progress_.line(std::string("report.html not written: ") + error.what());
  }
}

}  // namespace phalanx::train
