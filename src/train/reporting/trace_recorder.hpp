// TraceRecorder: the timeline of a few sampled training steps on every rank, merged by rank 0
// into one Chrome trace (trace.json; chrome://tracing, Perfetto): one process per rank, one track
// per stream (compute, host-to-device copy, communication, data thread). Recording is a few
// stores into a preallocated vector per sampled step and nothing on the others, so it can stay
// on in every run; the size of the file is bounded by `trace.steps`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "phalanx/comm/communicator.hpp"
#include "phalanx/core/timer.hpp"

namespace phalanx::train {

enum class TraceTrack { Compute = 0, Copy = 1, Communication = 2, DataThread = 3 };

// The stages of one step as the trainer measured them, on the steady clock (core/timer.hpp).
struct StepTimeline {
  std::int64_t step = 0;  // global step number (1-based after the step)
  double start = 0;       // steady seconds when the step began waiting for data
  double data_wait = 0, host_to_device = 0, forward = 0, backward = 0, allreduce_wait = 0, optimizer = 0;
  double sync_wait = 0;  // the run-control collectives, mostly before the optimizer (waiting for peers)
  // The whole all-reduce window (StageTimes::allreduce_total); it ends where the exposed wait ends
  // (on NCCL ranks approximately: the device's end is not on the host's clock).
  double allreduce_total = 0;
  double produce_begin = 0, produce_end = 0;  // the loader thread's work on this batch
  // When backward reported each gradient bucket ready (steady seconds, in start order; null: not
  // known on the host, as on NCCL ranks): instants on the communication track.
  const std::vector<double>* bucket_ready = nullptr;
};

// A rank's clock against rank 0's: subtract `offset` (seconds) from a local reading to get rank
// 0's time; the true offset lies within `error_bound` seconds of `offset`.
struct ClockOffset {
  double offset = 0, error_bound = 0;
};

class TraceRecorder {
 public:
  // Samples the run's steps [first_sampled, first_sampled + steps) (counted from 0 in this
  // process); steps == 0 records nothing and writes no file.
  TraceRecorder(std::int64_t first_sampled, std::int64_t steps);

  // True when the run step `run_step` (0-based in this process) is sampled.
  bool sampled(std::int64_t run_step) const {
    return run_step >= first_sampled_ && run_step < first_sampled_ + steps_;
  }
  void record(const StepTimeline& timeline);
  std::size_t event_count() const { return events_.size(); }

  // Collective over `communicator`: estimates each rank's clock offset against rank 0 (round
  // trips, see estimate_clock_offsets), gathers every rank's events on rank 0, which writes
  // `path` atomically with the offsets and their error bounds. `process_label` names this rank's
  // process in the viewer.
  void write_merged(const comm::Communicator& communicator, const std::string& path,
                    const std::string& process_label) const;

  // Every rank's clock offset against rank 0 (indexed by rank; the same vector on every rank).
  // Rank 0 exchanges round trips with each other rank in turn and keeps the shortest one: the
  // peer read its clock somewhere between rank 0's send and receive, so the offset is taken at
  // the midpoint and is off by at most half that round trip, whichever rank the scheduler
  // delayed. `clock` is the clock to align (the steady clock of the trace's events). Collective.
  static std::vector<ClockOffset> estimate_clock_offsets(
      const comm::Communicator& communicator, const std::function<double()>& clock = steady_seconds);

 private:
  struct Event {
    TraceTrack track;
    const char* name;  // static strings only
    std::int64_t step;
    double begin, end;  // steady seconds
    int bucket = -1;    // >= 0: the instant this bucket became ready (begin == end)
  };
  void add(TraceTrack track, const char* name, std::int64_t step, double begin, double end);

  std::int64_t first_sampled_ = 0, steps_ = 0;
  std::vector<Event> events_;
};

}  // namespace phalanx::train
