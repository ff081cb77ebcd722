// The sweep database: a job's start and finish are single transactions, a kill leaves 'running'
// rows that --resume turns into requeued work, and an unfinished transaction leaves nothing.
#include <gtest/gtest.h>

#include "phalanx/sweep/results_store.hpp"
#include "support/test_support.hpp"

using phalanx::sweep::JobFinish;
using phalanx::sweep::JobStart;
using phalanx::sweep::NewTrial;
using phalanx::sweep::ProposalRecord;
using phalanx::sweep::ResultsStore;
using phalanx::sweep::Transaction;

namespace {
// Job `job_id`: trial `trial`'s rung 0 (budget 1) on the CPU group `worker`, from `started` on.
JobStart rung_zero_job(std::int64_t job_id, int trial, int worker, double started) {
  JobStart job;
  job.job_id = job_id;
  job.trial = trial;
  job.rung = 0;
  job.budget = 1;
  job.worker = worker;
  job.device = "cpu";
  job.started = started;
  return job;
}

// A new trial's first job (`job_id`), started on worker 0 at 100 + trial; even trials were
// proposed at random, odd ones by TPE fitted on trial 0's rung-0 result.
void start_new_trial(ResultsStore& store, std::int64_t job_id, int trial) {
  const bool tpe = trial % 2 == 1;
  store.start_job(rung_zero_job(job_id, trial, 0, 100.0 + trial),
                  NewTrial{"{\"optimizer.learning_rate\":0.01}", "seed: 5\n", 5, "trials/" + std::to_string(trial),
                           ProposalRecord{tpe ? "tpe" : "random", tpe ? 0 : -1, tpe ? "[0]" : "[]",
                                          "[[\"optimizer.learning_rate\",\"0.0" + std::to_string(trial + 1) + "\"]]"}});
}

// Job `job_id` of trial `trial`'s rung 0 (budget 1, on the CPU), which trained from `start_step` to
// `end_step` and reported `metric` at `finished`.
JobFinish finished_job(std::int64_t job_id, int trial, std::int64_t start_step, std::int64_t end_step,
                       double metric, double finished) {
  JobFinish job;
  job.job_id = job_id;
  job.trial = trial;
  job.rung = 0;
  job.budget = 1;
  job.device = "cpu";
  job.metric = metric;
  job.start_step = start_step;
  job.end_step = end_step;
  job.finished = finished;
  return job;
}
}  // namespace

