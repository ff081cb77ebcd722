// The JSON of the sweep protocol on the coordinator's side (see messages.hpp); the worker writes
// the same fields in worker.cpp.
#include "messages.hpp"

#include <nlohmann/json.hpp>

#include "phalanx/core/error.hpp"

namespace phalanx::sweep {
namespace {

JobSteps decode_steps(const nlohmann::json& message) {
  JobSteps steps;
  steps.start_step = message.at("start_step").get<std::int64_t>();
  steps.end_step = message.at("end_step").get<std::int64_t>();
  steps.target_step = message.value("target_step", steps.end_step);
  steps.resumed_from = message.at("resumed_from").get<std::string>();
  return steps;
}

std::vector<EpochRecord> decode_history(const nlohmann::json& history) {
  std::vector<EpochRecord> epochs;
  for (const auto& entry : history)
    epochs.push_back({entry.value("epoch", std::int64_t{0}), entry.value("test_accuracy", 0.0),
                      entry.value("test_loss", 0.0), entry.value("train_loss", 0.0),
                      entry.value("epoch_seconds", 0.0)});
  return epochs;
}

WorkerMessage decode(const nlohmann::json& message) {
  const std::string type = message.at("type");
  const int worker = message.at("worker").get<int>();
  if (type == "hello")
    return Hello{worker,
                 message.at("ranks").get<std::vector<int>>(),
                 message.at("gpu").get<bool>(),
                 message.at("device").get<std::string>(),
                 message.at("threads").get<int>(),
                 message.at("host").get<std::string>()};
  const auto job_id = message.at("job").get<std::int64_t>();
  if (type == "result")
    return JobResult{worker,
                     job_id,
                     message.at("metric").get<double>(),
                     decode_steps(message),
                     message.at("train_seconds").get<double>(),
                     message.at("images_per_sec").get<double>(),
                     decode_history(message.at("history"))};
  if (type == "failed") return JobFailed{worker, job_id, message.at("message").get<std::string>()};
  if (type == "interrupted")
    return JobInterrupted{worker, job_id, message.at("signal").get<int>(), decode_steps(message)};
  if (type == "handed_over") {
    PHALANX_CHECK(message.contains("target_step"), "a handed_over message without target_step");
    return JobHandedOver{worker, job_id, decode_steps(message)};
  }
  throw_internal_error("worker " + std::to_string(worker) + " sent a message of unknown type '" + type + "'",
                       __FILE__, __LINE__);
}

}  // namespace

WorkerMessage decode_worker_message(const std::string& text) {
  try {
    return decode(nlohmann::json::parse(text));
  } catch (const nlohmann::json::exception& error) {
    throw_internal_error(
        "the sweep coordinator cannot read a worker's message (" + std::string(error.what()) + "): " + text,
        __FILE__, __LINE__);
  }
}

std::string job_message(std::int64_t job_id, int trial, int rung, double budget,
                        const std::vector<std::string>& assignments, const std::vector<int>& ranks) {
  nlohmann::json message = {{"type", "job"}, {"job", job_id},    {"trial", trial},
                            {"rung", rung},  {"budget", budget}, {"assignments", assignments}};
  if (!ranks.empty()) message["ranks"] = ranks;
  return message.dump();
}

std::string handover_message(std::int64_t job_id) {
  return nlohmann::json{{"type", "handover"}, {"job", job_id}}.dump();
}

std::string stop_message() {
  return nlohmann::json{{"type", "stop"}}.dump();
}

}  // namespace phalanx::sweep
