// TraceRecorder: sampled step timelines -> one Chrome trace of all ranks. The events of a step
// are laid out from the stage durations the trainer measures anyway (stage after stage on the
// compute track), so tracing adds no clock reads to the step; only the loader thread's and the
// all-reduce's windows come with their own timestamps.
#include "reporting/trace_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::train {
namespace {

constexpr int events_per_step = 9;
// Round trips of the clock offset estimate: at least `minimum_clock_rounds` per rank, more while
// none was short enough to bound the error well, up to `maximum_clock_rounds` (a loaded machine,
// where a round trip that lost a core to another process takes a scheduler tick).
constexpr int minimum_clock_rounds = 8, maximum_clock_rounds = 64;
constexpr double short_round_trip_seconds = 20e-6;
// A rank waiting for its turn (or for the table) probes for 0.2 ms, then sleeps between probes
// instead of spinning in MPI, so it does not take a core from the pair being measured for
// long; the turn's first round trip absorbs a wake-up.
constexpr double turn_poll_seconds = 0.0002;
constexpr int clock_tag = 0x434c;  // apart from the sweep protocol's tags
constexpr double another_round = 1, rounds_done = 0;

const char* track_name(int track) {
  static const char* const names[] = {"compute", "copy (host to device)", "communication (all-reduce)",
                                      "data thread (loader)"};
  return names[track];
}

}  // namespace

TraceRecorder::TraceRecorder(std::int64_t first_sampled, std::int64_t steps)
    : first_sampled_(first_sampled), steps_(std::max<std::int64_t>(steps, 0)) {
  events_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(steps_, 100000) * events_per_step));
}

void TraceRecorder::add(TraceTrack track, const char* name, std::int64_t step, double begin, double end) {
  if (end > begin) events_.push_back({track, name, step, begin, end});
}

void TraceRecorder::record(const StepTimeline& timeline) {
  double at = timeline.start;
  const auto stage = [&](TraceTrack track, const char* name, double seconds) {
    add(track, name, timeline.step, at, at + seconds);
    at += seconds;
  };
  stage(TraceTrack::Compute, "data wait", timeline.data_wait);
  stage(TraceTrack::Copy, "host to device", timeline.host_to_device);
  stage(TraceTrack::Compute, "forward", timeline.forward);
  stage(TraceTrack::Compute, "backward", timeline.backward);
  stage(TraceTrack::Compute, "all-reduce wait", timeline.allreduce_wait);
  // The agreement before the update is most of it (the straggler report after the optimizer runs
  // every log interval only).
  stage(TraceTrack::Compute, "sync wait", timeline.sync_wait);
  stage(TraceTrack::Compute, "optimizer", timeline.optimizer);
  const double communication_end = timeline.start + timeline.data_wait + timeline.host_to_device +
                                   timeline.forward + timeline.backward + timeline.allreduce_wait;
  add(TraceTrack::Communication, "all-reduce", timeline.step, communication_end - timeline.allreduce_total,
      communication_end);
  if (timeline.produce_end > timeline.produce_begin && timeline.produce_begin > 0)
    add(TraceTrack::DataThread, "load batch", timeline.step, timeline.produce_begin, timeline.produce_end);
  if (timeline.bucket_ready)
    for (std::size_t index = 0; index < timeline.bucket_ready->size(); ++index) {
      const double at = (*timeline.bucket_ready)[index];
      if (at > 0)
        events_.push_back(
            {TraceTrack::Communication, "bucket ready", timeline.step, at, at, static_cast<int>(index)});
    }
}

