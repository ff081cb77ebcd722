// report.html of a sweep (see sweep_report.hpp): reads sweep.db and hands the numbers to the
// report module (html_page.hpp, chart.hpp, parallel_coordinates_chart.hpp, interval_chart.hpp),
// which draws every chart; this file only decides what is plotted. Rung r has the palette's
// colour r in every chart, so a reader follows a rung from one chart to the next.
#include "phalanx/sweep/sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/report/chart.hpp"
#include "phalanx/report/html_page.hpp"
#include "phalanx/report/interval_chart.hpp"
#include "phalanx/report/lineage_chart.hpp"
#include "phalanx/report/parallel_coordinates_chart.hpp"
#include "phalanx/sweep/database.hpp"

namespace phalanx::sweep {
namespace {

using nlohmann::json;

constexpr int chart_width = 900, chart_height = 340;

report::Axes axes_of(std::string title, std::string x_label, std::string y_label, int height = chart_height) {
  report::Axes axes{std::move(title), std::move(x_label), std::move(y_label)};
  axes.width = chart_width;
  axes.height = height;
  return axes;
}

std::string rung_name(std::int64_t rung) {
  return "rung " + std::to_string(rung);
}

std::string result_title(const json& row) {
  return "trial " + row["trial_id"].dump() + " rung " + row["rung"].dump() + ": " +
         report::format_number(row["metric"].get<double>());
}

// Every rung result over time as a point coloured by its rung, and the best-so-far staircase.
std::string optimisation_history(const json& results, double origin, const std::string& metric,
                                 bool maximize) {
  std::vector<report::Series> series;
  report::Series best{"best so far", {}, {}, report::Mark::Line, "#222222"};
  double best_metric = maximize ? -INFINITY : INFINITY;
  for (const auto& row : results) {
    const auto rung = static_cast<std::size_t>(row["rung"].get<std::int64_t>());
    while (series.size() <= rung)
      series.push_back({rung_name(static_cast<std::int64_t>(series.size())),
                        {},
                        {},
                        report::Mark::Points,
                        report::palette_colour(series.size())});
    const double time = row["finished"].get<double>() - origin, value = row["metric"].get<double>();
    series[rung].x.push_back(time);
    series[rung].y.push_back(value);
    series[rung].point_titles.push_back(result_title(row));
    if (maximize ? value > best_metric : value < best_metric) {
      if (!best.x.empty()) {  // hold the previous best until this moment, then step
        best.x.push_back(time);
        best.y.push_back(best_metric);
      }
      best_metric = value;
      best.x.push_back(time);
      best.y.push_back(value);
    }
  }
  if (!results.empty()) {  // the best holds to the last result
    best.x.push_back(results.back()["finished"].get<double>() - origin);
    best.y.push_back(best_metric);
  }
  series.push_back(std::move(best));
  return report::xy_chart(
      axes_of("Every rung result and the best so far", "seconds since the sweep started", metric), series);
}

// One axis per hyperparameter (logarithmic for loguniform, categories for non-numeric values)
// plus the metric; one line per trial at its highest rung, better trials stronger.
std::string parallel_coordinates(const json& trials, const json& space, const std::string& metric,
                                 bool maximize) {
  std::vector<json> finished;
  for (const auto& trial : trials)
    if (!trial["metric"].is_null()) finished.push_back(trial);
  std::vector<json> parameters;
  for (const auto& trial : finished)
    parameters.push_back(json::parse(trial["parameters"].get<std::string>()));

  std::vector<report::Dimension> dimensions;
  std::vector<std::map<std::string, double>> slots;
  for (const auto& parameter : space) {
    const std::string key = parameter["key"];
    report::Dimension dimension{
        key, parameter["type"] == "loguniform" ? report::Scale::Logarithmic : report::Scale::Linear};
    std::set<std::string> names;
    bool numeric = true;
    for (const auto& values : parameters)
      if (values.contains(key)) {
        numeric = numeric && values[key].is_number();
        names.insert(values[key].dump());
      }
    std::map<std::string, double> slot;
    if (!numeric)
      for (const auto& name : names) {
        slot.emplace(name, static_cast<double>(dimension.categories.size()));
        dimension.categories.push_back(name);
      }
    dimensions.push_back(std::move(dimension));
    slots.push_back(std::move(slot));
  }
  dimensions.push_back({metric});

  double low = INFINITY, high = -INFINITY;
  for (const auto& trial : finished) {
    low = std::min(low, trial["metric"].get<double>());
    high = std::max(high, trial["metric"].get<double>());
  }
  std::vector<report::Profile> profiles;
  for (std::size_t index = 0; index < finished.size(); ++index) {
    const auto& trial = finished[index];
    const double value = trial["metric"].get<double>();
    report::Profile profile{"trial " + trial["trial_id"].dump() + " (rung " + trial["rung"].dump() +
                                "): " + report::format_number(value),
                            {}};
    for (std::size_t axis = 0; axis + 1 < dimensions.size(); ++axis) {
      const std::string& key = dimensions[axis].name;
      if (!parameters[index].contains(key))
        profile.values.push_back(NAN);
      else if (slots[axis].empty())
        profile.values.push_back(parameters[index][key].get<double>());
      else
        profile.values.push_back(slots[axis].at(parameters[index][key].dump()));
    }
    profile.values.push_back(value);
    const double quality = high > low ? (value - low) / (high - low) : 1.0;
    profile.strength = maximize ? quality : 1 - quality;
    profiles.push_back(std::move(profile));
  }
  return report::parallel_coordinates_chart(
      axes_of("Hyperparameters and " + metric + " of each trial", "", ""), dimensions, profiles);
}

// Rungs left to right: each trial's metric at every rung it reached, joined across promotions.
std::string rung_ladder(const json& results, const std::string& metric) {
  std::map<std::int64_t, report::Series> trial_lines;
  std::map<std::int64_t, report::Series> rung_points;
  std::map<std::int64_t, double> budgets;
  for (const auto& row : results) {
    const auto trial = row["trial_id"].get<std::int64_t>(), rung = row["rung"].get<std::int64_t>();
    auto& line = trial_lines[trial];
    line.name = "trial " + std::to_string(trial);
    line.colour = "#bbbbbb";
    line.in_legend = false;
    line.x.push_back(static_cast<double>(rung));
    line.y.push_back(row["metric"].get<double>());
    auto& points = rung_points[rung];
    points.mark = report::Mark::Points;
    points.colour = report::palette_colour(static_cast<std::size_t>(rung));
    points.x.push_back(static_cast<double>(rung));
    points.y.push_back(row["metric"].get<double>());
    points.point_titles.push_back(result_title(row));
    budgets[rung] = row["budget"].get<double>();
  }
  std::vector<report::Series> series;
  for (const auto& entry : trial_lines) {
    // A reference, not a structured binding: the sort below captures it (clang before 16 cannot).
    const report::Series& line = entry.second;
    if (line.x.size() < 2) continue;  // a trial that stopped at rung 0 has nothing to join
    std::vector<std::size_t> order(line.x.size());
    for (std::size_t index = 0; index < order.size(); ++index) order[index] = index;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return line.x[a] < line.x[b]; });
    report::Series sorted{line.name, {}, {}, report::Mark::Line, line.colour, false};
    for (const std::size_t index : order) {
      sorted.x.push_back(line.x[index]);
      sorted.y.push_back(line.y[index]);
    }
    series.push_back(std::move(sorted));
  }
  for (auto& [rung, points] : rung_points) {
    points.name = rung_name(rung) + " (budget " + report::format_number(budgets[rung]) +
                  "): " + std::to_string(points.x.size()) + " trials";
    series.push_back(std::move(points));
  }
  return report::xy_chart(axes_of("Each trial's " + metric + " at every rung it reached", "rung", metric),
                          series);
}