TEST(ResultsStore, JobLifecycleAndResumeBookkeeping) {
  phalanx::testing::ScratchDirectory scratch("results_store");
  {
    ResultsStore store(scratch.file("sweep.db"));
    EXPECT_FALSE(store.has_trials());
    EXPECT_EQ(store.last_job_id(), 0);
    store.register_worker(0, {0}, "cpu", 1, "host");
    start_new_trial(store, 1, 0);
    start_new_trial(store, 2, 1);
    EXPECT_TRUE(store.has_trials());
    EXPECT_EQ(store.last_job_id(), 2);
    JobFinish finish = finished_job(1, 0, 0, 15, 0.75, 110);
    finish.history = {{1, 0.75, 0.6, 0, 0}};
    store.finish_job(finish);
    store.set_meta("definition", "x");
  }
  // As after a kill: reopen, trial 1's job was still running.
  ResultsStore store(scratch.file("sweep.db"));
  EXPECT_EQ(store.last_job_id(), 2);  // the coordinator numbers its next jobs on from here
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

// --resume rebuilds ASHA from this: the trials started, the promotions handed out (finished or
// not), the rung results, and the jobs to requeue in job order.
TEST(ResultsStore, ProgressIsWhatResumeRebuildsFrom) {
  phalanx::testing::ScratchDirectory scratch("results_store_progress");
  ResultsStore store(scratch.file("sweep.db"));
  store.register_worker(0, {0}, "cpu", 1, "host");
  start_new_trial(store, 1, 0);
  start_new_trial(store, 2, 1);
  store.finish_job(finished_job(1, 0, 0, 15, 0.75, 110));
  JobStart promotion = rung_zero_job(3, 0, 0, 120);
  promotion.rung = 1;
  promotion.budget = 3;
  store.start_job(promotion);
  // The trial's row keeps its latest result's rung beside its budget and metric while it is
  // promoted (results.csv paired rung 1 with rung 0's metric); the running rung is the job's.
  const auto row = store.database().rows("SELECT status, rung, metric FROM trials WHERE trial_id = 0");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0]["status"], "running");
  EXPECT_EQ(row[0]["rung"], 0);
  EXPECT_DOUBLE_EQ(row[0]["metric"].get<double>(), 0.75);
  store.interrupt_running(130);  // a kill: jobs 2 and 3 were running
  const auto progress = store.progress();
  EXPECT_EQ(progress.trials, (std::vector<int>{0, 1}));
  EXPECT_EQ(progress.promotions, (std::vector<std::pair<int, int>>{{0, 1}}));
  ASSERT_EQ(progress.rung_results.size(), 1u);
  EXPECT_EQ(progress.rung_results[0].trial, 0);
  EXPECT_EQ(progress.rung_results[0].rung, 0);
  EXPECT_DOUBLE_EQ(progress.rung_results[0].metric, 0.75);
  EXPECT_EQ(progress.interrupted, (std::vector<std::pair<int, int>>{{1, 0}, {0, 1}}));
  EXPECT_EQ(store.last_job_id(), 3);
  // Each trial's values come back exactly as written, and how they were proposed is on record.
  using Values = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(progress.parameters.size(), 2u);
  EXPECT_EQ(progress.parameters.at(0), (Values{{"optimizer.learning_rate", "0.01"}}));
  EXPECT_EQ(progress.parameters.at(1), (Values{{"optimizer.learning_rate", "0.02"}}));
  const auto proposals = store.database().rows("SELECT * FROM proposals ORDER BY trial_id");
  ASSERT_EQ(proposals.size(), 2u);
  EXPECT_EQ(proposals[0]["method"], "random");
  EXPECT_TRUE(proposals[0]["model_rung"].is_null());
  EXPECT_EQ(proposals[1]["method"], "tpe");
  EXPECT_EQ(proposals[1]["model_rung"], 0);
  EXPECT_EQ(proposals[1]["fitted_on"], "[0]");
}

