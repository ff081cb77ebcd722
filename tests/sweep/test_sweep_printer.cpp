// The coordinator's lines (docs/SWEEPS.md, "Output while it runs"), word for word: users and
// scripts read them in logs. The job line carries the rungs, busy groups and best trial after the
// dispatch; a log gets the top trials every 10 results, a terminal after each, redrawn in place.
#include <gtest/gtest.h>

#include <csignal>
#include <functional>

#include "sweep_printer.hpp"

using namespace phalanx::sweep;

namespace {

// A grid over batch sizes, trained fully (one rung), so that trial N is job N + 1 and the
// leaderboard's parameters are known.
phalanx::config::SweepConfig grid_sweep() {
  phalanx::config::SweepConfig sweep;
  sweep.name = "lines";
  sweep.search = phalanx::config::Search::Grid;
  sweep.scheduler = phalanx::config::Scheduler::Full;
  sweep.trials = 12;
  sweep.min_budget = 1;
  sweep.max_budget = 9;
  sweep.eta = 3;
  sweep.join_running = false;
  phalanx::config::SearchParameter batch;
  batch.key = "train.batch_size";
  batch.type = phalanx::config::ParameterType::Choice;
  batch.values = {"32", "64", "128", "256", "512", "1024", "2048", "4096", "8192", "16384", "32768", "65536"};
  sweep.space = {batch};
  return sweep;
}

std::string printed(const std::function<void()>& print) {
  testing::internal::CaptureStdout();
  print();
  return testing::internal::GetCapturedStdout();
}

JobResult result(std::int64_t job, double metric, std::int64_t start_step = 0) {
  return JobResult{0, job, metric, JobSteps{start_step, 15, 15, ""}, 1.0, 1.0, {}};
}

// Feeds `message` to the state and prints what it shows.
std::string receive(SweepState& state, SweepPrinter& printer, const WorkerMessage& message, double now) {
  const auto commands = state.receive(message, now);
  return printed([&] {
    for (const auto& command : commands) {
      if (const auto* progress = std::get_if<ShowProgress>(&command)) printer.show(*progress, state);
      if (const auto* failed = std::get_if<ShowJobFailed>(&command)) printer.show(*failed, state);
      if (const auto* stop = std::get_if<ShowStopBegun>(&command)) printer.show(*stop);
    }
  });
}

const Hello group_zero{0, {0}, false, "cpu", 2, "host"};

}  // namespace

TEST(SweepPrinter, HeaderJobLinesAndTheLeaderboardEveryTenResultsInALog) {
  const auto sweep = grid_sweep();
  SweepState state(sweep, 1, 0, 1000.0);
  SweepPrinter printer(sweep, false);
  EXPECT_EQ(
      printed([&] { printer.header(state); }),
      "sweep lines: 12 trials, grid search, full scheduler (rungs: 9 epochs; eta 3), metric test_accuracy "
      "(maximize), 1 worker groups\n");
  EXPECT_EQ(receive(state, printer, group_zero, 1000.0), "");
  EXPECT_EQ(receive(state, printer, result(1, 0.5), 1012.0),
            "[   12.0 s] trial   0 rung 0 (9 epochs) test_accuracy 0.5000  worker 0 (cpu, 2 thr) 12.0 s | "
            "rungs 1 | busy 1/1 | best trial 0 0.5000 (rung 0)\n");
  for (int job = 2; job <= 9; ++job)
    EXPECT_EQ(receive(state, printer, result(job, 0.1 * job), 1012.0 + job).find("top trials"),
              std::string::npos);
  // The 10th result: the job line, then the top 5.
  const std::string tenth = receive(state, printer, result(10, 0.95, 4), 1030.0);
  EXPECT_EQ(
      tenth,
      "[   30.0 s] trial   9 rung 0 (9 epochs) test_accuracy 0.9500  worker 0 (cpu, 2 thr) 9.0 s resumed at "
      "step 4 | rungs 10 | busy 1/1 | best trial 9 0.9500 (rung 0)\n"
      "current top trials (test_accuracy):\n"
      "  1. trial   9  rung 0  0.9500  {\"train.batch_size\":16384}\n"
      "  2. trial   8  rung 0  0.9000  {\"train.batch_size\":8192}\n"
      "  3. trial   7  rung 0  0.8000  {\"train.batch_size\":4096}\n"
      "  4. trial   6  rung 0  0.7000  {\"train.batch_size\":2048}\n"
      "  5. trial   5  rung 0  0.6000  {\"train.batch_size\":1024}\n");
}

