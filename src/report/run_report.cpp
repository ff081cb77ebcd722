// The run report: reads the run directory's files back (never the trainer's memory), so the
// page written at the end of a run and a later `phalanx report RUN_DIR` are the same page.
#include "phalanx/report/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/report/chart.hpp"
#include "phalanx/report/html_page.hpp"

namespace phalanx::report {
namespace {

using nlohmann::json;

const char* const stage_names[] = {"data_wait",      "host_to_device", "forward",   "backward",
                                   "allreduce_wait", "optimizer",      "sync_wait", "other"};
const char* const stage_labels[] = {
    "data wait", "host to device",    "forward", "backward", "all-reduce (exposed)",
    "optimizer", "sync wait (peers)", "other"};

std::string read_text(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

std::vector<json> read_events(const std::string& path) {
  // An ifstream opens a directory as if it were an empty file.
  PHALANX_REQUIRE_INPUT(!std::filesystem::is_directory(path), path,
                        ": a directory, not the run's metrics file");
  std::ifstream stream(path);
  PHALANX_REQUIRE_INPUT(stream.good(), path, ": cannot read it (is this a phalanx run directory?)");
  std::vector<json> events;
  std::string line;
  for (int number = 1; std::getline(stream, line); ++number) {
    if (line.empty()) continue;
    json event = json::parse(line, nullptr, false);
    PHALANX_REQUIRE_INPUT(!event.is_discarded() && event.is_object(), path, ":", number,
                          ": not a JSON object (metrics.jsonl holds one event per line)");
    events.push_back(std::move(event));
  }
  return events;
}

double number_or_nan(const json& object, const char* key) {
  if (!object.is_object()) return std::nan("");
  const auto found = object.find(key);
  return found != object.end() && found->is_number() ? found->get<double>() : std::nan("");
}

std::string format(double value, const char* pattern = "%.4g") {
  if (!std::isfinite(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

std::string value_text(const json& value) {
  if (value.is_number_float()) return format(value.get<double>());
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// x = step of the event, y = a field of events of one kind.
Series series_of(const std::vector<json>& events, const char* kind, const char* field, std::string name,
                 const char* x_field = "step") {
  Series series{std::move(name), {}, {}};
  for (const auto& event : events)
    if (event.value("event", "") == kind) {
      series.x.push_back(number_or_nan(event, x_field));
      series.y.push_back(number_or_nan(event, field));
    }
  return series;
}

void add_curves(HtmlPage& page, const std::vector<json>& events) {
  page.heading("Training curves");
  Axes loss{"Loss", "step", "cross-entropy"};
  page.figure(line_chart(loss, {series_of(events, "step", "loss", "train (rank 0 batches)"),
                                series_of(events, "epoch", "train_loss", "train (epoch mean)"),
                                series_of(events, "eval", "test_loss", "test")}),
              "loss-chart");
  Axes accuracy{"Accuracy", "step", "fraction correct"};
  std::vector<Series> accuracies = {series_of(events, "step", "accuracy", "train (rank 0 batches)"),
                                    series_of(events, "eval", "test_accuracy", "test")};
  // Top-5 where the run reports it (more than 5 classes, eval.top_k).
  if (std::any_of(events.begin(), events.end(),
                  [](const json& event) { return event.contains("test_top5_accuracy"); }))
    accuracies.push_back(series_of(events, "eval", "test_top5_accuracy", "test top-5"));
  page.figure(line_chart(accuracy, accuracies), "accuracy-chart");
  Axes throughput{"Throughput", "seconds since start", "images/s (all ranks)"};
  throughput.y_from_zero = true;
  page.figure(line_chart(throughput, {series_of(events, "step", "images_per_sec", "step", "time"),
                                      series_of(events, "epoch", "images_per_sec", "epoch mean", "time")}),
              "throughput-chart");
  Axes learning_rate{"Learning rate", "step", "learning rate"};
  page.figure(line_chart(learning_rate, {series_of(events, "step", "learning_rate", "learning rate")}),
              "learning-rate-chart");
}

void add_breakdown(HtmlPage& page, const json& summary) {
  page.heading("Where the time goes (per rank, mean ms per step)");
  const json ranks = summary.value("ranks", json::array());
  std::vector<std::string> segments(std::begin(stage_labels), std::end(stage_labels));
  std::vector<StackedBar> bars;
  std::vector<std::vector<std::string>> rows;
  for (const auto& rank : ranks) {
    const json breakdown = rank.value("time_breakdown", json::object());
    StackedBar bar{"rank " + std::to_string(rank.value("rank", -1)), {}};
    std::vector<std::string> row{bar.label, rank.value("device", "")};
    for (const char* stage : stage_names) {
      const double milliseconds = number_or_nan(breakdown.value(stage, json::object()), "ms_per_step");
      bar.values.push_back(milliseconds);
      row.push_back(format(milliseconds, "%.2f"));
    }
    row.push_back(
        format(number_or_nan(breakdown.value("allreduce_total", json::object()), "ms_per_step"), "%.2f"));
    row.push_back(format(number_or_nan(breakdown, "step_ms"), "%.2f"));
    bars.push_back(std::move(bar));
    rows.push_back(std::move(row));
  }
  if (bars.empty()) {
    page.paragraph("No per-rank breakdown: the run has no summary.json (it did not finish).");
    return;
  }
  page.figure(stacked_bar_chart({"Time per step by stage", "rank", "ms per step"}, segments, bars),
              "breakdown-chart");
  std::vector<std::string> header{"rank", "device"};
  for (const char* label : stage_labels) header.push_back(label);
  header.push_back("all-reduce (total)");
  header.push_back("step");
  page.table(header, rows, "breakdown-table");

  page.heading("Step time by rank (stragglers)", 3);
  std::vector<std::vector<std::string>> percentile_rows;
  Series p50{"p50", {}, {}}, p90{"p90", {}, {}}, p99{"p99", {}, {}}, maximum{"max", {}, {}};
  for (const auto& rank : ranks) {
    const json times = rank.value("step_time_ms", json::object());
    const double index = rank.value("rank", -1);
    percentile_rows.push_back(
        {"rank " + std::to_string(rank.value("rank", -1)), format(number_or_nan(times, "p50_ms"), "%.2f"),
         format(number_or_nan(times, "p90_ms"), "%.2f"), format(number_or_nan(times, "p99_ms"), "%.2f"),
         format(number_or_nan(times, "max_ms"), "%.2f"), value_text(times.value("steps", 0))});
    const std::pair<Series*, const char*> columns[] = {
        {&p50, "p50_ms"}, {&p90, "p90_ms"}, {&p99, "p99_ms"}, {&maximum, "max_ms"}};
    for (const auto& [series, key] : columns) {
      series->x.push_back(index);
      series->y.push_back(number_or_nan(times, key));
    }
  }
  page.figure(scatter_chart({"Step time percentiles", "rank", "ms"}, {p50, p90, p99, maximum}), "skew-chart");
  page.table({"rank", "p50 ms", "p90 ms", "p99 ms", "max ms", "steps"}, percentile_rows, "step-time-table");
  const json skew = summary.value("step_time_skew", json::object());
  // Read with value()/number_or_nan: operator[] on a const object without the key is undefined.
  if (skew.is_object() && skew.contains("p50_ratio"))
    page.paragraph("Slowest rank " + value_text(skew.value("slowest_rank", json())) + " (median " +
                   format(number_or_nan(skew, "slowest_p50_ms"), "%.2f") + " ms) against fastest rank " +
                   value_text(skew.value("fastest_rank", json())) + " (" +
                   format(number_or_nan(skew, "fastest_p50_ms"), "%.2f") + " ms): ratio " +
                   format(number_or_nan(skew, "p50_ratio"), "%.3f") + ".");
}

void add_machine(HtmlPage& page, const std::vector<json>& events, const json& summary) {
  // Per-epoch machine metrics of rank 0 (GPU ones only on GPU ranks).
  std::map<std::string, Series> gpu, host;
  for (const auto& event : events) {
    if (event.value("event", "") != "epoch" || !event.contains("machine")) continue;
    for (const auto& [name, value] : event["machine"].items()) {
      if (!value.is_number() || name.find("sample_count") != std::string::npos) continue;
      auto& table = name.rfind("gpu_", 0) == 0 ? gpu : host;
      Series& series = table[name];
      series.name = name;
      series.x.push_back(number_or_nan(event, "epoch"));
      series.y.push_back(value.get<double>());
    }
  }
  page.heading("Machine");
  if (gpu.empty()) {
    page.paragraph("No GPU metrics: this run had no GPU rank (or NVML was unavailable).");
  } else {
    const std::pair<const char*, const char*> groups[] = {{"utilization", "GPU utilisation (%)"},
                                                          {"memory", "GPU memory (MiB)"},
                                                          {"power", "GPU power (W)"},
                                                          {"temperature", "GPU temperature (C)"},
                                                          {"energy", "GPU energy per epoch (J)"},
                                                          {"clock", "GPU SM clock (MHz)"}};
    for (const auto& [key, title] : groups) {
      std::vector<Series> chosen;
      for (const auto& [name, series] : gpu)
        if (name.find(key) != std::string::npos) chosen.push_back(series);
      if (!chosen.empty())
        page.figure(line_chart({title, "epoch", title}, chosen), std::string("gpu-") + key + "-chart");
    }
    double energy = 0;
    for (const auto& rank : summary.value("ranks", json::array()))
      if (rank.contains("machine")) energy += rank["machine"].value("gpu_energy_joules", 0.0);
    if (energy > 0)
      page.paragraph("GPU energy to the final accuracy (all ranks): " + format(energy / 3.6e6, "%.4f") +
                     " kWh (" + format(energy, "%.0f") + " J).");
  }
  std::vector<Series> cpu;
  for (const auto& [name, series] : host)
    if (name.find("cpu") != std::string::npos) cpu.push_back(series);
  if (!cpu.empty()) page.figure(line_chart({"Host CPU (rank 0)", "epoch", "%"}, cpu), "host-cpu-chart");
}

void add_summary(HtmlPage& page, const json& summary) {
  page.heading("Summary");
  if (summary.is_null()) {
    page.paragraph("No summary.json: the run did not finish.");
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, value] : summary.items()) {
    if (value.is_object() || value.is_array()) continue;
    rows.push_back({key, value_text(value)});
  }
  page.table({"key", "value"}, rows, "summary-table");
  const json to_accuracy = summary.value("seconds_to_accuracy", json::object());
  if (!to_accuracy.empty()) {
    std::vector<std::vector<std::string>> accuracy_rows;
    for (const auto& [threshold, seconds] : to_accuracy.items())
      accuracy_rows.push_back({threshold, value_text(seconds)});
    page.table({"test accuracy reached", "seconds"}, accuracy_rows, "time-to-accuracy-table");
  }
}

// The page of files already read (a json::exception from a field of the wrong type goes to the caller).
std::string render_page(const std::string& run_directory, const std::vector<json>& events,
                        const json& summary, const std::string& config_text) {
  const std::string name = std::filesystem::path(run_directory).filename().string();
  HtmlPage page("phalanx run " + (name.empty() ? run_directory : name));
  if (summary.is_object())
    page.paragraph("test accuracy " + format(number_or_nan(summary, "test_accuracy")) + ", test loss " +
                   format(number_or_nan(summary, "test_loss")) + ", " +
                   format(number_or_nan(summary, "images_per_sec"), "%.0f") + " images/s over " +
                   value_text(summary.value("world_size", json(0))) + " ranks, " +
                   format(number_or_nan(summary, "wall_seconds"), "%.1f") + " s");
  add_curves(page, events);
  add_breakdown(page, summary.is_object() ? summary : json::object());
  add_machine(page, events, summary.is_object() ? summary : json::object());
  add_summary(page, summary);
  page.heading("Config");
  page.preformatted(config_text.empty() ? "(no config.yaml)" : config_text);
  return page.render();
}

}  // namespace

std::string render_run_report(const std::string& run_directory) {
  PHALANX_REQUIRE_INPUT(std::filesystem::is_directory(run_directory), run_directory,
                        ": no such run directory");
  const std::vector<json> events = read_events(run_directory + "/metrics.jsonl");
  json summary;
  const std::string summary_path = run_directory + "/summary.json";
  if (std::filesystem::exists(summary_path)) {
    summary = json::parse(read_text(summary_path), nullptr, false);
    PHALANX_REQUIRE_INPUT(!summary.is_discarded() && summary.is_object(), summary_path,
                          ": not a JSON object");
  }
  const std::string config_text = read_text(run_directory + "/config.yaml");

  try {
    return render_page(run_directory, events, summary, config_text);
  } catch (const json::exception& error) {
    // A field of another type than phalanx writes (a hand-edited or foreign file): one message
    // naming the files, not nlohmann's text and exit 1.
    throw_input_error(run_directory +
                      ": metrics.jsonl or summary.json holds a field of another type than a "
                      "phalanx run writes (" +
                      error.what() + ")");
  }
}

std::string write_run_report(const std::string& run_directory) {
  const std::string path = run_directory + "/report.html";
  write_file_atomically(path, render_run_report(run_directory));
  return path;
}

}  // namespace phalanx::report