// ASHA's stopping rule decided each result against those before it: --resume replays them in the
// order they were written, not in trial order.
TEST(ResultsStore, RungResultsComeBackInTheOrderTheyWereRecorded) {
  phalanx::testing::ScratchDirectory scratch("results_store_order");
  ResultsStore store(scratch.file("sweep.db"));
  // SQLite returns a query without ORDER BY in whatever order its plan gives (here: the rows'), and
  // this makes that order the reverse, so only an ORDER BY can pass.
  store.database().execute("PRAGMA reverse_unordered_selects = ON");
  store.register_worker(0, {0}, "cpu", 1, "host");
  for (int trial = 0; trial < 3; ++trial) start_new_trial(store, trial + 1, trial);
  store.finish_job(finished_job(3, 2, 0, 15, 0.5, 110));
  store.finish_job(finished_job(1, 0, 0, 15, 0.7, 111));
  store.finish_job(finished_job(2, 1, 0, 15, 0.6, 112));
  std::vector<int> order;
  for (const auto& result : store.progress().rung_results) order.push_back(result.trial);
  EXPECT_EQ(order, (std::vector<int>{2, 0, 1}));
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
  store.register_worker(0, {0}, "cpu", 1, "host");
  const std::int64_t stopped = 1, stopped_then_done = 2;
  start_new_trial(store, stopped, 0);
  start_new_trial(store, stopped_then_done, 1);
  start_new_trial(store, 3, 2);
  store.interrupt_job(stopped, 0, 0, 7, "", 110);
  store.interrupt_job(stopped_then_done, 1, 0, 4, "", 110);
  // Trial 1 ran again from its checkpoint and finished; trial 2 was left running by a kill.
  store.start_job(rung_zero_job(4, 1, 0, 120));
  store.finish_job(finished_job(4, 1, 4, 15, 0.5, 130));
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

// No idle tail, then a kill: the handover commits the stopped job and its successor on the merged
// groups together; a kill then finds the successor running, --resume requeues it (never the
// handed-over job), and its redo is recorded like any finished job.
TEST(ResultsStore, HandOverThenKillRequeuesTheSuccessorOnly) {
  phalanx::testing::ScratchDirectory scratch("results_store_hand_over");
  ResultsStore store(scratch.file("sweep.db"));
  store.register_worker(0, {0}, "cpu", 1, "host");
  store.register_worker(1, {1, 2}, "cpu", 1, "host");
  const std::int64_t first = 1, merged = 2;
  start_new_trial(store, first, 0);  // started at 100 on worker 0
  JobStart rest = rung_zero_job(merged, 0, 0, 110);
  rest.estimate_seconds = 3;
  store.hand_over_job(first, 0, 5, "", 110, rest, {{0, {0}}, {1, {1, 2}}});
  const auto select_job = [&](std::int64_t job_id) {
    return store.database().rows("SELECT * FROM jobs WHERE job_id = " + std::to_string(job_id)).at(0);
  };
  auto handed_over = select_job(first);
  EXPECT_EQ(handed_over["status"], "handed_over");
  EXPECT_EQ(handed_over["start_step"], 0);
  EXPECT_EQ(handed_over["end_step"], 5);
  EXPECT_EQ(handed_over["resumed_from"], "");
  EXPECT_DOUBLE_EQ(handed_over["finished"].get<double>(), 110);
  EXPECT_DOUBLE_EQ(handed_over["wall_seconds"].get<double>(), 10);
  auto successor = select_job(merged);
  EXPECT_EQ(successor["status"], "running");
  EXPECT_EQ(successor["worker"], 0);
  EXPECT_DOUBLE_EQ(successor["estimate_seconds"].get<double>(), 3);
  EXPECT_TRUE(successor["faster_group_seconds"].is_null());
  const auto groups =
      store.database().rows("SELECT job_id, worker, ranks, start_step FROM job_groups ORDER BY worker");
  ASSERT_EQ(groups.size(), 2u);
  for (std::size_t index = 0; index < 2; ++index) {
    EXPECT_EQ(groups[index]["job_id"], merged);
    EXPECT_EQ(groups[index]["worker"], index);
    EXPECT_EQ(groups[index]["start_step"], 5);
  }
  // Rank lists as sweeps have always stored them.
  EXPECT_EQ(groups[0]["ranks"], "0");
  EXPECT_EQ(groups[1]["ranks"], "1,2");
  EXPECT_EQ(store.database().rows("SELECT ranks FROM workers WHERE worker = 1").at(0)["ranks"], "1,2");
  auto trial = store.database().rows("SELECT status, steps, wall_seconds FROM trials").at(0);
  EXPECT_EQ(trial["status"], "running");
  EXPECT_EQ(trial["steps"], 5);
  EXPECT_DOUBLE_EQ(trial["wall_seconds"].get<double>(), 10);

  // Killed while the merged job ran.
  const auto interrupted = store.interrupt_running(130);
  ASSERT_EQ(interrupted.size(), 1u);
  EXPECT_EQ(interrupted[0], std::make_pair(0, 0));
  EXPECT_EQ(select_job(first)["status"], "handed_over");
  EXPECT_EQ(select_job(merged)["status"], "interrupted");
  EXPECT_EQ(store.interrupted_jobs(), interrupted);

  // The redo on worker 1, from the handover checkpoint to the rung's end.
  const std::int64_t redone = 3;
  store.start_job(rung_zero_job(redone, 0, 1, 140));
  JobFinish finish = finished_job(redone, 0, 5, 15, 0.5, 150);
  finish.worker = 1;
  finish.resumed_from = "trials/0/checkpoints/step-5.h5";
  finish.train_seconds = 8;
  finish.images_per_sec = 100;
  store.finish_job(finish);
  const auto done = select_job(redone);
  EXPECT_EQ(done["status"], "done");
  EXPECT_EQ(done["start_step"], 5);
  EXPECT_EQ(done["end_step"], 15);
  EXPECT_EQ(done["resumed_from"], finish.resumed_from);
  EXPECT_DOUBLE_EQ(done["wall_seconds"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(done["train_seconds"].get<double>(), 8);
  EXPECT_DOUBLE_EQ(done["images_per_sec"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(done["metric"].get<double>(), 0.5);
  EXPECT_TRUE(store.interrupted_jobs().empty());
  trial = store.database().rows("SELECT status, steps, wall_seconds FROM trials").at(0);
  EXPECT_EQ(trial["status"], "paused");
  EXPECT_EQ(trial["steps"], 15);
}
