// A profile's measured all-reduce transport (see measured_transport.hpp).
#include "phalanx/scaling/measured_transport.hpp"

#include <algorithm>
#include <cmath>

#include "json_fields.hpp"

namespace phalanx::scaling {

namespace {

// A fitted transport moves from 1 KB/s to 1 PB/s (seconds per byte 1e-3 to 1e-15); a timed size is
// from one float to 1 TiB; no machine measured beyond.
constexpr Bounds seconds_per_byte_bounds{1e-15, 1e-3};
constexpr Bounds timed_bytes_bounds{4, 1099511627776.0};

CallStages read_call_stages(const nlohmann::json& point, const std::string& path, const std::string& at) {
  CallStages stages{required_seconds_list(point, "stages", path, at, seconds_from_zero),
                    required_seconds_list(point, "seconds_in_calls", path, at, seconds_from_zero)};
  PHALANX_REQUIRE_INPUT(stages.stages.size() == stages.seconds_in_calls.size(), path, ": field '", at,
                        "seconds_in_calls' must have one entry per stage (", stages.stages.size(), ")");
  double total = 0;
  for (const double stage : stages.stages) total += stage;
  // The stages are scaled by their sum: a sum under the clock's nanosecond would make them inf.
  PHALANX_REQUIRE_INPUT(total >= positive_seconds.least, path, ": field '", at, "stages' must add up to ",
                        positive_seconds.least, " seconds or more (got ", total, ")");
  return stages;
}

}  // namespace

MeasuredTransport read_measured_transport(const std::string& profile_path, const std::string& name) {
  const nlohmann::json json = read_json_file(profile_path, "profile");
  const auto transports = json.find("transports");
  PHALANX_REQUIRE_INPUT(
      transports != json.end() && transports->is_array(), profile_path,
      ": field 'transports' is missing or not a list (run `bench calibrate` under mpirun -np N, "
      "N >= 2)");
  std::string known;
  for (std::size_t index = 0; index < transports->size(); ++index) {
    const nlohmann::json& entry = (*transports)[index];
    const std::string where = "transports[" + std::to_string(index) + "].";
    PHALANX_REQUIRE_INPUT(entry.is_object(), profile_path, ": field '", where, "' must be an object");
    const std::string entry_name = optional_text(entry, "name", profile_path, where);
    known += (known.empty() ? "" : ", ") + entry_name;
    if (entry_name != name) continue;
    MeasuredTransport transport;
    transport.name = name;
    transport.profile = profile_path;
    // One rank measures no transport (bench calibrate writes none), so a fit is of two ranks or more.
    transport.ranks = required_count(entry, "ranks", profile_path, where, 2, most_ranks);
    transport.latency = required_number(entry, "latency_seconds", profile_path, where, seconds_from_zero);
    transport.seconds_per_byte =
        required_number(entry, "seconds_per_byte", profile_path, where, seconds_per_byte_bounds);
    const auto measured = entry.find("measured");
    if (measured != entry.end()) {
      PHALANX_REQUIRE_INPUT(measured->is_array(), profile_path, ": field '", where,
                            "measured' must be a list");
      for (std::size_t point = 0; point < measured->size(); ++point) {
        const std::string at = where + "measured[" + std::to_string(point) + "].";
        PHALANX_REQUIRE_INPUT((*measured)[point].is_object(), profile_path, ": field '", at,
                              "' must be an object");
        transport.measured.emplace_back(
            required_number((*measured)[point], "bytes", profile_path, at, timed_bytes_bounds),
            required_number((*measured)[point], "seconds", profile_path, at, positive_seconds));
        PHALANX_REQUIRE_INPUT(
            point == 0 || transport.measured[point].first > transport.measured[point - 1].first, profile_path,
            ": field '", at, "bytes' must grow along the list");
        // Progress stages: on every point or on none (profiles before them have none).
        const bool staged =
            (*measured)[point].contains("stages") || (*measured)[point].contains("seconds_in_calls");
        PHALANX_REQUIRE_INPUT(point == 0 || staged == !transport.progress.empty(), profile_path, ": field '",
                              at, "stages' is on some sizes and not on others");
        if (staged) transport.progress.push_back(read_call_stages((*measured)[point], profile_path, at));
      }
    }
    return transport;
  }
  PHALANX_REQUIRE_INPUT(false, profile_path, ": field 'transports' has no transport named '", name,
                        "' (it has: ", known.empty() ? "none" : known, ")");
  return {};
}

AllreduceEstimate estimate_allreduce(const MeasuredTransport& transport, std::size_t bytes) {
  AllreduceEstimate estimate;
  estimate.algorithm = Algorithm::Ring;
  estimate.protocol = Protocol::Simple;
  estimate.latency = transport.latency;
  estimate.bandwidth = 1.0 / transport.seconds_per_byte;
  const auto size = static_cast<double>(bytes);
  const auto& points = transport.measured;
  if (transport.ranks <= 1) {
    estimate.seconds = 0;
  } else if (points.empty()) {
    estimate.seconds = transport.latency + size * transport.seconds_per_byte;
  } else if (size >= points.back().first) {
    estimate.seconds = points.back().second + (size - points.back().first) * transport.seconds_per_byte;
  } else {
    const auto above = std::upper_bound(points.begin(), points.end(), size,
                                        [](double value, const auto& point) { return value < point.first; });
    const std::pair<double, double> below =
        above == points.begin() ? std::make_pair(0.0, std::min(transport.latency, points.front().second))
                                : *(above - 1);
    estimate.seconds =
        below.second + (above->second - below.second) * (size - below.first) / (above->first - below.first);
  }
  return estimate;
}

CallStages call_stages(const MeasuredTransport& transport, std::size_t bytes) {
  if (transport.progress.empty() || transport.progress.size() != transport.measured.size()) return {};
  const double size = std::max(1.0, static_cast<double>(bytes));
  std::size_t nearest = 0;
  for (std::size_t index = 1; index < transport.measured.size(); ++index)
    if (std::abs(std::log(transport.measured[index].first / size)) <
        std::abs(std::log(transport.measured[nearest].first / size)))
      nearest = index;
  CallStages stages = transport.progress[nearest];
  double total = 0;
  for (const double stage : stages.stages) total += stage;
  const double scale = total > 0 ? estimate_allreduce(transport, bytes).seconds / total : 0;
  for (double& stage : stages.stages) stage *= scale;
  for (double& held : stages.seconds_in_calls) held *= scale;
  return stages;
}

}  // namespace phalanx::scaling
