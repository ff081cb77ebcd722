// report.html of a sweep (see sweep_report.hpp): four inline SVG charts drawn from sweep.db.
#include "phalanx/sweep/sweep_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/sweep/database.hpp"

namespace phalanx::sweep {
namespace {

constexpr int chart_width = 900, chart_height = 320, margin = 50;
const char* const rung_colours[] = {"#9aa5b1", "#4c78a8", "#f58518", "#54a24b",
                                    "#e45756", "#b279a2", "#72b7b2"};

std::string colour_of_rung(std::int64_t rung) {
  return rung_colours[static_cast<std::size_t>(rung) % (sizeof(rung_colours) / sizeof(rung_colours[0]))];
}

std::string escape(const std::string& text) {
  std::string result;
  for (const char character : text) {
    switch (character) {
      case '<': result += "&lt;"; break;
      case '>': result += "&gt;"; break;
      case '&': result += "&amp;"; break;
      case '"': result += "&quot;"; break;
      default: result += character;
    }
  }
  return result;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", value);
  return text;
}

struct Range {
  double low = 0, high = 1;
  void widen() {
    if (high - low < 1e-12) {
      low -= 0.5;
      high += 0.5;
    }
  }
  double at(double value, double pixels_low, double pixels_high) const {
    return pixels_low + (value - low) / (high - low) * (pixels_high - pixels_low);
  }
};

Range range_of(const std::vector<double>& values) {
  Range range;
  if (!values.empty()) {
    range.low = *std::min_element(values.begin(), values.end());
    range.high = *std::max_element(values.begin(), values.end());
  }
  range.widen();
  return range;
}

std::string svg_open(int height = chart_height) {
  return "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(chart_width) + "' height='" +
         std::to_string(height) + "' font-family='sans-serif' font-size='11'>";
}

std::string axis_labels(const Range& y, const std::string& y_label, const std::string& x_label, double x_low,
                        double x_high) {
  std::ostringstream svg;
  const int bottom = chart_height - margin;
  svg << "<line x1='" << margin << "' y1='" << bottom << "' x2='" << chart_width - 20 << "' y2='" << bottom
      << "' stroke='#333'/><line x1='" << margin << "' y1='20' x2='" << margin << "' y2='" << bottom
      << "' stroke='#333'/>";
  for (int tick = 0; tick <= 4; ++tick) {
    const double value = y.low + (y.high - y.low) * tick / 4.0;
    const double pixel = y.at(value, bottom, 20);
    svg << "<text x='" << margin - 4 << "' y='" << pixel + 4 << "' text-anchor='end'>" << number(value)
        << "</text><line x1='" << margin << "' y1='" << pixel << "' x2='" << chart_width - 20 << "' y2='"
        << pixel << "' stroke='#eee'/>";
  }
  svg << "<text x='" << margin << "' y='" << chart_height - 15 << "'>" << number(x_low) << "</text><text x='"
      << chart_width - 20 << "' y='" << chart_height - 15 << "' text-anchor='end'>" << number(x_high)
      << "</text><text x='" << chart_width / 2 << "' y='" << chart_height - 15 << "' text-anchor='middle'>"
      << escape(x_label) << "</text><text x='12' y='14'>" << escape(y_label) << "</text>";
  return svg.str();
}

// Every rung result over time, coloured by rung, with the best-so-far line.
std::string optimisation_history(const nlohmann::json& results, double origin, const std::string& metric,
                                 bool maximize) {
  std::vector<double> times, metrics;
  for (const auto& row : results) {
    times.push_back(row["finished"].get<double>() - origin);
    metrics.push_back(row["metric"].get<double>());
  }
  const Range x = range_of(times), y = range_of(metrics);
  std::ostringstream svg;
  svg << svg_open() << axis_labels(y, metric, "seconds since the sweep started", x.low, x.high);
  const int bottom = chart_height - margin;
  std::string best_path;
  double best = maximize ? -INFINITY : INFINITY;
  for (std::size_t index = 0; index < results.size(); ++index) {
    const double px = x.at(times[index], margin, chart_width - 20), py = y.at(metrics[index], bottom, 20);
    svg << "<circle cx='" << px << "' cy='" << py << "' r='3.5' fill='"
        << colour_of_rung(results[index]["rung"]) << "'><title>trial " << results[index]["trial_id"]
        << " rung " << results[index]["rung"] << ": " << number(metrics[index]) << "</title></circle>";
    const double updated = maximize ? std::max(best, metrics[index]) : std::min(best, metrics[index]);
    if (updated != best || best_path.empty()) {
      if (!best_path.empty()) best_path += " L" + number(px) + "," + number(y.at(best, bottom, 20));
      best = updated;
      best_path += (best_path.empty() ? "M" : " L") + number(px) + "," + number(y.at(best, bottom, 20));
    }
  }
  if (!best_path.empty())
    svg << "<path d='" << best_path << " L" << chart_width - 20 << "," << number(y.at(best, bottom, 20))
        << "' fill='none' stroke='#222' stroke-width='1.5'/>";
  svg << "</svg>";
  return svg.str();
}

// One axis per hyperparameter plus the metric; one line per trial at its highest rung.
std::string parallel_coordinates(const nlohmann::json& trials, const nlohmann::json& space,
                                 const std::string& metric, bool maximize) {
  std::vector<std::string> keys;
  std::map<std::string, bool> logarithmic;
  for (const auto& parameter : space) {
    keys.push_back(parameter["key"]);
    logarithmic[parameter["key"]] = parameter["type"] == "loguniform";
  }
  const std::size_t axes = keys.size() + 1;
  const int top = 30, bottom = chart_height - margin;
  auto axis_x = [&](std::size_t axis) {
    // Wider side margins than the other charts: the outer axes' names are centred on them.
    return 2 * margin + (chart_width - 4.0 * margin) * static_cast<double>(axis) /
                        static_cast<double>(std::max<std::size_t>(axes - 1, 1));
  };
  // Numeric axes map values (log10 for loguniform); other values get evenly spaced categories.
  std::vector<std::map<std::string, double>> categories(keys.size());
  std::vector<Range> ranges(keys.size());
  for (std::size_t axis = 0; axis < keys.size(); ++axis) {
    std::vector<double> values;
    for (const auto& trial : trials) {
      const auto parameters = nlohmann::json::parse(trial["parameters"].get<std::string>());
      if (!parameters.contains(keys[axis])) continue;
      const auto& value = parameters[keys[axis]];
      if (value.is_number())
        values.push_back(logarithmic[keys[axis]] ? std::log10(value.get<double>()) : value.get<double>());
      else
        categories[axis].emplace(value.dump(), 0.0);
    }
    double position = 0;
    for (auto& [name, slot] : categories[axis]) slot = position++;
    if (!categories[axis].empty()) values.push_back(position - 1), values.push_back(0);
    ranges[axis] = range_of(values);
  }
  std::vector<double> metrics;
  for (const auto& trial : trials)
    if (!trial["metric"].is_null()) metrics.push_back(trial["metric"].get<double>());
  const Range metric_range = range_of(metrics);
  std::ostringstream svg;
  svg << svg_open();
  for (const auto& trial : trials) {
    if (trial["metric"].is_null()) continue;
    const auto parameters = nlohmann::json::parse(trial["parameters"].get<std::string>());
    std::string path;
    for (std::size_t axis = 0; axis < keys.size(); ++axis) {
      if (!parameters.contains(keys[axis])) continue;
      const auto& value = parameters[keys[axis]];
      const double position = value.is_number() ? (logarithmic[keys[axis]] ? std::log10(value.get<double>())
                                                                           : value.get<double>())
                                                : categories[axis][value.dump()];
      path += (path.empty() ? "M" : " L") + number(axis_x(axis)) + "," +
              number(ranges[axis].at(position, bottom, top));
    }
    const double value = trial["metric"].get<double>();
    path += " L" + number(axis_x(keys.size())) + "," + number(metric_range.at(value, bottom, top));
    // Better trials are darker and drawn bolder.
    double quality = (value - metric_range.low) / (metric_range.high - metric_range.low);
    if (!maximize) quality = 1 - quality;
    char colour[32];
    std::snprintf(colour, sizeof(colour), "rgb(%d,%d,%d)", static_cast<int>(220 - 180 * quality),
                  static_cast<int>(120 - 60 * quality), static_cast<int>(60 + 120 * quality));
    svg << "<path d='" << path << "' fill='none' stroke='" << colour
        << "' stroke-opacity='0.75' stroke-width='" << number(1 + 1.5 * quality) << "'><title>trial "
        << trial["trial_id"] << ": " << number(value) << "</title></path>";
  }
  for (std::size_t axis = 0; axis < axes; ++axis) {
    const double px = axis_x(axis);
    const bool is_metric = axis == keys.size();
    const std::string name = is_metric ? metric : keys[axis] + (logarithmic[keys[axis]] ? " (log10)" : "");
    const Range& range = is_metric ? metric_range : ranges[axis];
    svg << "<line x1='" << px << "' y1='" << top << "' x2='" << px << "' y2='" << bottom
        << "' stroke='#333'/>"
        << "<text x='" << px << "' y='" << bottom + 16 << "' text-anchor='middle'>" << escape(name)
        << "</text>";
    if (!is_metric && !categories[axis].empty()) {
      for (const auto& [label, slot] : categories[axis])
        svg << "<text x='" << px + 4 << "' y='" << range.at(slot, bottom, top) + 4 << "'>" << escape(label)
            << "</text>";
    } else {
      svg << "<text x='" << px + 4 << "' y='" << top - 4 << "'>" << number(range.high) << "</text><text x='"
          << px + 4 << "' y='" << bottom + 28 << "'>" << number(range.low) << "</text>";
    }
  }
  svg << "</svg>";
  return svg.str();
}

// Rungs left to right, each trial's metric at each rung it reached, joined across promotions.
std::string rung_ladder(const nlohmann::json& results, const std::string& metric) {
  std::int64_t rungs = 1;
  std::vector<double> metrics;
  std::map<std::int64_t, std::vector<std::pair<std::int64_t, double>>> by_trial;
  std::map<std::int64_t, double> budgets;
  for (const auto& row : results) {
    rungs = std::max<std::int64_t>(rungs, row["rung"].get<std::int64_t>() + 1);
    metrics.push_back(row["metric"].get<double>());
    by_trial[row["trial_id"].get<std::int64_t>()].emplace_back(row["rung"].get<std::int64_t>(),
                                                               row["metric"].get<double>());
    budgets[row["rung"].get<std::int64_t>()] = row["budget"].get<double>();
  }
  const Range y = range_of(metrics);
  const int bottom = chart_height - margin;
  auto rung_x = [&](std::int64_t rung) {
    return margin + 40 +
           (chart_width - 2.0 * margin - 80) * static_cast<double>(rung) /
               static_cast<double>(std::max<std::int64_t>(rungs - 1, 1));
  };
  std::ostringstream svg;
  svg << svg_open() << axis_labels(y, metric, "rung", 0, static_cast<double>(rungs - 1));
  for (auto& [trial, points] : by_trial) {
    std::sort(points.begin(), points.end());
    std::string path;
    for (const auto& [rung, value] : points)
      path += (path.empty() ? "M" : " L") + number(rung_x(rung)) + "," + number(y.at(value, bottom, 20));
    if (points.size() > 1) svg << "<path d='" << path << "' fill='none' stroke='#999' stroke-width='1'/>";
    for (const auto& [rung, value] : points)
      svg << "<circle cx='" << rung_x(rung) << "' cy='" << y.at(value, bottom, 20) << "' r='4' fill='"
          << colour_of_rung(rung) << "'><title>trial " << trial << " rung " << rung << ": " << number(value)
          << "</title></circle>";
  }
  for (const auto& [rung, budget] : budgets) {
    std::size_t count = 0;
    for (const auto& row : results) count += row["rung"].get<std::int64_t>() == rung ? 1 : 0;
    svg << "<text x='" << rung_x(rung) << "' y='" << bottom + 16 << "' text-anchor='middle'>rung " << rung
        << " (" << number(budget) << "): " << count << " trials</text>";
  }
  svg << "</svg>";
  return svg.str();
}

// One row per worker group: a bar per job (coloured by rung), gaps are idle time.
std::string worker_timeline(const nlohmann::json& jobs, const nlohmann::json& workers, double origin,
                            double end, std::string& utilisation_text) {
  const int row_height = 26, top = 20;
  const int height = top + row_height * static_cast<int>(std::max<std::size_t>(workers.size(), 1)) + 40;
  const Range x{0, std::max(end - origin, 1e-9)};
  std::ostringstream svg;
  svg << svg_open(height);
  double busy_total = 0;
  for (std::size_t row = 0; row < workers.size(); ++row) {
    const auto worker = workers[row]["worker"].get<std::int64_t>();
    const double y = top + row_height * static_cast<double>(row);
    double busy = 0;
    for (const auto& job : jobs) {
      if (job["worker"].get<std::int64_t>() != worker || job["finished"].is_null()) continue;
      const double start = job["started"].get<double>() - origin,
                   stop = job["finished"].get<double>() - origin;
      busy += stop - start;
      const double x0 = x.at(start, 150, chart_width - 20), x1 = x.at(stop, 150, chart_width - 20);
      const bool done = job["status"] == "done";
      svg << "<rect x='" << x0 << "' y='" << y << "' width='" << std::max(0.5, x1 - x0) << "' height='"
          << row_height - 6 << "' fill='" << (done ? colour_of_rung(job["rung"]) : "#d62728")
          << "' stroke='#fff'"
          << " stroke-width='0.5'><title>trial " << job["trial_id"] << " rung " << job["rung"] << " ("
          << job["status"] << "): " << number(stop - start) << " s</title></rect>";
    }
    busy_total += busy;
    svg << "<text x='4' y='" << y + 14 << "'>worker " << worker << " "
        << escape(workers[row]["device"].get<std::string>().substr(0, 3)) << " x" << workers[row]["threads"]
        << " " << number(100.0 * busy / (x.high - x.low)) << "% busy</text>";
  }
  svg << "<text x='150' y='" << height - 12 << "'>0 s</text><text x='" << chart_width - 20 << "' y='"
      << height - 12 << "' text-anchor='end'>" << number(x.high) << " s</text></svg>";
  char text[160];
  std::snprintf(
      text, sizeof(text), "%.1f%% over %zu worker groups and %.1f s (idle time is the gaps)",
      100.0 * busy_total /
          std::max(1e-9, (x.high - x.low) * static_cast<double>(std::max<std::size_t>(workers.size(), 1))),
      workers.size(), x.high - x.low);
  utilisation_text = text;
  return svg.str();
}

}  // namespace

bool is_sweep_directory(const std::string& directory) {
  return std::filesystem::is_regular_file(directory + "/sweep.db");
}

std::string write_sweep_report(const std::string& directory) {
  PHALANX_REQUIRE_INPUT(is_sweep_directory(directory), directory, ": not a sweep directory (no sweep.db)");
  const Database database(directory + "/sweep.db", false);
  nlohmann::json definition = nlohmann::json::object();
  for (const auto& row : database.rows("SELECT value FROM sweep WHERE key = 'definition'"))
    definition = nlohmann::json::parse(row["value"].get<std::string>());
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

  std::ostringstream html;
  html << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>phalanx sweep report</title><style>"
          "body{font-family:sans-serif;margin:24px;color:#222}h2{margin-top:28px}table{border-collapse:"
          "collapse}"
          "td,th{border:1px solid #ccc;padding:3px 8px;font-size:12px}</style></head><body>"
       << "<h1>Sweep report</h1><p>" << escape(directory) << ": " << trials.size() << " trials, "
       << results.size() << " rung results, metric " << escape(metric) << " ("
       << (maximize ? "higher" : "lower")
       << " is better). Colours: rung 0 grey, 1 blue, 2 orange, 3 green.</p>"
       << "<h2>Optimisation history</h2>" << optimisation_history(results, origin, metric, maximize)
       << "<h2>Hyperparameters (parallel coordinates, each trial at its highest rung)</h2>"
       << parallel_coordinates(trials, definition.value("space", nlohmann::json::array()), metric, maximize)
       << "<h2>Rung ladder</h2>" << rung_ladder(results, metric)
       << "<h2>Workers: busy and idle time</h2><p>Utilisation " << escape(utilisation)
       << "; red bars are jobs cut short by a kill and requeued.</p>" << timeline
       << "<h2>Top trials</h2><table><tr><th>trial</th><th>status</th><th>rung</th><th>" << escape(metric)
       << "</th><th>parameters</th></tr>";
  auto ranked = trials;
  std::vector<nlohmann::json> rows(ranked.begin(), ranked.end());
  rows.erase(
      std::remove_if(rows.begin(), rows.end(), [](const auto& row) { return row["metric"].is_null(); }),
      rows.end());
  std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    if (a["rung"] != b["rung"]) return a["rung"].template get<int>() > b["rung"].template get<int>();
    return maximize ? a["metric"].template get<double>() > b["metric"].template get<double>()
                    : a["metric"].template get<double>() < b["metric"].template get<double>();
  });
  for (std::size_t index = 0; index < std::min<std::size_t>(rows.size(), 10); ++index)
    html << "<tr><td>" << rows[index]["trial_id"] << "</td><td>"
         << escape(rows[index]["status"].get<std::string>()) << "</td><td>" << rows[index]["rung"]
         << "</td><td>" << number(rows[index]["metric"].get<double>()) << "</td><td>"
         << escape(rows[index]["parameters"].get<std::string>()) << "</td></tr>";
  html << "</table></body></html>\n";
  const std::string path = directory + "/report.html";
  write_file_atomically(path, html.str());
  return path;
}

}  // namespace phalanx::sweep