// One row per worker group, one bar per job coloured by its rung; the gaps are idle time.
std::string worker_timeline(const json& jobs, const json& workers, double origin, double end,
                            std::string& utilisation_text) {
  std::int64_t rungs = 1;
  bool cut_short = false;
  for (const auto& job : jobs) {
    rungs = std::max<std::int64_t>(rungs, job["rung"].get<std::int64_t>() + 1);
    cut_short = cut_short || (!job["finished"].is_null() && job["status"] != "done");
  }
  std::vector<std::string> segments;
  for (std::int64_t rung = 0; rung < rungs; ++rung) segments.push_back(rung_name(rung));
  if (cut_short) segments.push_back("cut short by a kill, requeued");
  const double span = std::max(end - origin, 1e-9);
  double busy_total = 0;
  std::vector<report::IntervalRow> rows;
  for (const auto& worker_row : workers) {
    const auto worker = worker_row["worker"].get<std::int64_t>();
    report::IntervalRow row;
    double busy = 0;
    for (const auto& job : jobs) {
      if (job["worker"].get<std::int64_t>() != worker || job["finished"].is_null()) continue;
      const double start = job["started"].get<double>() - origin,
                   stop = job["finished"].get<double>() - origin;
      busy += stop - start;
      const bool done = job["status"] == "done";
      row.intervals.push_back(
          {start, stop,
           done ? static_cast<std::size_t>(job["rung"].get<std::int64_t>()) : segments.size() - 1,
           "trial " + job["trial_id"].dump() + " rung " + job["rung"].dump() + " (" +
               job["status"].get<std::string>() + "): " + report::format_number(stop - start) + " s"});
    }
    busy_total += busy;
    row.label = "worker " + std::to_string(worker) + " " +
                worker_row["device"].get<std::string>().substr(0, 3) + " x" + worker_row["threads"].dump() +
                " " + report::format_number(100.0 * busy / span) + "% busy";
    rows.push_back(std::move(row));
  }
  char text[160];
  std::snprintf(text, sizeof(text), "%.1f%% over %zu worker groups and %.1f s (idle time is the gaps)",
                100.0 * busy_total / (span * static_cast<double>(std::max<std::size_t>(workers.size(), 1))),
                workers.size(), span);
  utilisation_text = text;
  const int height = 96 + 30 * static_cast<int>(std::max<std::size_t>(workers.size(), 1));
  return report::interval_chart(
      axes_of("Jobs of each worker group", "seconds since the sweep started", "", height), segments, rows);
}

