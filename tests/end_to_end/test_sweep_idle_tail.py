"""End-to-end: no idle tail (docs/SWEEPS.md, "No idle tail"). At the end of a sweep, a worker group
that ASHA has nothing for joins a running trial: the trial stops after its next step with a
checkpoint (a "handover") and continues on the merged ranks with the same global batch, through
the elastic resume (docs/CHECKPOINTS.md).

A 3-rank CPU sweep (groups {0}, {1} and {2}) of 3 trials, ASHA with eta 3 and rungs of 0.5 and
1.5 epochs. The three trials start on the three groups; a group whose trial ends first has nothing
(fewer than 3 rung-0 results promote nobody) and joins a running trial (which one, and whether it
is already on merged groups, depends on timing). When the last rung-0 result is in, ASHA promotes
one trial to rung 1; one group takes it, the other two have nothing and join it after its first
step. So the sweep's last trial runs its final steps on all three ranks. Once that merged job has
logged a step, the whole mpirun is killed (SIGKILL) and the sweep continued with --resume: the
merged job is requeued on one group, the other two join it again, and the sweep ends as it would
have without the kill. Checked from the database, the trial's files and a straight run:

- the kill: the merged job is the one job left 'interrupted' and the only one requeued (not the
  job it continued, 'handed_over'); the job that redoes it starts at the handover's step, from
  its checkpoint (checkpoint.every_steps is 0: the merged job wrote none), so the steps the
  killed job had trained past it are trained again, and their events logged before the kill are
  dropped from metrics.jsonl (every step once, below);

- the records: the last job of the promoted trial ran on workers 0, 1 and 2 (job_groups, ranks
  "0", "1" and "2") and resumed from the checkpoint of a job recorded as 'handed_over' at the step
  where it starts; every job but the killed one starts where the previous one of its trial ended;
  a handed-over job's successor keeps all its groups (a trial's groups only grow within a rung);
  the handover is in the trial's metrics.jsonl (event "handover") and in the sweep's log;
- every step exactly once: the step events (log_every_steps: 1) are 1..N, each once;
- the same trajectory: the promoted trial against `phalanx train` of its config straight on one
  rank (its global batch, cut 6 + 5 + 5 on three ranks): the same learning rate at every step, the same losses bitwise up to the
  first handover, within 1e-4 relative after it, and the final weights and momentum within 1e-4
  of each tensor's largest magnitude (the bound and its argument are test_elastic_resume.py's:
  after a handover each update sums the same per-sample gradients in other groups; the learning
  rate here is small and the steps after a handover few, so the argument's 10 steps hold here too),
  and the final test accuracy within 1 point (a flipped prediction or two among 160 images);
- workers.join_running: false keeps the old behaviour: no handover, one group idles.
"""

import os
import re
import sqlite3
import time
import unittest

import numpy as np

import cluster_jobs
import e2e_common as e2e
import sweep_common as sweep
from sweep_common import query

TRAIN, TEST = 480, 160
BATCH = 16  # 30 steps per epoch on one rank: rung 0 is 15 steps, rung 1 another 30
RANKS = 3
RELATIVE_TOLERANCE = 1e-4
SWEEP_TEXT = """name: e2e_idle_tail
seed: 3
config: base.yaml
search: random
scheduler: asha
trials: 3
metric: test_accuracy
budget: {{unit: epochs, min: 0.5, max: 1.5, eta: 3}}
workers:
  cpu_ranks_per_trial: 1
  join_running: {join}
  join_min_seconds: 0
space:
  optimizer.learning_rate: {{type: loguniform, low: 0.005, high: 0.02}}
"""


