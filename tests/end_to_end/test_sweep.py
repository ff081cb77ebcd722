"""End-to-end: `phalanx sweep` through mpirun on a Fashion-MNIST subset (docs/SWEEPS.md).

- A 4-rank ASHA sweep finishes; the database is consistent (one done job per rung result, the
  promotion rule holds at the time of every promotion, step counts match the budgets and the
  checkpoints), results.csv equals the database, best/ and report.html are there.
- SIGKILL of the whole mpirun mid-sweep (mpirun and every rank: the ranks are not in mpirun's
  process group), then --resume: every trial completes exactly once, interrupted jobs resume from
  their checkpoints (step counts), and every (trial, rung) metric equals the uninterrupted
  sweep's (trials are deterministic wherever they run).
- SIGUSR1 to mpirun mid-sweep: the running trials stop with checkpoints, exit status 75;
  --resume continues each interrupted job from its stop step and ends with the reference's results.
- Heterogeneous ranks (2 threads vs 1): the dispatch rule's recorded estimates obey the rule.
- Bad sweep files and bad --resume use exit with status 2 and one message naming the key.
- configs/sweeps/fmnist_asha.yaml runs (tiny, via --set).

Idle groups joining running trials (workers.join_running) are off in these sweeps for what the
kill and signal cases compare, not for a fault of kills with joins: they check every (trial, rung)
metric against the reference sweep's exactly, and (signal) that the done job of each interrupted
rung starts at the step the stop left it at. With joins, a trial that ran part of a rung on
merged ranks matches its one-group run within float summation order only (a prediction near a tie
can flip), at moments that depend on timing in both sweeps, and a requeued job can itself be
handed over (its rung then ends in a done job starting at the handover's step).
test_sweep_idle_tail.py tests joins, and a kill and --resume of a trial on merged groups.
"""

import csv
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import unittest

import e2e_common as e2e
import sweep_common as sweep
from e2e_common import h5py
from sweep_common import query

TRAIN, TEST = 2000, 500
TRIALS = 9
ETA = 3
SWEEP_TEXT = """name: e2e_sweep
seed: 5
config: base.yaml
search: random
scheduler: asha
trials: {trials}
metric: test_accuracy
budget: {{unit: epochs, min: 1, max: 3, eta: 3}}
workers: {{join_running: false}}
space:
  optimizer.learning_rate: {{type: loguniform, low: 0.0005, high: 0.005}}
  train.batch_size: {{type: choice, values: [64, 128]}}
"""


def setUpModule():
    global WORK, DATA, SWEEP, REFERENCE, REFERENCE_RESULT
    WORK, DATA = sweep.set_up("sweep", TRAIN, TEST, name="sweep-base", every_steps=5, keep=2,
                              log_every_steps=1000)
    SWEEP = write_sweep("sweep.yaml")
    REFERENCE = os.path.join(WORK, "reference")
    REFERENCE_RESULT = e2e.mpirun(4, "sweep", SWEEP, "--sweep-dir", REFERENCE, timeout=400)


def write_sweep(name, trials=TRIALS, text=None):
    return sweep.write_text(os.path.join(WORK, name), text if text is not None else SWEEP_TEXT.format(trials=trials))


def mid_rung_checkpoint(directory):
    """True when a running job's trial has a checkpoint past the start of the rung it trains."""
    for job in query(directory, "SELECT trial_id, rung FROM jobs WHERE status = 'running'"):
        earlier = query(directory, "SELECT steps FROM rung_results WHERE trial_id = ? AND rung = ?",
                        job["trial_id"], job["rung"] - 1)
        rung_start = earlier[0]["steps"] if earlier else 0
        folder = os.path.join(directory, "trials", f"{job['trial_id']:05d}", "checkpoints")
        names = os.listdir(folder) if os.path.isdir(folder) else []
        steps = [int(name[5:-3]) for name in names if name.startswith("step-") and name.endswith(".h5")]
        if any(step > rung_start for step in steps):
            return True
    return False


def steps_per_epoch(batch_size):
    return TRAIN // batch_size


