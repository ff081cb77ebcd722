// TraceRecorder: sampled step timelines -> one Chrome trace of all ranks. The events of a step
// are laid out from the stage durations the trainer measures anyway (stage after stage on the
// compute track), so tracing adds no clock reads to the step; only the loader thread's and the
// all-reduce's windows come with their own timestamps.
#include "phalanx/train/trace_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::train {
namespace {

constexpr int events_per_step = 9;
constexpr int clock_rounds = 7;

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
  stage(TraceTrack::Compute, "optimizer", timeline.optimizer);
  stage(TraceTrack::Compute, "sync wait", timeline.sync_wait);
  const double communication_end = timeline.start + timeline.data_wait + timeline.host_to_device +
                                   timeline.forward + timeline.backward + timeline.allreduce_wait;
  add(TraceTrack::Communication, "all-reduce", timeline.step, communication_end - timeline.allreduce_total,
      communication_end);
  if (timeline.produce_end > timeline.produce_begin && timeline.produce_begin > 0)
    add(TraceTrack::DataThread, "load batch", timeline.step, timeline.produce_begin, timeline.produce_end);
}

double TraceRecorder::estimate_clock_offset(const comm::Communicator& communicator, int rounds) {
  // After a barrier every rank leaves within about one message latency of the others, so the
  // differences of their clock readings estimate the offsets; the median of a few rounds drops
  // the rounds where the scheduler delayed one rank.
  std::vector<double> offsets;
  for (int round = 0; round < rounds; ++round) {
    communicator.barrier();
    const double now = steady_seconds();
    const auto readings = communicator.allgather(now);
    offsets.push_back(now - readings[0]);
  }
  std::nth_element(offsets.begin(), offsets.begin() + static_cast<long>(offsets.size() / 2), offsets.end());
  return offsets[offsets.size() / 2];
}

void TraceRecorder::write_merged(const comm::Communicator& communicator, const std::string& path,
                                 const std::string& process_label) const {
  if (steps_ == 0) return;
  const double offset = estimate_clock_offset(communicator, clock_rounds);
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
  trace["otherData"] = {{"producer", "phalanx"},
                        {"ranks", communicator.size()},
                        {"clock", "steady clock per rank, aligned to rank 0 by barrier + allgather"}};
  write_file_atomically(path, trace.dump() + "\n");
}

}  // namespace phalanx::train
