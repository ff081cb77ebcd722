// The run report from a run directory written here: every chart gets the series the files hold,
// GPU charts appear exactly when the epochs carry GPU metrics, and bad run directories are input
// errors that name the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "phalanx/core/error.hpp"
#include "phalanx/report/run_report.hpp"
#include "support/test_support.hpp"

namespace phalanx::report {
namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string metrics(bool gpu) {
  std::string lines;
  for (int step = 10; step <= 40; step += 10)
    lines += nlohmann::json({{"event", "step"},
                             {"step", step},
                             {"epoch", step / 21},
                             {"loss", 2.0 - step / 40.0},
                             {"accuracy", step / 50.0},
                             {"learning_rate", 0.01},
                             {"images_per_sec", 1000 + step},
                             {"time", step / 10.0}})
                 .dump() +
             "\n";
  for (int epoch = 1; epoch <= 2; ++epoch) {
    nlohmann::json event = {{"event", "epoch"},  {"epoch", epoch},           {"step", 20 * epoch},
                            {"train_loss", 1.5}, {"images_per_sec", 1200.0}, {"time", 2.0 * epoch}};
    event["machine"]["host_cpu_mean_percent"] = 50.0 + epoch;
    if (gpu) {
      event["machine"]["gpu_utilization_mean_percent"] = 80.0 + epoch;
      event["machine"]["gpu_power_mean_watts"] = 300.0;
      event["machine"]["gpu_energy_joules"] = 1000.0 * epoch;
    }
    lines += event.dump() + "\n";
    lines += nlohmann::json({{"event", "eval"},
                             {"epoch", epoch},
                             {"step", 20 * epoch},
                             {"test_accuracy", 0.8 + 0.05 * epoch},
                             {"test_loss", 0.5}})
                 .dump() +
             "\n";
  }
  return lines;
}

nlohmann::json summary() {
  nlohmann::json ranks = nlohmann::json::array();
  for (int rank = 0; rank < 3; ++rank)
    ranks.push_back(
        {{"rank", rank},
         {"device", "cpu"},
         {"time_breakdown",
          {{"forward", {{"ms_per_step", 3.0}}},
           {"backward", {{"ms_per_step", 6.0 + rank}}},
           {"sync_wait", {{"ms_per_step", 0.5}}},
           {"step_ms", 10.0}}},
         {"step_time_ms", {{"p50_ms", 10.0 + rank}, {"p90_ms", 12.0}, {"p99_ms", 13.0}, {"max_ms", 14.0}}},
         {"machine", {{"gpu_energy_joules", 1800.0}}}});
  return {{"test_accuracy", 0.9},
          {"world_size", 3},
          {"ranks", ranks},
          {"step_time_skew",
           {{"slowest_rank", 2},
            {"slowest_p50_ms", 12.0},
            {"fastest_rank", 0},
            {"fastest_p50_ms", 10.0},
            {"p50_ratio", 1.2}}}};
}

int points(const std::string& html, const std::string& series) {
  std::smatch match;
  const std::regex pattern("data-series=\"" + series + "\" data-points=\"(\\d+)\"");
  return std::regex_search(html, match, pattern) ? std::stoi(match[1]) : -1;
}

TEST(RunReport, ChartsHoldTheRunsSeries) {
  testing::ScratchDirectory run("run_report");
  write(run.file("metrics.jsonl"), metrics(false));
  write(run.file("summary.json"), summary().dump());
  write(run.file("config.yaml"), "name: tiny\nmodel: {preset: lenet5}\n");
  const std::string html = render_run_report(run.path().string());
  EXPECT_EQ(points(html, "train \\(rank 0 batches\\)"), 4);
  EXPECT_EQ(points(html, "test"), 2);
  EXPECT_EQ(points(html, "step"), 4);  // throughput
  EXPECT_NE(html.find("id=\"breakdown-chart\""), std::string::npos);
  // Waiting for peers after the optimizer is a stage of its own in the stacked bars.
  EXPECT_NE(html.find("data-segment=\"sync wait (peers)\""), std::string::npos);
  for (const char* bar : {"rank 0", "rank 1", "rank 2"})
    EXPECT_NE(html.find(std::string("data-bar=\"") + bar + "\""), std::string::npos) << bar;
  EXPECT_NE(html.find("Slowest rank 2"), std::string::npos);
  EXPECT_NE(html.find("preset: lenet5"), std::string::npos);
  EXPECT_NE(html.find("No GPU metrics"), std::string::npos);
  EXPECT_EQ(html.find("gpu-utilization-chart"), std::string::npos);
}

TEST(RunReport, GpuMetricsAndEnergyWhenTheRunHadGpus) {
  testing::ScratchDirectory run("run_report_gpu");
  write(run.file("metrics.jsonl"), metrics(true));
  write(run.file("summary.json"), summary().dump());
  const std::string html = render_run_report(run.path().string());
  EXPECT_NE(html.find("id=\"gpu-utilization-chart\""), std::string::npos);
  EXPECT_NE(html.find("id=\"gpu-power-chart\""), std::string::npos);
  EXPECT_EQ(points(html, "gpu_utilization_mean_percent"), 2);
  // 3 ranks x 1800 J = 5400 J = 0.0015 kWh
  EXPECT_NE(html.find("0.0015 kWh (5400 J)"), std::string::npos);
}

TEST(RunReport, AnUnfinishedRunStillRendersAndBadDirectoriesAreInputErrors) {
  testing::ScratchDirectory run("run_report_partial");
  write(run.file("metrics.jsonl"), metrics(false));
  const std::string html = render_run_report(run.path().string());
  EXPECT_NE(html.find("did not finish"), std::string::npos);
  try {
    render_run_report(run.file("missing"));
    FAIL() << "no error for a missing run directory";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("missing"), std::string::npos);
  }
  write(run.file("summary.json"), "{not json");
  try {
    render_run_report(run.path().string());
    FAIL() << "no error for a malformed summary.json";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("summary.json"), std::string::npos);
  }
}