class SweepChecks:
    """Database invariants every finished sweep must satisfy."""

    def check_finished_sweep(self, directory, trials=TRIALS, first_rungs=None):
        """`first_rungs`: each trial's bracket (asha.brackets), where not all start at rung 0."""
        first_rungs = first_rungs or [0] * trials
        rows = query(directory, "SELECT * FROM trials ORDER BY trial_id")
        self.assertEqual([row["trial_id"] for row in rows], list(range(trials)))
        for row in rows:
            self.assertIn(row["status"], ("completed", "stopped"), row)
        self.assertTrue(any(row["status"] == "completed" for row in rows), "no trial reached the top rung")
        results = query(directory, "SELECT * FROM rung_results ORDER BY trial_id, rung")
        done = query(directory, "SELECT * FROM jobs WHERE status = 'done' ORDER BY job_id")
        # Exactly one finished job per rung result: nothing run twice, nothing lost.
        self.assertEqual(sorted((job["trial_id"], job["rung"]) for job in done),
                         [(result["trial_id"], result["rung"]) for result in results])
        self.assertFalse(query(directory, "SELECT * FROM jobs WHERE status = 'running'"))
        for row in rows:
            params = eval_json(row["parameters"])
            per_epoch = steps_per_epoch(params["train.batch_size"])
            mine = [result for result in results if result["trial_id"] == row["trial_id"]]
            first_rung = first_rungs[row["trial_id"]]
            self.assertEqual([result["rung"] for result in mine], list(range(first_rung, row["rung"] + 1)))
            for result in mine:
                self.assertEqual(result["steps"], round(result["budget"] * per_epoch), result)
            self.assertEqual(row["steps"], mine[-1]["steps"])
            self.assertAlmostEqual(row["metric"], mine[-1]["metric"])
            # Each rung continues from where the previous one (or an interrupted attempt) stopped.
            jobs = [job for job in done if job["trial_id"] == row["trial_id"]]
            jobs.sort(key=lambda job: job["rung"])
            previous_end = 0
            for job in jobs:
                self.assertGreaterEqual(job["start_step"], previous_end, job)
                if job["end_step"] == job["start_step"]:
                    # Killed after its rung's last checkpoint but before the result was committed:
                    # the requeued job resumes at the rung's end and only evaluates.
                    self.assertTrue(job["resumed_from"], f"a job that trained nothing did not resume: {job}")
                    self.assertEqual(job["end_step"], round(job["budget"] * per_epoch), job)
                else:
                    self.assertGreater(job["end_step"], job["start_step"], job)
                if job["rung"] > first_rung:
                    self.assertTrue(job["resumed_from"], f"promoted job started over: {job}")
                elif job["start_step"] == 0:
                    self.assertFalse(job["resumed_from"], f"a trial's first job resumed: {job}")
                previous_end = job["end_step"]
            with h5py.File(os.path.join(row["run_dir"], "checkpoints", "latest.h5"), "r") as checkpoint:
                self.assertEqual(int(checkpoint.attrs["step"]), row["steps"])
            epochs = query(directory, "SELECT epoch FROM epoch_metrics WHERE trial_id = ? ORDER BY epoch",
                           row["trial_id"])
            self.assertLessEqual(len(epochs), round(mine[-1]["budget"]))
        # results.csv is the trials table.
        with open(os.path.join(directory, "results.csv")) as stream:
            table = list(csv.DictReader(stream))
        self.assertEqual([int(line["trial_id"]) for line in table], [row["trial_id"] for row in rows])
        for line, row in zip(table, rows):
            self.assertEqual(line["status"], row["status"])
            self.assertEqual(int(line["rung"]), row["rung"])
            self.assertAlmostEqual(float(line["metric"]), row["metric"], places=9)
        # best/ is the best trial at the highest rung.
        best = max(rows, key=lambda row: (row["rung"], row["metric"], -row["trial_id"]))
        best_trial = eval_json(read_text(os.path.join(directory, "best", "trial.json")))
        self.assertEqual(best_trial["trial_id"], best["trial_id"])
        with h5py.File(os.path.join(directory, "best", "checkpoint.h5"), "r") as checkpoint:
            self.assertEqual(int(checkpoint.attrs["step"]), best["steps"])
        with open(os.path.join(directory, "best", "config.yaml")) as stream:
            self.assertEqual(stream.read(), best["config"])
        return rows, results, done


