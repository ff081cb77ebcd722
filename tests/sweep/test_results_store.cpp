// The sweep database: a job's start and finish are single transactions, a kill leaves 'running'
// rows that --resume turns into requeued work, and an unfinished transaction leaves nothing.
#include <gtest/gtest.h>

#include "phalanx/sweep/results_store.hpp"
#include "support/test_support.hpp"

using phalanx::sweep::JobFinish;
using phalanx::sweep::JobStart;
using phalanx::sweep::ResultsStore;
using phalanx::sweep::Transaction;

namespace {
JobStart new_trial_job(int trial) {
  JobStart job;
  job.trial = trial;
  job.rung = 0;
  job.budget = 1;
  job.worker = 0;
  job.device = "cpu";
  job.started = 100.0 + trial;
  job.new_trial = true;
  job.parameters = "{\"optimizer.learning_rate\":0.01}";
  job.config = "seed: 5\n";
  job.seed = 5;
  job.run_dir = "trials/" + std::to_string(trial);
  return job;
}
}  // namespace

TEST(ResultsStore, JobLifecycleAndResumeBookkeeping) {
  phalanx::testing::ScratchDirectory scratch("results_store");
  {
    ResultsStore store(scratch.file("sweep.db"));
    EXPECT_FALSE(store.has_trials());
    store.register_worker(0, "0", "cpu", 1, "host");
    const auto first = store.start_job(new_trial_job(0));
    store.start_job(new_trial_job(1));
    EXPECT_TRUE(store.has_trials());
    JobFinish finish;
    finish.job_id = first;
    finish.trial = 0;
    finish.rung = 0;
    finish.budget = 1;
    finish.device = "cpu";
    finish.metric = 0.75;
    finish.end_step = 15;
    finish.finished = 110;
    finish.history = nlohmann::json::array({{{"epoch", 1}, {"test_accuracy", 0.75}, {"test_loss", 0.6}}});
    store.finish_job(finish);
    store.set_meta("definition", "x");
  }
  // As after a kill: reopen, trial 1's job was still running.
  ResultsStore store(scratch.file("sweep.db"));
  EXPECT_EQ(store.meta("definition").value_or(""), "x");
  EXPECT_FALSE(store.meta("absent").has_value());
  const auto interrupted = store.interrupt_running(200);
  ASSERT_EQ(interrupted.size(), 1u);
  EXPECT_EQ(interrupted[0], std::make_pair(1, 0));
  const auto trials =
      store.database().rows("SELECT trial_id, status, metric, steps FROM trials ORDER BY trial_id");
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0]["status"], "paused");
  EXPECT_DOUBLE_EQ(trials[0]["metric"].get<double>(), 0.75);
  EXPECT_EQ(trials[0]["steps"], 15);
  EXPECT_EQ(trials[1]["status"], "paused");
  EXPECT_TRUE(trials[1]["metric"].is_null());
  EXPECT_EQ(store.database().rows("SELECT * FROM rung_results").size(), 1u);
  EXPECT_EQ(store.database().rows("SELECT * FROM epoch_metrics WHERE trial_id = 0").size(), 1u);
  EXPECT_EQ(store.database().rows("SELECT * FROM jobs WHERE status = 'interrupted'").size(), 1u);
  const auto worker = store.database().rows("SELECT jobs, busy_seconds FROM workers");
  EXPECT_EQ(worker[0]["jobs"], 1);
  EXPECT_DOUBLE_EQ(worker[0]["busy_seconds"].get<double>(), 10.0);
  store.stop_paused();
  EXPECT_EQ(store.database().rows("SELECT * FROM trials WHERE status = 'stopped'").size(), 2u);
}

TEST(ResultsStore, UncommittedTransactionLeavesNothing) {
  phalanx::testing::ScratchDirectory scratch("results_store_rollback");
  ResultsStore store(scratch.file("sweep.db"));
  try {
    Transaction transaction(store.database());
    store.database().execute("INSERT INTO sweep (key, value) VALUES ('half', 'written')");
    throw std::runtime_error("killed between two writes");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(store.meta("half").has_value());
}

// A stop signal commits the jobs it ended as interrupted (with the step of their checkpoint);
// --resume requeues each trial whose latest job is interrupted, however it got there, and no
// trial whose interrupted job has already been run again.
TEST(ResultsStore, InterruptedJobsAreTheTrialsWhoseLatestJobWasInterrupted) {
  phalanx::testing::ScratchDirectory scratch("results_store_interrupted");
  ResultsStore store(scratch.file("sweep.db"));
  store.register_worker(0, "0", "cpu", 1, "host");
  const auto stopped = store.start_job(new_trial_job(0));
  const auto stopped_then_done = store.start_job(new_trial_job(1));
  store.start_job(new_trial_job(2));
  store.interrupt_job(stopped, 0, 0, 7, "", 110);
  store.interrupt_job(stopped_then_done, 1, 0, 4, "", 110);
  // Trial 1 ran again from its checkpoint and finished; trial 2 was left running by a kill.
  JobStart again;
  again.trial = 1;
  again.rung = 0;
  again.budget = 1;
  again.device = "cpu";
  again.started = 120;
  const auto redone = store.start_job(again);
  JobFinish finish;
  finish.job_id = redone;
  finish.trial = 1;
  finish.budget = 1;
  finish.device = "cpu";
  finish.metric = 0.5;
  finish.start_step = 4;
  finish.end_step = 15;
  finish.finished = 130;
  finish.history = nlohmann::json::array();
  store.finish_job(finish);
  store.interrupt_running(140);

  const auto requeue = store.interrupted_jobs();
  ASSERT_EQ(requeue.size(), 2u);
  EXPECT_EQ(requeue[0], std::make_pair(0, 0));
  EXPECT_EQ(requeue[1], std::make_pair(2, 0));
  const auto job = store.database().rows("SELECT status, start_step, end_step FROM jobs WHERE job_id = " +
                                         std::to_string(stopped));
  EXPECT_EQ(job[0]["status"], "interrupted");
  EXPECT_EQ(job[0]["end_step"], 7);
  const auto trials = store.database().rows("SELECT trial_id, status FROM trials ORDER BY trial_id");
  EXPECT_EQ(trials[0]["status"], "paused");
  EXPECT_EQ(trials[1]["status"], "paused");  // finished rung 0, not promoted (yet)
  EXPECT_EQ(trials[2]["status"], "paused");
  // Stopped again before it ran: still the one job to requeue for trial 0.
  EXPECT_EQ(store.interrupted_jobs(), requeue);
}