TEST(SweepPrinter, OnATerminalTheLeaderboardIsRedrawnBelowTheLines) {
  const auto sweep = grid_sweep();
  SweepState state(sweep, 1, 0, 0.0);
  SweepPrinter printer(sweep, true);
  receive(state, printer, group_zero, 0.0);
  EXPECT_EQ(
      receive(state, printer, result(1, 0.5), 2.0),
      "[    2.0 s] trial   0 rung 0 (9 epochs) test_accuracy 0.5000  worker 0 (cpu, 2 thr) 2.0 s | rungs 1 | "
      "busy 1/1 | best trial 0 0.5000 (rung 0)\n"
      "current top trials (test_accuracy):\n"
      "  1. trial   0  rung 0  0.5000  {\"train.batch_size\":32}\n");
  // The next line takes the two leaderboard lines off first; so does a failure, which redraws it.
  EXPECT_EQ(receive(state, printer, JobFailed{0, 2, "diverged"}, 3.0),
            "\033[2A\033[J[    3.0 s] trial 1 failed on worker 0: diverged\n"
            "current top trials (test_accuracy):\n"
            "  1. trial   0  rung 0  0.5000  {\"train.batch_size\":32}\n");
  EXPECT_EQ(
      receive(state, printer, JobInterrupted{0, 3, SIGTERM, JobSteps{0, 4, 4, ""}}, 4.0),
      "\033[2A\033[J[    4.0 s] SIGTERM: no new jobs; waiting for 0 running trial(s) to stop with a "
      "checkpoint\n"
      "[    4.0 s] trial   2 rung 0 interrupted after step 4 (checkpoint written) on worker 0 | rungs 1 | "
      "busy 0/1 | best trial 0 0.5000 (rung 0)\n"
      "current top trials (test_accuracy):\n"
      "  1. trial   0  rung 0  0.5000  {\"train.batch_size\":32}\n");
  EXPECT_EQ(
      printed([&] {
        printer.erase_live_block();
        printer.stopped(state, 0.25, 1, 75);
      }),
      "\033[2A\033[Jsweep stopped by SIGTERM 0.25 s after the signal: 1 running trial(s) interrupted with a "
      "checkpoint, 1 job(s) waiting; continue with --resume (exit status 75)\n");
}

TEST(SweepPrinter, JoinsAndHandovers) {
  const auto sweep = grid_sweep();
  SweepState state(sweep, 2, 0, 0.0);
  SweepPrinter printer(sweep, false);
  ShowProgress progress;
  progress.headline = ShowJobHandedOver{5.0, 3, 1, 20, {0, 1}, 3, 8.4, 0.46};
  progress.notes = {ShowEndedBeforeHandover{5.0, 2, {2, 3}}, ShowJoin{5.0, 1, {1, 2}, 4, {0, 3}, 41.6, 2}};
  EXPECT_EQ(
      printed([&] { printer.show(progress, state); }),
      "[    5.0 s] trial   3 rung 1 handed over after step 20 (checkpoint written): continues on workers 0+1 "
      "(3 ranks), same global batch, about 8 s, at 46% of their summed speed as merged jobs so far | rungs 0 "
      "| busy 0/2 | best -\n"
      "[    5.0 s] trial 2 ended before its handover: worker(s) 2+3 free again\n"
      "[    5.0 s] worker 1 (ranks 1,2) has nothing from ASHA: joins trial 4 on worker 0+3 (about 42 s left "
      "on "
      "2 ranks) after its next step\n"
      // Every job line at a multiple of 10 results (here 0) brings the top trials in a log.
      "current top trials (test_accuracy):\n");
  // Before a merged job has been measured the line says no share.
  progress.headline = ShowJobHandedOver{5.0, 3, 1, 20, {0, 1}, 3, 8.4, std::nullopt};
  progress.notes.clear();
  EXPECT_EQ(
      printed([&] { printer.show(progress, state); }),
      "[    5.0 s] trial   3 rung 1 handed over after step 20 (checkpoint written): continues on workers 0+1 "
      "(3 ranks), same global batch, about 8 s | rungs 0 | busy 0/2 | best -\n"
      "current top trials (test_accuracy):\n");
}
