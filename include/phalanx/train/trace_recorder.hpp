// TraceRecorder: the timeline of a few sampled training steps on every rank, merged by rank 0
// into one Chrome trace (trace.json; chrome://tracing, Perfetto): one process per rank, one track
// per stream (compute, host-to-device copy, communication, data thread). Recording is a few
// stores into a preallocated vector per sampled step and nothing on the others, so it can stay
// on in every run; the size of the file is bounded by `trace.steps`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "phalanx/comm/communicator.hpp"

namespace phalanx::train {

enum class TraceTrack { Compute = 0, Copy = 1, Communication = 2, DataThread = 3 };

// The stages of one step as the trainer measured them, on the steady clock (core/timer.hpp).
struct StepTimeline {
  std::int64_t step = 0;  // global step number (1-based after the step)
  double start = 0;       // steady seconds when the step began waiting for data
  double data_wait = 0, host_to_device = 0, forward = 0, backward = 0, allreduce_wait = 0, optimizer = 0;
  double sync_wait = 0;  // the run-control collectives after the optimizer (waiting for peers)
  // The whole all-reduce window (StageTimes::allreduce_total); it ends where the exposed wait ends
  // (on NCCL ranks approximately: the device's end is not on the host's clock).
  double allreduce_total = 0;
  double produce_begin = 0, produce_end = 0;  // the loader thread's work on this batch
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

  // Collective over `communicator`: estimates each rank's clock offset against rank 0 (median of
  // several barrier + allgather rounds), gathers every rank's events on rank 0, which writes
  // `path` atomically. `process_label` names this rank's process in the viewer.
  void write_merged(const comm::Communicator& communicator, const std::string& path,
                    const std::string& process_label) const;

  // The offset of this rank's steady clock against rank 0's (seconds to subtract), estimated
  // from `rounds` barrier-aligned readings. Collective.
  static double estimate_clock_offset(const comm::Communicator& communicator, int rounds);

 private:
  struct Event {
    TraceTrack track;
    const char* name;  // static strings only
    std::int64_t step;
    double begin, end;  // steady seconds
  };
  void add(TraceTrack track, const char* name, std::int64_t step, double begin, double end);

  std::int64_t first_sampled_ = 0, steps_ = 0;
  std::vector<Event> events_;
};

}  // namespace phalanx::train