// Hand-edited or foreign files: a field of another type is one input error naming the files (it
// was nlohmann's text with exit 1), a skew without its other keys renders without them (operator[]
// on a missing key of a const object read past the map), a metrics file that is a folder is named.
TEST(RunReport, FieldsOfAnotherTypeOrMissingAreInputErrorsOrLeftOut) {
  testing::ScratchDirectory run("run_report_fields");
  write(run.file("metrics.jsonl"), metrics(false));
  write(run.file("summary.json"), R"({"ranks": [{"rank": 0}], "step_time_skew": {"p50_ratio": 1.2}})");
  const std::string html = render_run_report(run.path().string());
  EXPECT_NE(html.find("ratio 1.200"), std::string::npos);
  for (const char* summary :
       {R"({"ranks": 5})", R"({"ranks": [5]})", R"({"ranks": [{"rank": "x", "device": 3}]})"}) {
    write(run.file("summary.json"), summary);
    try {
      render_run_report(run.path().string());
      FAIL() << "no error for " << summary;
    } catch (const Error& error) {
      EXPECT_EQ(error.exit_status(), 2) << summary;
      EXPECT_NE(std::string(error.what()).find("metrics.jsonl or summary.json holds a field of another type"),
                std::string::npos)
          << error.what();
    }
  }
  std::filesystem::remove(run.file("summary.json"));
  std::filesystem::remove(run.file("metrics.jsonl"));
  std::filesystem::create_directory(run.file("metrics.jsonl"));
  try {
    render_run_report(run.path().string());
    FAIL() << "no error for a metrics.jsonl that is a folder";
  } catch (const Error& error) {
    EXPECT_EQ(error.exit_status(), 2);
    EXPECT_NE(std::string(error.what()).find("metrics.jsonl: a directory"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace phalanx::report
