"""End-to-end: `phalanx sweep` with `scheduler: pbt` through mpirun on a Fashion-MNIST subset
(docs/SWEEPS.md, "Population-based training").

A 3-rank CPU sweep with `cpu_ranks_per_trial: [1, 2]` (groups {0} and {1, 2}) trains a population
of four trials in intervals of one epoch up to three. Checked against sweep.db:
- every trial reaches budget.max, each interval trained once, from where its previous one ended;
- the lineage: each (trial, interval) has its row and metric; a trial that exploited copied a
  trial that was in the top quantile of the results its interval had when it decided, took the
  donor's batch size and seed (they fix the data plan) and explored only the keys that may change;
  the kept checkpoint it copied exists, unchanged, at the donor's step, and its next job resumed
  from the copy at that step;
- `phalanx report` on the sweep folder draws the population's metric over time by lineage;
- bad pbt: values exit 2 naming the key;
- a SIGKILL mid-sweep and --resume: no (trial, interval) lost or trained twice.
"""

import json
import math
import os
import time
import unittest

import e2e_common as e2e
import sweep_common as sweep
from e2e_common import h5py
from sweep_common import query

TRAIN, TEST = 1000, 300
TRIALS = 4
INTERVALS = 3
SWEEP_TEXT = """name: e2e_pbt
seed: {seed}
config: base.yaml
search: random
scheduler: pbt
trials: {trials}
metric: test_accuracy
budget: {{unit: epochs, max: 3}}
pbt: {{interval: 1, quantile: 0.5, perturbation: [0.5, 2.0], resample_probability: 0.25}}
workers:
  cpu_ranks_per_trial: [1, 2]
  join_running: false
space:
  optimizer.learning_rate: {{type: loguniform, low: 0.00005, high: 0.02}}
  optimizer.weight_decay: {{type: uniform, low: 0.0, high: 0.001}}
  train.batch_size: {{type: choice, values: [32, 64]}}
"""
MUTABLE = {"optimizer.learning_rate", "optimizer.weight_decay"}


def setUpModule():
    global WORK, DATA, SWEEP, DIRECTORY, RESULT
    WORK, DATA = sweep.set_up("sweep_pbt", TRAIN, TEST, name="pbt-base", every_steps=5, keep=2,
                              log_every_steps=1000)
    SWEEP = sweep.write_text(os.path.join(WORK, "pbt.yaml"), SWEEP_TEXT.format(seed=3, trials=TRIALS))
    DIRECTORY = os.path.join(WORK, "population")
    RESULT = e2e.mpirun(3, "sweep", SWEEP, "--sweep-dir", DIRECTORY, timeout=400)


