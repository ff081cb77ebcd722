// Cost of the per-step observability hooks on the training thread (docs/OBSERVABILITY.md): the
// extra clock reads of the host-to-device stage and of the trace's step start, the step-time
// statistics, and recording one sampled step into the trace. Divided by a step time this is the
// instrumentation overhead (docs/BENCHMARKS.md). Run: ./phalanx_bench_observability
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "phalanx/core/timer.hpp"
#include "reporting/step_time_statistics.hpp"
#include "reporting/tensorboard_writer.hpp"
#include "reporting/trace_recorder.hpp"

namespace {

// What every step pays: two steady-clock reads for the host-to-device stage (restart + seconds)
// and one for the step's start, plus one stored step time.
void PerStepHooks(benchmark::State& state) {
  phalanx::train::StepTimeStatistics statistics;
  phalanx::Stopwatch stage_clock;
  for (auto _ : state) {
    double start = phalanx::steady_seconds();  // not const: DoNotOptimize of a const reference is deprecated
    stage_clock.restart();
    const double host_to_device = stage_clock.seconds();
    statistics.add(host_to_device + start * 0);
    benchmark::DoNotOptimize(start);
  }
  state.counters["steps"] = static_cast<double>(statistics.count());
}
BENCHMARK(PerStepHooks);

// What a sampled step pays on top (trace.steps of them per run).
void TraceSampledStep(benchmark::State& state) {
  // Recorders of 10000 steps (3.6 MB of events), recreated outside the timing: a recorder of
  // trace.steps' maximum (100000 steps, 36 MB) is above glibc's 32 MiB cap on the mmap threshold,
  // so every recreation would come back as fresh pages and the loop would time their first-touch
  // faults (about 0.1 per step), which a run pays once per page, not the recording.
  constexpr std::int64_t limit = 10000;
  auto trace = std::make_unique<phalanx::train::TraceRecorder>(0, limit);
  std::int64_t step = 0, events = 0;
  for (auto _ : state) {
    if (step == limit) {
      state.PauseTiming();
      events += static_cast<std::int64_t>(trace->event_count());
      trace = std::make_unique<phalanx::train::TraceRecorder>(0, limit);
      step = 0;
      state.ResumeTiming();
    }
    const double start = 1000.0 + static_cast<double>(step) * 0.03;
    if (trace->sampled(step))
      trace->record(
          {step + 1, start, 1e-4, 5e-5, 4e-3, 1.2e-2, 2e-3, 2e-4, 3e-5, 1.1e-2, start - 0.05, start - 0.049});
    ++step;
  }
  state.counters["events_per_step"] =
      static_cast<double>(events + static_cast<std::int64_t>(trace->event_count())) /
      static_cast<double>(state.iterations());
}
BENCHMARK(TraceSampledStep);

// A step that is not sampled: one comparison.
void TraceUnsampledStep(benchmark::State& state) {
  phalanx::train::TraceRecorder trace(3, 20);
  std::int64_t step = 1000;
  for (auto _ : state) benchmark::DoNotOptimize(trace.sampled(step++));
}
BENCHMARK(TraceUnsampledStep);

// Rank 0, every train.log_every_steps: one metrics.jsonl step event as TensorBoard scalars.
void TensorBoardStepEvent(benchmark::State& state) {
  const auto folder = std::filesystem::temp_directory_path() / "phalanx-bench-tensorboard";
  std::filesystem::create_directories(folder);
  {
    phalanx::train::TensorBoardWriter writer(folder.string());
    const nlohmann::json event = {{"event", "step"},
                                  {"step", 100},
                                  {"epoch", 0},
                                  {"loss", 0.52},
                                  {"accuracy", 0.81},
                                  {"learning_rate", 0.002},
                                  {"images_per_sec", 2450.0},
                                  {"time", 12.5}};
    for (auto _ : state) writer.metrics_event(event, 1.7e9);
  }
  std::filesystem::remove_all(folder);
}
BENCHMARK(TensorBoardStepEvent);

}  // namespace

BENCHMARK_MAIN();