std::vector<ClockOffset> TraceRecorder::estimate_clock_offsets(const comm::Communicator& communicator,
                                                               const std::function<double()>& clock) {
  const int size = communicator.size();
  // offset, error bound per rank: rank 0 measures them all, then hands the table to every rank.
  std::vector<double> table(static_cast<std::size_t>(2 * size), 0.0);
  if (communicator.rank() == 0) {
    for (int peer = 1; peer < size; ++peer) {
      double shortest = std::numeric_limits<double>::infinity(), offset = 0;
      for (int round = 0; round < maximum_clock_rounds; ++round) {
        if (round >= minimum_clock_rounds && shortest <= short_round_trip_seconds) break;
        const double sent = clock();
        communicator.send(&another_round, 1, peer, clock_tag);
        double remote = 0;
        communicator.receive(&remote, 1, peer, clock_tag);
        const double received = clock();
        if (received - sent < shortest) {
          shortest = received - sent;
          offset = remote - (sent + received) / 2;
        }
      }
      communicator.send(&rounds_done, 1, peer, clock_tag);
      table[static_cast<std::size_t>(2 * peer)] = offset;
      table[static_cast<std::size_t>(2 * peer + 1)] = shortest / 2;
    }
    for (int peer = 1; peer < size; ++peer)
      communicator.send(table.data(), static_cast<std::int64_t>(table.size()), peer, clock_tag);
  } else {
    double signal = 0;
    communicator.receive(&signal, 1, 0, clock_tag, turn_poll_seconds);
    while (signal > 0.5) {  // another_round
      const double now = clock();
      communicator.send(&now, 1, 0, clock_tag);
      communicator.receive(&signal, 1, 0, clock_tag);
    }
    communicator.receive(table.data(), static_cast<std::int64_t>(table.size()), 0, clock_tag,
                         turn_poll_seconds);
  }
  std::vector<ClockOffset> offsets(static_cast<std::size_t>(size));
  for (int rank = 0; rank < size; ++rank)
    offsets[static_cast<std::size_t>(rank)] = {table[static_cast<std::size_t>(2 * rank)],
                                               table[static_cast<std::size_t>(2 * rank + 1)]};
  return offsets;
}

void TraceRecorder::write_merged(const comm::Communicator& communicator, const std::string& path,
                                 const std::string& process_label) const {
  if (steps_ == 0) return;
  const auto clock_offsets = estimate_clock_offsets(communicator);
  const double offset = clock_offsets[static_cast<std::size_t>(communicator.rank())].offset;
  // The earliest aligned event of all ranks is time zero of the trace.
  double first = events_.empty() ? 1e300 : events_.front().begin;
  for (const auto& event : events_) first = std::min(first, event.begin);
  double origin = -(first - offset);
  communicator.allreduce_max(&origin, 1);
  origin = -origin;

  const int rank = communicator.rank();
  nlohmann::json local = nlohmann::json::array();
  local.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", rank}, {"args", {{"name", process_label}}}});
  local.push_back(
      {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
  for (int track = 0; track < 4; ++track) {
    local.push_back({{"ph", "M"},
                     {"name", "thread_name"},
                     {"pid", rank},
                     {"tid", track},
                     {"args", {{"name", track_name(track)}}}});
    local.push_back({{"ph", "M"},
                     {"name", "thread_sort_index"},
                     {"pid", rank},
                     {"tid", track},
                     {"args", {{"sort_index", track}}}});
  }
  for (const auto& event : events_) {
    const double begin = (event.begin - offset - origin) * 1e6, end = (event.end - offset - origin) * 1e6;
    if (event.bucket >= 0) {
      // An instant (thread scope): backward made this bucket whole here and its all-reduce could start.
      local.push_back({{"ph", "i"},
                       {"s", "t"},
                       {"name", event.name},
                       {"cat", track_name(static_cast<int>(event.track))},
                       {"pid", rank},
                       {"tid", static_cast<int>(event.track)},
                       {"ts", std::round(begin * 1000) / 1000},
                       {"args", {{"step", event.step}, {"bucket", event.bucket}}}});
      continue;
    }
    local.push_back({{"ph", "X"},
                     {"name", event.name},
                     {"cat", track_name(static_cast<int>(event.track))},
                     {"pid", rank},
                     {"tid", static_cast<int>(event.track)},
                     {"ts", std::round(begin * 1000) / 1000},
                     {"dur", std::round((end - begin) * 1000) / 1000},
                     {"args", {{"step", event.step}}}});
  }
  const auto gathered = communicator.gather_strings(local.dump(), 0);
  if (rank != 0) return;
  nlohmann::json trace = {{"displayTimeUnit", "ms"}, {"traceEvents", nlohmann::json::array()}};
  for (const auto& text : gathered)
    for (auto& event : nlohmann::json::parse(text)) trace["traceEvents"].push_back(std::move(event));
  nlohmann::json offsets_us = nlohmann::json::array(), error_bounds_us = nlohmann::json::array();
  for (const auto& clock_offset : clock_offsets) {
    offsets_us.push_back(std::round(clock_offset.offset * 1e9) / 1000);
    error_bounds_us.push_back(std::round(clock_offset.error_bound * 1e9) / 1000);
  }
  trace["otherData"] = {
      {"producer", "phalanx"},
      {"ranks", communicator.size()},
      {"clock", "steady clock per rank, aligned to rank 0 by the shortest of several round trips"},
      {"clock_offsets_us", offsets_us},
      {"clock_error_bounds_us", error_bounds_us}};
  write_file_atomically(path, trace.dump() + "\n");
}

}  // namespace phalanx::train