class PbtSweep(unittest.TestCase):
    def check_population(self, directory):
        trials = query(directory, "SELECT * FROM trials ORDER BY trial_id")
        self.assertEqual([row["trial_id"] for row in trials], list(range(TRIALS)))
        for row in trials:
            self.assertEqual(row["status"], "completed", row)
            self.assertEqual(row["rung"], INTERVALS - 1, row)
            self.assertAlmostEqual(row["budget"], 3.0)
        results = query(directory, "SELECT * FROM rung_results ORDER BY trial_id, rung")
        self.assertEqual([(row["trial_id"], row["rung"]) for row in results],
                         [(trial, interval) for trial in range(TRIALS) for interval in range(INTERVALS)])
        done = query(directory, "SELECT * FROM jobs WHERE status = 'done' ORDER BY job_id")
        # Exactly one finished job per (trial, interval): nothing lost, nothing trained twice.
        self.assertEqual(sorted((job["trial_id"], job["rung"]) for job in done),
                         [(row["trial_id"], row["rung"]) for row in results])
        self.assertFalse(query(directory, "SELECT * FROM jobs WHERE status = 'running'"))
        lineage = query(directory, "SELECT * FROM pbt_lineage ORDER BY trial_id, interval")
        self.assertEqual([(row["trial_id"], row["interval"]) for row in lineage],
                         [(row["trial_id"], row["rung"]) for row in results])
        step = {(row["trial_id"], row["interval"]): row for row in lineage}
        result = {(row["trial_id"], row["rung"]): row for row in results}
        job = {(row["trial_id"], row["rung"]): row for row in done}
        exploits = 0
        for row in lineage:
            key = (row["trial_id"], row["interval"])
            self.assertAlmostEqual(row["metric"], result[key]["metric"], places=12)
            self.assertAlmostEqual(row["budget"], row["interval"] + 1.0)
            parameters = json.loads(row["parameters"])
            # An interval trains one more epoch of the global batch its checkpoint was written with
            # (the group that first ran the trial, or its donor, set it): as many steps as each before.
            if row["interval"] > 0:
                before = (row["parent_trial"], row["parent_interval"]) if row["parent_trial"] is not None \
                    else (row["trial_id"], row["interval"] - 1)
                start = result[before]["steps"]
                self.assertEqual(result[key]["steps"], start * (row["interval"] + 1) // row["interval"], row)
                # From where that interval ended (or, redone after a kill, from a checkpoint past it).
                self.assertGreaterEqual(job[key]["start_step"], start, job[key])
                self.assertTrue(job[key]["resumed_from"], job[key])
            if row["interval"] == 0:
                self.assertIsNone(row["parent_trial"])
                self.assertEqual(job[key]["start_step"], 0)
                continue
            previous = step[(row["trial_id"], row["interval"] - 1)]
            if row["parent_trial"] is None:
                # Continued itself, unchanged, from its own end of the previous interval.
                self.assertEqual(row["parameters"], previous["parameters"])
                self.assertEqual(row["seed"], previous["seed"])
                continue
            exploits += 1
            parent = (row["parent_trial"], row["parent_interval"])
            self.assertEqual(row["parent_interval"], row["interval"] - 1)
            self.assertNotEqual(row["parent_trial"], row["trial_id"])
            # The donor was in the top quantile, and the trial in the bottom, of the interval's
            # results (decided once the whole population had finished it).
            known = sorted((other for other in results if other["rung"] == row["parent_interval"]),
                           key=lambda other: (-other["metric"], other["trial_id"]))
            count = math.floor(len(known) * 0.5)
            self.assertGreater(count, 0)
            self.assertIn(row["parent_trial"], [other["trial_id"] for other in known[:count]], row)
            self.assertIn(row["trial_id"], [other["trial_id"] for other in known[-count:]], row)
            # The donor's fixed keys and seed; the others from its values, moved by a factor or drawn.
            donor = json.loads(step[parent]["parameters"])
            self.assertEqual(parameters["train.batch_size"], donor["train.batch_size"])
            self.assertEqual(row["seed"], step[parent]["seed"])
            ranges = {"optimizer.learning_rate": (0.00005, 0.02), "optimizer.weight_decay": (0.0, 0.001)}
            for name in MUTABLE:
                low, high = ranges[name]
                self.assertTrue(low <= parameters[name] <= high, (name, parameters[name]))
            # Explored: a value moves unless it was clipped back to the bound it stood at.
            self.assertTrue(any(parameters[name] != donor[name] or parameters[name] in ranges[name]
                                for name in MUTABLE), (parameters, donor))
            # The donor's kept checkpoint is intact at its step, and the trial resumed from a copy there.
            kept = os.path.join(directory, row["checkpoint"])
            with h5py.File(kept, "r") as checkpoint:
                self.assertEqual(int(checkpoint.attrs["step"]), result[parent]["steps"])
            if job[key]["start_step"] == result[parent]["steps"]:  # not redone after a kill
                self.assertTrue(job[key]["resumed_from"].endswith("checkpoints/latest.h5"), job[key])
        # Each trial's row holds what it trained its last interval with.
        for row in trials:
            last = step[(row["trial_id"], INTERVALS - 1)]
            self.assertEqual(json.loads(row["parameters"]), json.loads(last["parameters"]))
            self.assertEqual(row["seed"], last["seed"])
        return exploits

    def test_population_reaches_budget_max_with_a_consistent_lineage(self):
        self.assertEqual(RESULT.returncode, 0, RESULT.describe())
        exploits = self.check_population(DIRECTORY)
        self.assertGreater(exploits, 0, "no trial exploited another")

    def test_report_draws_the_lineage_chart(self):
        self.assertEqual(RESULT.returncode, 0, RESULT.describe())
        result = e2e.run_command([e2e.PHALANX, "report", DIRECTORY], timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())
        with open(os.path.join(DIRECTORY, "report.html")) as stream:
            page = stream.read()
        self.assertIn('id="pbt-lineage"', page)
        lineage = query(DIRECTORY, "SELECT * FROM pbt_lineage")
        # One mark per (trial, interval), one segment per step from its parent or its own previous interval.
        self.assertEqual(page.count('class="lineage-point"'), len(lineage))
        self.assertEqual(page.count('class="lineage-edge"'), len([row for row in lineage if row["interval"] > 0]))

    def test_bad_pbt_values_exit_2_naming_the_key(self):
        cases = {
            "pbt.quantile": ("quantile: 0.5", "quantile: 0.6"),
            "pbt.interval": ("interval: 1", "interval: 4"),
            "pbt.population": ("interval: 1,", "interval: 1, population: 1,"),
            "pbt.perturbation": ("perturbation: [0.5, 2.0]", "perturbation: []"),
            "pbt.resample_probability": ("resample_probability: 0.25", "resample_probability: 2"),
        }
        for key, (original, replacement) in cases.items():
            with self.subTest(key=key):
                text = SWEEP_TEXT.format(seed=3, trials=TRIALS).replace(original, replacement)
                self.assertIn(replacement, text)
                path = sweep.write_text(os.path.join(WORK, "bad.yaml"), text)
                result = e2e.run_command([e2e.PHALANX, "sweep", path, "--sweep-dir",
                                          os.path.join(WORK, "bad-" + key)], timeout=60)
                self.assertEqual(result.returncode, 2, result.describe())
                self.assertIn(key, result.stderr + result.stdout)

    def test_example_sweep_config_runs(self):
        path = os.path.join(e2e.SOURCE_DIR, "configs", "sweeps", "fmnist_pbt.yaml")
        directory = os.path.join(WORK, "example")
        result = e2e.mpirun(2, "sweep", path, "--sweep-dir", directory, "--set", f"config.data.path={DATA}",
                            "trials=4", "budget.max=0.6", "pbt.interval=0.2", "config.checkpoint.every_steps=0",
                            "config.device=cpu", timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("pbt scheduler (intervals:", result.stdout)
        lineage = query(directory, "SELECT * FROM pbt_lineage")
        self.assertEqual(len(lineage), 4 * 3)
        # Four results per interval, floor(4 * 0.25) = 1: one trial exploits at each decision.
        self.assertEqual(len([row for row in lineage if row["parent_trial"] is not None]), 2)
        self.assertTrue(os.path.exists(os.path.join(directory, "report.html")))

    def test_kill_mid_sweep_and_resume(self):
        directory = os.path.join(WORK, "killed")
        process = sweep.start_sweep(3, SWEEP, directory)
        try:
            deadline = time.monotonic() + 300
            killed_at = None
            while time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.5)
                if not os.path.exists(os.path.join(directory, "sweep.db")):
                    continue
                try:
                    steps = query(directory, "SELECT COUNT(*) AS n FROM pbt_lineage WHERE interval = 1")[0]["n"]
                except Exception:
                    continue
                if steps >= 2:
                    killed_at = steps
                    break
        finally:
            output = sweep.kill_sweep(process)
        self.assertIsNotNone(killed_at, "the sweep ended before interval 1 began:\n" + output)
        sweep.wait_for_lock(directory)
        result = e2e.mpirun(3, "sweep", SWEEP, "--sweep-dir", directory, "--resume", timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        self.check_population(directory)


if __name__ == "__main__":
    e2e.main()
