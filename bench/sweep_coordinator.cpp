// The coordinator's work per finished job, which every worker group waits on between trials:
// committing a result and a new job to SQLite (durable: synchronous=FULL), and ASHA's candidate
// list plus the dispatch rule over a large sweep. ./phalanx_bench_sweep_coordinator
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>
#include <vector>

#include "phalanx/sweep/asha.hpp"
#include "phalanx/sweep/dispatch.hpp"
#include "phalanx/sweep/results_store.hpp"

namespace {

// One result committed and the next job committed, as the coordinator does per message.
void CommitResultAndNextJob(benchmark::State& state) {
  const auto folder = std::filesystem::temp_directory_path() / "phalanx_bench_sweep";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  phalanx::sweep::ResultsStore store((folder / "sweep.db").string());
  store.register_worker(0, {0}, "cpu", 1, "host");
  int trial = 0;
  std::int64_t job_id = store.last_job_id();
  const std::vector<phalanx::sweep::EpochRecord> history = {{1, 0.8, 0.5, 0.6, 2.0}};
  for (auto _ : state) {
    phalanx::sweep::JobStart start;
    start.job_id = ++job_id;
    start.trial = trial;
    start.budget = 1;
    start.device = "cpu";
    phalanx::sweep::NewTrial new_trial;
    new_trial.parameters = "{\"optimizer.learning_rate\":0.001}";
    new_trial.config = std::string(3000, 'x');  // a resolved config is about this long
    new_trial.run_dir = "trials/x";
    store.start_job(start, new_trial);
    phalanx::sweep::JobFinish finish;
    finish.job_id = start.job_id;
    finish.trial = trial++;
    finish.budget = 1;
    finish.device = "cpu";
    finish.end_step = 100;
    finish.history = history;
    store.finish_job(finish);
  }
  state.SetItemsProcessed(state.iterations());
  std::filesystem::remove_all(folder);
}
BENCHMARK(CommitResultAndNextJob)->Unit(benchmark::kMillisecond);

// ASHA's candidates and the dispatch walk with `trials` results recorded at rung 0.
void AshaCandidatesAndDispatch(benchmark::State& state) {
  const int trials = static_cast<int>(state.range(0));
  phalanx::sweep::Asha asha(1, 27, 3, true, trials * 2);
  std::mt19937 generator(3);
  std::uniform_real_distribution<double> metric(0, 1);
  for (int index = 0; index < trials; ++index) asha.record(asha.take({-1, 0}).trial, 0, metric(generator));
  std::vector<phalanx::sweep::GroupState> groups;
  for (int group = 0; group < 64; ++group) groups.push_back({group, group<8, 1.0 + group % 3, 5.0, group> 0});
  for (auto _ : state) {
    std::vector<phalanx::sweep::Candidate> candidates;
    for (const auto& job : asha.candidates()) candidates.push_back({job, asha.budget(job.rung)});
    benchmark::DoNotOptimize(phalanx::sweep::choose_job(candidates, groups, 0));
  }
}
BENCHMARK(AshaCandidatesAndDispatch)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