def eval_json(text):
    return json.loads(text)


def read_text(path):
    with open(path) as stream:
        return stream.read()


def wait_for_promotion_past_a_checkpoint(process, directory, timeout=240):
    """True once a promoted trial is in flight and some job has passed a mid-rung checkpoint;
    False when the sweep ended (or the time ran out) first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
        if not os.path.exists(os.path.join(directory, "sweep.db")):
            continue
        try:
            running = query(directory, "SELECT * FROM jobs WHERE status = 'running' AND rung > 0")
        except sqlite3.OperationalError:
            continue
        if running and mid_rung_checkpoint(directory):
            return True
    return False


class SweepTest(unittest.TestCase, SweepChecks):

    def test_four_rank_sweep_is_consistent_and_follows_asha(self):
        self.assertEqual(REFERENCE_RESULT.returncode, 0, REFERENCE_RESULT.describe())
        print(f"\n4-rank sweep of {TRIALS} trials: {REFERENCE_RESULT.seconds:.1f} s", end=" ")
        self.assertIn("final top trials", REFERENCE_RESULT.stdout)
        self.assertIn("sweep done", REFERENCE_RESULT.stdout)
        self.assertNotIn("\x1b[", REFERENCE_RESULT.stdout)  # plain lines in a log
        rows, results, done = self.check_finished_sweep(REFERENCE)
        # Four worker groups, one CPU rank each, all of which trained.
        workers = query(REFERENCE, "SELECT * FROM workers ORDER BY worker")
        self.assertEqual([worker["ranks"] for worker in workers], ["0", "1", "2", "3"])
        self.assertTrue(all(worker["jobs"] > 0 and worker["speed"] > 0 for worker in workers), workers)
        # The promotion rule at the moment of each promotion: the trial was in the top
        # floor(n / eta) of the results its rung had recorded (ties to the lower trial id).
        jobs = query(REFERENCE, "SELECT * FROM jobs ORDER BY job_id")
        promotions = [job for job in jobs if job["rung"] > 0]
        self.assertTrue(promotions, "no promotion happened")
        for job in promotions:
            recorded = [result for result in results
                        if result["rung"] == job["rung"] - 1 and result["finished"] <= job["started"]]
            recorded.sort(key=lambda result: (-result["metric"], result["trial_id"]))
            top = [result["trial_id"] for result in recorded[:len(recorded) // ETA]]
            self.assertIn(job["trial_id"], top, f"{job} was not in the top 1/{ETA} of {recorded}")
        report = read_text(os.path.join(REFERENCE, "report.html"))
        self.assertEqual(report.count("<svg"), 4)
        for title in ("Optimisation history", "parallel coordinates", "Rung ladder", "busy"):
            self.assertIn(title, report)
        self.assertNotIn("<script", report)
        self.assertNotIn("https://", report)
        self.assertEqual(report.count("http://"), report.count('xmlns="http://www.w3.org/2000/svg"'))
        # `phalanx report DIR` rebuilds the sweep's page from the database alone.
        os.remove(os.path.join(REFERENCE, "report.html"))
        result = e2e.phalanx("report", REFERENCE, timeout=60)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertEqual(read_text(os.path.join(REFERENCE, "report.html")), report)
        # An empty sweep.db (SQLite reads it as a database without tables) and a definition that is
        # not JSON are input errors naming sweep.db (they were internal errors with exit 1).
        damaged = os.path.join(WORK, "damaged-report")
        shutil.rmtree(damaged, ignore_errors=True)
        os.makedirs(damaged)
        open(os.path.join(damaged, "sweep.db"), "w").close()
        result = e2e.phalanx("report", damaged, timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("sweep.db: not a phalanx sweep database (it has no table 'sweep')", result.stderr)
        shutil.copy(os.path.join(REFERENCE, "sweep.db"), os.path.join(damaged, "sweep.db"))
        with sqlite3.connect(os.path.join(damaged, "sweep.db")) as connection:
            connection.execute("UPDATE sweep SET value = '{bad' WHERE key = 'definition'")
        result = e2e.phalanx("report", damaged, timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("sweep.db: holds a value of another form than a phalanx sweep writes", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(damaged, "report.html")))

    def test_kill_mid_sweep_and_resume(self):
        self.assertEqual(REFERENCE_RESULT.returncode, 0, REFERENCE_RESULT.describe())
        directory = os.path.join(WORK, "killed")
        process = sweep.start_sweep(3, SWEEP, directory)
        # Kill while a promoted trial is in flight and some job has passed a mid-rung checkpoint.
        try:
            seen_promotion = wait_for_promotion_past_a_checkpoint(process, directory)
        finally:
            output = sweep.kill_sweep(process)
        self.assertTrue(seen_promotion, "the sweep ended before a promotion was in flight:\n" + output)
        sweep.wait_for_lock(directory)
        killed_running = query(directory, "SELECT * FROM jobs WHERE status = 'running'")
        self.assertTrue(killed_running, "the kill left no job in flight")
        before = query(directory, "SELECT COUNT(*) AS n FROM rung_results")[0]["n"]
        result = e2e.mpirun(3, "sweep", SWEEP, "--sweep-dir", directory, "--resume", timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("interrupted jobs requeued", result.stdout)
        rows, results, done = self.check_finished_sweep(directory)
        self.assertGreater(len(results), before)
        interrupted = query(directory, "SELECT * FROM jobs WHERE status = 'interrupted'")
        self.assertEqual(sorted(job["job_id"] for job in interrupted), sorted(job["job_id"] for job in killed_running))
        # Every interrupted job was redone once, from a checkpoint past the start of its rung when
        # the kill came after one (checkpoint.every_steps = 5).
        resumed_mid_rung = 0
        for job in interrupted:
            redo = [other for other in done if (other["trial_id"], other["rung"]) == (job["trial_id"], job["rung"])]
            self.assertEqual(len(redo), 1, job)
            earlier = [other["end_step"] for other in done
                       if other["trial_id"] == job["trial_id"] and other["rung"] == job["rung"] - 1]
            rung_start = earlier[0] if earlier else 0
            self.assertGreaterEqual(redo[0]["start_step"], rung_start)
            resumed_mid_rung += redo[0]["start_step"] > rung_start
        self.assertGreater(resumed_mid_rung, 0, "no interrupted job resumed from a mid-rung checkpoint")
        # Trials are deterministic wherever and however often they ran: every (trial, rung) both
        # sweeps reached has the same metric.
        reference = {(row["trial_id"], row["rung"]): row["metric"]
                     for row in query(REFERENCE, "SELECT * FROM rung_results")}
        common = [(row["trial_id"], row["rung"]) for row in results if (row["trial_id"], row["rung"]) in reference]
        self.assertGreaterEqual(len(common), TRIALS)
        for row in results:
            key = (row["trial_id"], row["rung"])
            if key in reference:
                self.assertEqual(row["metric"], reference[key], key)

    def test_signal_mid_sweep_stops_with_75_and_resumes(self):
        """SIGUSR1 to mpirun (what a preemption sends): no new jobs, every running trial stops
        after a step with a checkpoint, the jobs are recorded as interrupted, exit status 75;
        --resume continues each from its stop step, nothing lost or redone."""
        self.assertEqual(REFERENCE_RESULT.returncode, 0, REFERENCE_RESULT.describe())
        directory = os.path.join(WORK, "signalled")
        process = sweep.start_sweep(3, SWEEP, directory)
        # Signal while a promoted trial is in flight past a mid-rung checkpoint, as the kill test.
        try:
            ready = wait_for_promotion_past_a_checkpoint(process, directory)
            signalled = time.monotonic()
            process.send_signal(signal.SIGUSR1)  # to mpirun only: it forwards the signal to the ranks
            output = process.communicate(timeout=120)[0].decode(errors="replace")
            stop_seconds = time.monotonic() - signalled
        finally:
            if process.poll() is None:
                sweep.kill_sweep(process)
        self.assertTrue(ready, "the sweep ended before a promotion was in flight:\n" + output)
        self.assertEqual(process.returncode, 75, output)
        self.assertIn("sweep stopped by SIGUSR1", output)
        self.assertNotIn("sweep done", output)
        self.assertFalse(query(directory, "SELECT * FROM jobs WHERE status IN ('running', 'failed')"))
        interrupted = query(directory, "SELECT * FROM jobs WHERE status = 'interrupted' ORDER BY job_id")
        self.assertTrue(interrupted, output)
        # Each interrupted job trained at least one step and has its checkpoint at the step it
        # stopped after (a job in its rung's last step finishes instead).
        for job in interrupted:
            self.assertGreater(job["end_step"], job["start_step"], job)
            trial = query(directory, "SELECT * FROM trials WHERE trial_id = ?", job["trial_id"])[0]
            self.assertEqual(trial["status"], "paused", trial)
            checkpoint = os.path.join(trial["run_dir"], "checkpoints", f"step-{job['end_step']}.h5")
            self.assertTrue(os.path.isfile(checkpoint), checkpoint)
        self.assertFalse(os.path.exists(os.path.join(directory, "results.csv")))
        before = query(directory, "SELECT COUNT(*) AS n FROM rung_results")[0]["n"]

        result = e2e.mpirun(3, "sweep", SWEEP, "--sweep-dir", directory, "--resume", timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn(f"{len(interrupted)} interrupted jobs requeued", result.stdout)
        rows, results, done = self.check_finished_sweep(directory)
        self.assertGreater(len(results), before)
        # Each interrupted job ran again exactly once, from the step it stopped after: no step redone.
        for job in interrupted:
            redo = [other for other in done if (other["trial_id"], other["rung"]) == (job["trial_id"], job["rung"])]
            self.assertEqual(len(redo), 1, job)
            self.assertEqual(redo[0]["start_step"], job["end_step"], (job, redo[0]))
        reference = {(row["trial_id"], row["rung"]): row["metric"]
                     for row in query(REFERENCE, "SELECT * FROM rung_results")}
        # Which trials ASHA promotes depends on the order results arrive (3 groups here, 4 in the
        # reference); every (trial, rung) both reached has the same metric.
        common = [row for row in results if (row["trial_id"], row["rung"]) in reference]
        self.assertGreaterEqual(len(common), TRIALS)
        for row in common:
            self.assertEqual(row["metric"], reference[(row["trial_id"], row["rung"])], row)
        print(f"\nsweep: SIGUSR1 -> exit 75 in {stop_seconds:.2f} s, {len(interrupted)} trial(s) interrupted, "
              "0 steps redone on --resume", end=" ")

    def test_heterogeneous_ranks_follow_the_dispatch_rule(self):
        directory = os.path.join(WORK, "heterogeneous")
        sweep_file = write_sweep("heterogeneous.yaml", trials=6)
        sweep = [e2e.PHALANX, "sweep", sweep_file, "--sweep-dir", directory]
        result = e2e.mpirun_per_rank([(1, ["env", "OMP_NUM_THREADS=2", *sweep]),
                                      (2, ["env", "OMP_NUM_THREADS=1", *sweep])], timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        self.check_finished_sweep(directory, trials=6)
        workers = query(directory, "SELECT * FROM workers ORDER BY worker")
        self.assertEqual([worker["threads"] for worker in workers], [2, 1, 1])
        self.assertTrue(all(worker["speed"] > 0 for worker in workers), workers)
        jobs = query(directory, "SELECT * FROM jobs ORDER BY job_id")
        # Rung-0 work goes to every group; a promotion is taken by a group only when no busy faster
        # group was expected to finish it sooner by at least a tenth of its time here (docs/SWEEPS.md:
        # waiting is a bet on noisy estimates, made only when it saves that much).
        self.assertEqual({job["worker"] for job in jobs if job["rung"] == 0}, {0, 1, 2})
        for job in jobs:
            self.assertGreater(job["estimate_seconds"], 0, job)
            if job["rung"] > 0 and job["faster_group_seconds"] is not None:
                self.assertGreaterEqual(job["faster_group_seconds"], 0.9 * job["estimate_seconds"], job)

    def test_bad_sweep_files_exit_2_naming_the_key(self):
        cases = {
            "unknown space key": (("optimizer.learning_rate:", "optimizer.learnig_rate:"),
                                  "did you mean 'optimizer.learning_rate'"),
            "empty choice": (("values: [64, 128]", "values: []"), "space.train.batch_size.values"),
            "min above max": (("min: 1, max: 3", "min: 4, max: 3"), "budget.min"),
            "eta below 2": (("eta: 3", "eta: 1"), "budget.eta"),
            # an int of epochs per trial: 1e12 overflowed it, and every rung "trained" in no time
            "max past any training": (("min: 1, max: 3", "min: 1, max: 1e12"), "budget.max must be in (0, 1.0e+06]"),
            # keys the sweep sets per trial: refused rather than replaced silently
            "max_steps the budget sets": (("scheduler: asha\n", "scheduler: asha\nset: [train.max_steps=5]\n"),
                                          "set: 'train.max_steps=5': the budget sets each trial's train.max_steps"),
            "max_steps in the base config": (("config: base.yaml", "config: capped.yaml"),
                                             "capped.yaml: train.max_steps: the budget sets"),
            "epochs searched": (("space:\n", "space:\n  train.epochs: {type: choice, values: [1, 2]}\n"),
                                "space.train.epochs: cannot be searched"),
            "a list as a space key": (("space:\n", "space:\n  [a, b]: {type: choice, values: [1]}\n"),
                                      "space: keys must be plain words"),
            "more brackets than rungs": (("scheduler: asha\n", "scheduler: asha\nasha: {brackets: 3}\n"),
                                         "asha.brackets"),
        }
        capped = e2e.base_config(DATA, name="sweep-base", max_steps=40)
        e2e.write_config(os.path.join(WORK, "capped.yaml"), capped)
        for name, ((original, replacement), fragment) in cases.items():
            with self.subTest(case=name):
                text = SWEEP_TEXT.format(trials=TRIALS).replace(original, replacement)
                sweep.check_bad_sweep_file(self, WORK, text, fragment,
                                           os.path.join(WORK, "bad-" + name.replace(" ", "-")))
        # --resume without a sweep, and a second start in a used directory.
        result = e2e.phalanx("sweep", SWEEP, "--sweep-dir", os.path.join(WORK, "nothing"), "--resume", timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("does not exist", result.stderr)
        self.assertEqual(REFERENCE_RESULT.returncode, 0, REFERENCE_RESULT.describe())
        result = e2e.phalanx("sweep", SWEEP, "--sweep-dir", REFERENCE, timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("--resume", result.stderr)
        # --resume with a changed search space names the difference.
        changed = write_sweep("changed.yaml", text=SWEEP_TEXT.format(trials=TRIALS).replace("0.005}", "0.006}"))
        result = e2e.phalanx("sweep", changed, "--sweep-dir", REFERENCE, "--resume", timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("the sweep it started with", result.stderr)
        # A changed base config names its line, not the two whole configs.
        result = e2e.phalanx("sweep", SWEEP, "--sweep-dir", REFERENCE, "--resume", "--set",
                             "config.train.log_every_steps=7", timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertRegex(result.stderr, r"the sweep it started with; its base config differs: line \d+ .*"
                                        r"log_every_steps: 7")
        self.assertLess(len(result.stderr), 1000, result.stderr)
        # A fresh sweep in a directory whose sweep.db was moved away: the old trials' checkpoints would
        # become the new trials' starting points.
        moved = os.path.join(WORK, "moved-db")
        shutil.rmtree(moved, ignore_errors=True)
        shutil.copytree(REFERENCE, moved)
        os.remove(os.path.join(moved, "sweep.db"))
        result = e2e.phalanx("sweep", SWEEP, "--sweep-dir", moved, timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn(f"{moved}/trials: holds an earlier sweep's trials", result.stderr)
        # A failure every trial shares (the base config's data is missing): the sweep runs to its end,
        # every trial failed and none gave a result; that is bad input, exit 2 with the first failure.
        missing = os.path.join(WORK, "no-such-data.h5")
        result = e2e.phalanx("sweep", SWEEP, "--sweep-dir", os.path.join(WORK, "all-failed"), "--set",
                             f"config.data.path={missing}", timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("every trial of the sweep failed and none gave a result", result.stderr)
        self.assertIn(f"The first: trial 0: rank 0: {missing}: no such file", result.stderr)
        # A sweep.db that is not a database, and one with trials but no definition: exit 2 naming it.
        garbage = os.path.join(WORK, "garbage-db")
        os.makedirs(garbage, exist_ok=True)
        sweep.write_text(os.path.join(garbage, "sweep.db"), "not a database\n" * 100)
        for args in ((), ("--resume",)):
            result = e2e.phalanx("sweep", SWEEP, "--sweep-dir", garbage, *args, timeout=60)
            self.assertEqual(result.returncode, 2, result.describe())
            self.assertIn("sweep.db: is not a sweep database", result.stderr)
        undefined = os.path.join(WORK, "undefined-db")
        shutil.rmtree(undefined, ignore_errors=True)
        shutil.copytree(REFERENCE, undefined)
        with sqlite3.connect(os.path.join(undefined, "sweep.db")) as connection:
            connection.execute("DELETE FROM sweep WHERE key = 'definition'")
        result = e2e.phalanx("sweep", SWEEP, "--sweep-dir", undefined, "--resume", timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("has trials but no sweep definition", result.stderr)

    def test_brackets_start_trials_at_their_rung_and_promote_within_them(self):
        # asha.brackets 2 on rungs of 1 and 3 epochs: Hyperband's shares 3 and 2 deal trials 0-7 to
        # brackets 0 1 0 1 0 0 1 0; bracket 1 trains its trials straight to 3 epochs.
        first_rungs = [0, 1, 0, 1, 0, 0, 1, 0]
        directory = os.path.join(WORK, "brackets")
        path = write_sweep("brackets.yaml", text=SWEEP_TEXT.format(trials=8) + "asha: {brackets: 2}\n")
        result = e2e.mpirun(2, "sweep", path, "--sweep-dir", directory, timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("promotion rule, 2 brackets", result.stdout)
        rows, results, done = self.check_finished_sweep(directory, 8, first_rungs)
        for row in rows:
            if first_rungs[row["trial_id"]] == 1:
                self.assertEqual(row["status"], "completed", row)  # no rung below to stop at
        # Bracket 0's promotions, each at the moment it was made: in the top floor(n / eta) of the
        # rung-0 results of bracket 0 (all of rung 0's: no other bracket has any there).
        jobs = query(directory, "SELECT * FROM jobs ORDER BY job_id")
        promotions = [job for job in jobs if job["rung"] > first_rungs[job["trial_id"]]]
        self.assertTrue(promotions, "bracket 0 promoted nobody")
        for job in promotions:
            recorded = [result for result in results if result["rung"] == 0 and result["finished"] <= job["started"]]
            recorded.sort(key=lambda result: (-result["metric"], result["trial_id"]))
            self.assertIn(job["trial_id"], [result["trial_id"] for result in recorded[:len(recorded) // ETA]])
            self.assertEqual(first_rungs[job["trial_id"]], 0, job)

    def test_example_sweep_config_runs(self):
        path = os.path.join(e2e.SOURCE_DIR, "configs", "sweeps", "fmnist_asha.yaml")
        directory = os.path.join(WORK, "example")
        # As on a terminal: the leaderboard is redrawn in place below the event lines.
        os.environ["PHALANX_PROGRESS"] = "bar"
        try:
            result = e2e.mpirun(2, "sweep", path, "--sweep-dir", directory, "--set", f"config.data.path={DATA}",
                                "trials=3", "budget.min=0.2", "budget.max=0.6", "config.checkpoint.every_steps=0",
                                "config.device=cpu", timeout=300)
        finally:
            del os.environ["PHALANX_PROGRESS"]
        print(f"\nconfigs/sweeps/fmnist_asha.yaml (3 tiny trials): {result.seconds:.1f} s", end=" ")
        self.assertEqual(result.returncode, 0, result.describe())
        rows = query(directory, "SELECT * FROM trials")
        self.assertEqual(len(rows), 3)
        self.assertEqual(len(query(directory, "SELECT * FROM rung_results WHERE rung = 1")), 1)
        self.assertTrue(os.path.exists(os.path.join(directory, "report.html")))
        self.assertIn("\x1b[", result.stdout)
        self.assertIn("current top trials", result.stdout)

    def test_report_renders_one_mark_per_result_and_job_in_headless_chromium(self):
        import shutil
        from html.parser import HTMLParser
        self.assertEqual(REFERENCE_RESULT.returncode, 0, REFERENCE_RESULT.describe())
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            self.skipTest("chromium is not installed (Debian package chromium)")
        page = "file://" + os.path.join(REFERENCE, "report.html")
        browser = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                   "--user-data-dir=" + os.path.join(WORK, "chromium-profile")]
        dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])

        class Elements(HTMLParser):
            """Start tags with their attributes and the id of the figure they are in."""
            def __init__(self):
                super().__init__()
                self.found, self.figure = [], None

            def handle_starttag(self, tag, attributes):
                attributes = dict(attributes)
                if tag == "figure":
                    self.figure = attributes.get("id")
                self.found.append((self.figure, tag, attributes))

            def handle_endtag(self, tag):
                if tag == "figure":
                    self.figure = None
        parser = Elements()
        parser.feed(dom.stdout)

        def elements(figure, tag, css_class):
            return [attributes for inside, name, attributes in parser.found
                    if inside == figure and name == tag and attributes.get("class") == css_class]
        results = query(REFERENCE, "SELECT * FROM rung_results")
        trials = query(REFERENCE, "SELECT * FROM trials WHERE metric IS NOT NULL")
        jobs = query(REFERENCE, "SELECT * FROM jobs WHERE finished IS NOT NULL")
        rungs = sorted({result["rung"] for result in results})
        self.assertGreaterEqual(len(rungs), 2)  # promotions happened (checked above)
        for figure in ("history-chart", "ladder-chart"):
            # One point per rung result, grouped by rung, with a legend entry per rung.
            points = elements(figure, "circle", "point")
            self.assertEqual(len(points), len(results), figure)
            groups = {group["data-series"].split(" (")[0]: int(group["data-points"])
                      for group in elements(figure, "g", "series")}
            self.assertEqual(groups, {f"rung {rung}": sum(1 for result in results if result["rung"] == rung)
                                      for rung in rungs}, figure)
            self.assertEqual(len(elements(figure, "g", "legend")), len(rungs) + (figure == "history-chart"))
        best = [line for line in elements("history-chart", "polyline", "series")
                if line["data-series"] == "best so far"]
        self.assertEqual(len(best), 1)
        # The ladder joins the rungs of every promoted trial.
        promoted = {result["trial_id"] for result in results if result["rung"] > 0}
        self.assertEqual(len(elements("ladder-chart", "polyline", "series")), len(promoted))
        # One line per finished trial across the hyperparameter axes and the metric.
        profiles = elements("parameters-chart", "polyline", "profile")
        self.assertEqual(len(profiles), len(trials))
        self.assertTrue(all(int(profile["data-points"]) == 3 for profile in profiles), profiles)
        self.assertEqual([axis["data-dimension"] for axis in elements("parameters-chart", "g", "dimension")],
                         ["optimizer.learning_rate", "train.batch_size", "test_accuracy"])
        # One row per worker group, one bar per job it ran.
        rows = elements("workers-chart", "g", "row")
        self.assertEqual(len(rows), 4)
        self.assertEqual(len(elements("workers-chart", "rect", "interval")), len(jobs))
        table_rows = [tag for inside, tag, attributes in parser.found if tag == "tr"]
        self.assertEqual(len(table_rows), 1 + min(10, len(trials)))

        screenshot = os.path.join(WORK, "sweep-report.png")
        shot = subprocess.run([*browser, "--screenshot=" + screenshot, "--window-size=1000,2400", page],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(shot.returncode, 0, shot.stderr[-2000:])
        from PIL import Image
        counts = {colour: count for count, colour in Image.open(screenshot).convert("RGB").getcolors(1 << 20)}
        # Rungs 0 and 1 (palette colours 1 and 2) are drawn: points and timeline bars cover many pixels.
        for expected in ((0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e)):
            near = sum(count for colour, count in counts.items()
                       if all(abs(a - b) <= 8 for a, b in zip(colour, expected)))
            self.assertGreater(near, 500, f"colour {expected} barely on the screenshot")


if __name__ == "__main__":
    e2e.main()