std::vector<std::vector<std::string>> top_trials(const json& trials, bool maximize) {
  std::vector<json> ranked;
  // As best/ ranks them (best_trial): failed trials left out, further rungs first (more budget),
  // then by metric, then by trial id.
  for (const auto& trial : trials)
    if (!trial["metric"].is_null() && trial["status"] != "failed") ranked.push_back(trial);
  std::sort(ranked.begin(), ranked.end(), [&](const json& a, const json& b) {
    if (a["rung"] != b["rung"]) return a["rung"].get<int>() > b["rung"].get<int>();
    if (a["metric"] != b["metric"])
      return maximize ? a["metric"].get<double>() > b["metric"].get<double>()
                      : a["metric"].get<double>() < b["metric"].get<double>();
    return a["trial_id"].get<std::int64_t>() < b["trial_id"].get<std::int64_t>();
  });
  std::vector<std::vector<std::string>> rows;
  for (std::size_t index = 0; index < std::min<std::size_t>(ranked.size(), 10); ++index)
    rows.push_back({ranked[index]["trial_id"].dump(), ranked[index]["status"].get<std::string>(),
                    ranked[index]["rung"].dump(),
                    report::format_number(ranked[index]["metric"].get<double>()),
                    ranked[index]["parameters"].get<std::string>()});
  return rows;
}

}  // namespace

// scheduler: pbt: each (trial, interval) at its budget and metric, joined to the point it continued
// (its parent's end of the previous interval after an exploit, else its own) and coloured by the
// trial of interval 0 its line of checkpoints descends from.
std::string pbt_lineage(const json& steps, const std::string& metric, const std::string& unit) {
  std::map<std::pair<std::int64_t, std::int64_t>, int> index_of;
  std::vector<report::LineagePoint> points;
  std::vector<std::int64_t> roots;  // per point: the interval-0 trial it descends from
  std::set<std::int64_t> lineages;
  for (const auto& row : steps) {  // by interval, so a parent always comes first
    const std::int64_t trial = row["trial_id"].get<std::int64_t>(),
                       interval = row["interval"].get<std::int64_t>();
    const bool copied = !row["parent_trial"].is_null();
    const auto parent = index_of.find(copied ? std::pair(row["parent_trial"].get<std::int64_t>(),
                                                         row["parent_interval"].get<std::int64_t>())
                                             : std::pair(trial, interval - 1));
    report::LineagePoint point;
    point.x = row["budget"].get<double>();
    point.y = row["metric"].is_null() ? NAN : row["metric"].get<double>();
    point.parent = parent == index_of.end() ? -1 : parent->second;
    const std::int64_t root = point.parent < 0 ? trial : roots[static_cast<std::size_t>(point.parent)];
    point.title = "trial " + std::to_string(trial) + " interval " + std::to_string(interval) + ": " +
                  (row["metric"].is_null() ? std::string("running") : report::format_number(point.y)) +
                  (copied ? ", copied trial " + row["parent_trial"].dump() + " interval " +
                                row["parent_interval"].dump()
                          : std::string()) +
                  " " + row["parameters"].get<std::string>();
    lineages.insert(root);
    roots.push_back(root);
    index_of[{trial, interval}] = static_cast<int>(points.size());
    points.push_back(std::move(point));
  }
  std::vector<std::string> names;
  for (const auto root : lineages) names.push_back("from trial " + std::to_string(root));
  for (std::size_t index = 0; index < points.size(); ++index)
    points[index].lineage =
        static_cast<std::size_t>(std::distance(lineages.begin(), lineages.find(roots[index])));
  return report::lineage_chart(
      axes_of("The population over its intervals, coloured by lineage", "budget (" + unit + ")", metric),
      names, points);
}