def setUpModule():
    global WORK, RESULTS, KILL
    WORK, _ = sweep.set_up("sweep_idle_tail", TRAIN, TEST, name="idle-tail-base", batch_size=BATCH,
                           preset="lenet5", optimizer={"type": "sgd", "learning_rate": 0.01, "momentum": 0.9},
                           every_steps=0, keep=3, log_every_steps=1)
    RESULTS = {}
    for join in ("true", "false"):
        path = sweep.write_text(os.path.join(WORK, f"sweep-{join}.yaml"), SWEEP_TEXT.format(join=join))
        directory = os.path.join(WORK, f"sweep-{join}")
        started = time.monotonic()
        resume = []
        if join == "true":
            KILL = kill_the_merged_top_rung_job(path, directory)
            resume = ["--resume"]
        result = e2e.mpirun(RANKS, "sweep", path, "--sweep-dir", directory, *resume, timeout=120)
        RESULTS[join] = (result, directory, time.monotonic() - started)


def kill_the_merged_top_rung_job(path, directory):
    """Starts the sweep and SIGKILLs the whole mpirun once the promoted trial's job on merged groups
    has logged a step, 5 or more steps before its last (the only job running then: every other
    trial is done). Returns the killed job's row (with `merged_at`, the step it started at, and
    `run_dir`), or None when the sweep ended first; the last step logged before the kill; and the
    sweep's output."""
    process = sweep.start_sweep(RANKS, path, directory)
    killed, logged = None, 0
    try:
        deadline = time.monotonic() + 120
        while killed is None and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)  # the merged job trains its 29 steps in a fraction of a second
            if not os.path.exists(os.path.join(directory, "sweep.db")):
                continue  # (sqlite3 would create it)
            try:
                running = query(directory, "SELECT jobs.*, job_groups.start_step AS merged_at, trials.run_dir "
                                "FROM jobs JOIN job_groups ON job_groups.job_id = jobs.job_id AND "
                                "job_groups.worker = jobs.worker JOIN trials ON trials.trial_id = jobs.trial_id "
                                "WHERE jobs.status = 'running' AND jobs.rung = 1")
            except sqlite3.OperationalError:  # no tables yet
                continue
            for job in running:
                logged = cluster_jobs.last_logged_step(job["run_dir"])
                if job["merged_at"] < logged <= round(job["budget"] * (TRAIN // BATCH)) - 5:
                    killed = job
    finally:
        output = sweep.kill_sweep(process)
    sweep.wait_for_lock(directory)
    return killed, logged, output


def flat_arrays(path):
    """The checkpoint's weights and optimizer state, one entry per tensor."""
    return {f"{group}/{name}": value for group, arrays in e2e.read_checkpoint_arrays(path).items()
            for name, value in arrays.items()}


class NoIdleTail(unittest.TestCase):
    def test_the_last_trial_ends_on_every_group_with_every_step_once(self):
        killed, _, output = KILL
        self.assertIsNotNone(killed, "the sweep ended before its promoted trial trained on merged groups:\n" + output)
        result, directory, seconds = RESULTS["true"]
        self.assertEqual(result.returncode, 0, result.describe())
        print(f"sweep with joins, killed once and resumed: {seconds:.1f} s")
        for line in (output + result.stdout).splitlines():
            if "handed over" in line or "joins trial" in line or "handover" in line:
                print(line)
        jobs = query(directory, "SELECT * FROM jobs ORDER BY job_id")
        handed_over = [job for job in jobs if job["status"] == "handed_over"]
        self.assertTrue(handed_over, jobs)
        self.assertEqual([job["job_id"] for job in jobs if job["status"] not in ("done", "handed_over")],
                         [killed["job_id"]], jobs)
        (top,) = query(directory, "SELECT * FROM trials WHERE rung = 1")
        self.assertEqual(top["status"], "completed")
        # The killed job recorded no steps; the job that redid it starts where it started (checked
        # in the next test), so the others follow each other without a gap or an overlap.
        mine = [job for job in jobs if job["trial_id"] == top["trial_id"] and job["job_id"] != killed["job_id"]]
        # A handed-over job's successor resumes from the checkpoint it wrote at its last step.
        previous_end = 0
        for before, job in zip([None] + mine, mine):
            self.assertEqual(job["start_step"], previous_end, job)
            if before is not None:
                self.assertTrue(job["resumed_from"], job)
            if before is not None and before["status"] == "handed_over":
                self.assertTrue(job["resumed_from"].endswith(f"step-{before['end_step']}.h5"), job)
                self.assertEqual(job["rung"], before["rung"], job)
            previous_end = job["end_step"]
        self.assertEqual(mine[-1]["status"], "done")
        self.assertEqual(mine[-1]["end_step"], top["steps"])
        # The final steps ran on every group, the reporting one first.
        last = mine[-1]
        groups = query(directory, "SELECT * FROM job_groups WHERE job_id = ? ORDER BY rowid", last["job_id"])
        self.assertEqual(sorted(row["ranks"] for row in groups), [str(rank) for rank in range(RANKS)], groups)
        self.assertEqual(groups[0]["worker"], last["worker"])
        self.assertEqual({row["start_step"] for row in groups}, {last["start_step"]})
        self.assertLess(last["start_step"], last["end_step"])
        self.assertIn(f"trial   {top['trial_id']} rung 1 handed over after step {last['start_step']}",
                      result.stdout)
        self.assertRegex(result.stdout, r"joins trial \d+ on worker \d")
        # Each handover says what the rest is expected to take; once a merged job has ended, at
        # what share of its groups' summed speed merged jobs went.
        for line in (output + result.stdout).splitlines():
            if "handed over after step" in line:
                self.assertRegex(line, r"same global batch, about \d+ s"
                                 r"(, at \d+% of their summed speed as merged jobs so far)?( \||$)")
        # Every step once, with the handovers in the metrics where they happened.
        events = e2e.read_metrics(top["run_dir"])
        steps = [event["step"] for event in sweep.step_events(top["run_dir"])]
        self.assertEqual(steps, list(range(1, top["steps"] + 1)))
        handovers = [event["step"] for event in events if event["event"] == "handover"]
        self.assertEqual(handovers, [job["end_step"] for job in mine if job["status"] == "handed_over"])
        # Within a rung a trial's groups only grow: the successor of a handed-over job keeps them all.
        by_trial = {}
        for job in jobs:
            by_trial.setdefault(job["trial_id"], []).append(job)
        for trial_jobs in by_trial.values():
            for before, after in zip(trial_jobs, trial_jobs[1:]):
                if before["status"] != "handed_over":
                    continue
                # The successor (the killed job too) starts at the handover's step on all its groups.
                groups = query(directory, "SELECT start_step FROM job_groups WHERE job_id = ?", after["job_id"])
                self.assertEqual({row["start_step"] for row in groups}, {before["end_step"]}, after)
                if after["job_id"] != killed["job_id"]:
                    self.assertEqual(after["start_step"], before["end_step"], after)
                self.assertEqual(after["worker"], before["worker"], after)
                self.assertLess(self.workers_of(directory, before), self.workers_of(directory, after),
                                (before, after))
        summary = e2e.read_summary(top["run_dir"])
        self.assertEqual(summary["elastic"]["world_size"], RANKS, summary["elastic"])
        self.assertEqual(summary["elastic"]["global_batch"], BATCH, summary["elastic"])
        # The handover checkpoint is the one the job resumed from, written by one rank.
        with e2e.h5py.File(last["resumed_from"], "r") as checkpoint:
            self.assertEqual(int(checkpoint.attrs["step"]), last["start_step"])
        # Both groups count the merged job as busy time.
        workers = query(directory, "SELECT * FROM workers ORDER BY worker")
        self.assertEqual(len(workers), RANKS)
        for worker in workers:
            self.assertGreaterEqual(worker["busy_seconds"], last["wall_seconds"], worker)
        self.check_against_the_straight_run(directory, top, mine)

    @staticmethod
    def workers_of(directory, job):
        rows = query(directory, "SELECT worker FROM job_groups WHERE job_id = ?", job["job_id"])
        return {row["worker"] for row in rows} or {job["worker"]}

    def check_against_the_straight_run(self, directory, top, mine):
        config = sweep.write_text(os.path.join(WORK, "trial.yaml"), top["config"])
        run_dir = os.path.join(WORK, "straight")
        result = e2e.phalanx("train", config, "--run-dir", run_dir, "--set", "train.epochs=2",
                             "--set", f"train.max_steps={top['steps']}", timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())
        # Bitwise while the trial ran on one rank, as the straight run does.
        one_rank_until = min(job["end_step"] for job in mine if job["status"] == "handed_over")
        largest = sweep.compare_with_straight_run(self, top["run_dir"], run_dir, one_rank_until, RELATIVE_TOLERANCE)
        ours = flat_arrays(os.path.join(top["run_dir"], "checkpoints", "latest.h5"))
        theirs = flat_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"))
        self.assertTrue(theirs)
        self.assertEqual(sorted(ours), sorted(theirs))
        worst = 0.0
        for name, value in theirs.items():
            scale = float(np.abs(value).max()) or 1.0
            difference = float(np.abs(ours[name] - value).max())
            self.assertLessEqual(difference, RELATIVE_TOLERANCE * scale, name)
            worst = max(worst, difference / scale)
        print(f"trial {top['trial_id']}: largest relative loss difference after the handover {largest:.2e}, "
              f"final weights and momentum within {worst:.2e} of their largest magnitude")
        self.assertAlmostEqual(top["metric"], e2e.read_summary(run_dir)["test_accuracy"], delta=0.01)

    def test_a_killed_merged_job_resumes_from_its_handover_checkpoint(self):
        killed, logged, output = KILL
        self.assertIsNotNone(killed, "the sweep ended before its promoted trial trained on merged groups:\n" + output)
        result, directory, _ = RESULTS["true"]
        self.assertEqual(result.returncode, 0, result.describe())
        # Only the merged job was in flight; the job it continued is not run again.
        self.assertIn(", 1 interrupted jobs requeued", result.stdout)
        jobs = query(directory, "SELECT * FROM jobs WHERE trial_id = ? ORDER BY job_id", killed["trial_id"])
        index = [job["job_id"] for job in jobs].index(killed["job_id"])
        self.assertEqual(jobs[index]["status"], "interrupted")
        before, redo = jobs[index - 1], jobs[index + 1]
        self.assertEqual(before["status"], "handed_over", before)
        self.assertEqual(before["end_step"], killed["merged_at"], before)
        # The redo: the same rung from the handover's checkpoint, the newest one (every_steps: 0), so
        # the steps the killed job had trained past it are trained again.
        self.assertEqual(redo["rung"], killed["rung"], redo)
        self.assertEqual(redo["start_step"], killed["merged_at"], redo)
        self.assertTrue(redo["resumed_from"].endswith(f"/step-{killed['merged_at']}.h5"), redo)
        self.assertGreater(logged, killed["merged_at"])
        print(f"trial {killed['trial_id']}: killed on merged groups at step {logged} (handed over at step "
              f"{killed['merged_at']}); resumed from step {redo['start_step']}, "
              f"{logged - redo['start_step']} logged step(s) dropped and trained again")

    def test_without_joins_one_group_finishes_alone(self):
        result, directory, seconds = RESULTS["false"]
        self.assertEqual(result.returncode, 0, result.describe())
        print(f"sweep without joins: {seconds:.1f} s")
        jobs = query(directory, "SELECT * FROM jobs ORDER BY job_id")
        self.assertEqual({job["status"] for job in jobs}, {"done"})
        self.assertFalse(query(directory, "SELECT * FROM job_groups"))
        self.assertNotIn("handed over", result.stdout)
        self.assertIsNone(re.search(r"joins trial", result.stdout))


if __name__ == "__main__":
    e2e.main()