namespace {

// The page of a database with the tables (a json::exception from a value of the wrong form goes to
// the caller).
std::string write_report_page(const std::string& directory, const Database& database) {
  json definition = json::object();
  for (const auto& row : database.rows("SELECT value FROM sweep WHERE key = 'definition'"))
    definition = json::parse(row["value"].get<std::string>());
  PHALANX_REQUIRE_INPUT(definition.is_object(), directory,
                        "/sweep.db: the sweep's definition is not a JSON object");
  const std::string metric = definition.value("metric", std::string("metric"));
  const bool maximize = definition.value("goal", std::string("maximize")) == "maximize";
  const auto results =
      database.rows("SELECT trial_id, rung, budget, metric, finished FROM rung_results ORDER BY finished");
  const auto trials =
      database.rows("SELECT trial_id, status, rung, metric, parameters FROM trials ORDER BY trial_id");
  const auto jobs =
      database.rows("SELECT trial_id, rung, worker, status, started, finished FROM jobs ORDER BY job_id");
  const auto workers = database.rows("SELECT worker, device, threads, speed FROM workers ORDER BY worker");
  double origin = 0, end = 0;
  for (const auto& job : jobs) {
    origin = origin == 0 ? job["started"].get<double>() : std::min(origin, job["started"].get<double>());
    if (!job["finished"].is_null()) end = std::max(end, job["finished"].get<double>());
  }
  std::string utilisation;
  const std::string timeline = worker_timeline(jobs, workers, origin, end, utilisation);

  // The sweep's folder names the page: a sweep definition has no name of its own.
  std::filesystem::path folder = std::filesystem::path(directory).lexically_normal();
  if (folder.filename().empty()) folder = folder.parent_path();
  report::HtmlPage page("phalanx sweep " + folder.filename().string());
  page.paragraph(directory + ": " + std::to_string(trials.size()) + " trials, " +
                 std::to_string(results.size()) + " rung results, metric " + metric + " (" +
                 (maximize ? "higher" : "lower") + " is better). Rung r has the same colour in every chart.");
  page.heading("Optimisation history");
  page.figure(optimisation_history(results, origin, metric, maximize), "history-chart");
  page.heading("Hyperparameters (parallel coordinates, each trial at its highest rung)");
  page.figure(parallel_coordinates(trials, definition.value("space", json::array()), metric, maximize),
              "parameters-chart");
  page.heading("Rung ladder");
  page.figure(rung_ladder(results, metric), "ladder-chart");
  page.heading("Workers: busy and idle time");
  page.paragraph("Utilisation " + utilisation + ".");
  page.figure(timeline, "workers-chart");
  // scheduler: pbt (a pbt_lineage table): the population by lineage.
  if (!database.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'pbt_lineage'")
           .empty()) {
    page.heading("Population-based training: lineage");
    const auto budget = definition.value("budget", json::object());
    page.figure(pbt_lineage(database.rows("SELECT trial_id, interval, budget, parent_trial, parent_interval, "
                                          "parameters, metric FROM pbt_lineage ORDER BY interval, trial_id"),
                            metric, budget.value("unit", std::string("epochs"))),
                "pbt-lineage");
  }
  page.heading("Top trials");
  page.table({"trial", "status", "rung", metric, "parameters"}, top_trials(trials, maximize),
             "top-trials-table");
  const std::string path = directory + "/report.html";
  write_file_atomically(path, page.render());
  return path;
}

}  // namespace

bool is_sweep_directory(const std::string& directory) {
  return std::filesystem::is_regular_file(directory + "/sweep.db");
}

std::string write_sweep_report(const std::string& directory) {
  PHALANX_REQUIRE_INPUT(is_sweep_directory(directory), directory, ": not a sweep directory (no sweep.db)");
  const std::string database_path = directory + "/sweep.db";
  const Database database(database_path, false);
  // An empty file is an SQLite database with no tables: each the report reads is asked for by name.
  for (const char* table : {"sweep", "trials", "jobs", "rung_results", "workers"})
    PHALANX_REQUIRE_INPUT(
        !database
             .rows(std::string("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '") + table +
                   "'")
             .empty(),
        database_path, ": not a phalanx sweep database (it has no table '", table, "')");
  try {
    return write_report_page(directory, database);
  } catch (const json::exception& error) {
    throw_input_error(database_path + ": holds a value of another form than a phalanx sweep writes (" +
                      error.what() + ")");
  }
}

}  // namespace phalanx::sweep
