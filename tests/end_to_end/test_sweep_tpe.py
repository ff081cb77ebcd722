"""End-to-end: `phalanx sweep` with `search: tpe` and `scheduler: asha` on a Fashion-MNIST subset
(docs/SWEEPS.md, "TPE search").

- A 3-rank TPE+ASHA sweep completes every trial once; its first trials are random search's, the
  later ones are fitted on the highest rung with enough results, and the proposals table says on
  which: every trial it names had its result on that rung before the proposal was made.
- On one worker group the order of results is fixed, so two sweeps propose the same trials: a
  sweep SIGKILLed mid-way (mpirun and every rank) and resumed proposes exactly the trials of an
  uninterrupted one, with the same results and the same trials sent on from each rung, under
  either ASHA rule; a --resume of a finished sweep proposes nothing new.
- With `asha: {rule: stopping}` each rung-0 result goes on exactly when it was in the top third of
  the results its rung held as it arrived (replayed from the database in the order written).
- With `scheduler: full` (no early stopping) the model is fitted on the final results.
- A bad TPE setting exits with status 2 naming the key.
"""

import json
import os
import sqlite3
import time
import unittest

import e2e_common as e2e
import sweep_common as sweep
from sweep_common import query

TRAIN, TEST = 1000, 300
TRIALS = 8
SWEEP_TEXT = """name: e2e_tpe
seed: 11
config: base.yaml
search: tpe
scheduler: asha
trials: {trials}
tpe: {{startup_trials: 3}}
metric: test_accuracy
budget: {{unit: epochs, min: 1, max: 3, eta: 3}}
workers: {{join_running: false}}
space:
  optimizer.learning_rate: {{type: loguniform, low: 0.0005, high: 0.01}}
  optimizer.weight_decay: {{type: uniform, low: 0, high: 0.001}}
  train.batch_size: {{type: choice, values: [32, 64]}}
"""


def setUpModule():
    global WORK, SWEEP
    WORK, _ = sweep.set_up("sweep_tpe", TRAIN, TEST, name="tpe-base", every_steps=5, keep=2, log_every_steps=1000)
    SWEEP = sweep.write_text(os.path.join(WORK, "sweep.yaml"), SWEEP_TEXT.format(trials=TRIALS))


def proposals(directory):
    return query(directory, "SELECT * FROM proposals ORDER BY trial_id")


def check_every_trial_once(test, directory):
    """Every trial ran each of its rungs once and ended completed or stopped; returns the trials."""
    rows = query(directory, "SELECT * FROM trials ORDER BY trial_id")
    test.assertEqual([row["trial_id"] for row in rows], list(range(TRIALS)))
    for row in rows:
        test.assertIn(row["status"], ("completed", "stopped"), row)
    test.assertTrue(any(row["status"] == "completed" for row in rows))
    results = query(directory, "SELECT trial_id, rung FROM rung_results ORDER BY trial_id, rung")
    done = query(directory, "SELECT trial_id, rung FROM jobs WHERE status = 'done'")
    test.assertEqual(sorted((job["trial_id"], job["rung"]) for job in done),
                     [(result["trial_id"], result["rung"]) for result in results])
    test.assertFalse(query(directory, "SELECT * FROM jobs WHERE status = 'running'"))
    return rows


def check_proposals(test, directory, rows, startup_trials=3):
    """The proposals table against the trials and the rung results it says it was fitted on."""
    recorded = proposals(directory)
    test.assertEqual([proposal["trial_id"] for proposal in recorded], list(range(TRIALS)))
    tpe = 0
    for proposal, row in zip(recorded, rows):
        values = json.loads(proposal["parameter_values"])
        test.assertEqual([key for key, _ in values],
                         ["optimizer.learning_rate", "optimizer.weight_decay", "train.batch_size"])
        # What the trial trained with is what was proposed.
        parameters = json.loads(row["parameters"])
        for key, text in values:
            test.assertAlmostEqual(float(text), float(parameters[key]), places=12)
        learning_rate, weight_decay, batch_size = (float(text) for _, text in values)
        test.assertTrue(0.0005 <= learning_rate <= 0.01, values)
        test.assertTrue(0 <= weight_decay <= 0.001, values)
        test.assertIn(values[2][1], ("32", "64"))
        fitted_on = json.loads(proposal["fitted_on"])
        if proposal["trial_id"] < startup_trials:
            test.assertEqual(proposal["method"], "random", proposal)
        if proposal["method"] == "random":
            test.assertEqual(fitted_on, [])
            test.assertIsNone(proposal["model_rung"])
            continue
        tpe += 1
        test.assertEqual(proposal["method"], "tpe")
        # Fitted on at least (3 parameters + 1) results of its rung, and on the trials that stopped
        # below it; each result recorded before the proposal (the trial's creation) by an earlier trial.
        at_rung = 0
        for trial in fitted_on:
            test.assertLess(trial, proposal["trial_id"])
            result = query(directory, "SELECT rung FROM rung_results WHERE trial_id = ? AND rung <= ? AND "
                           "finished <= ? ORDER BY rung DESC LIMIT 1", trial, proposal["model_rung"], row["created"])
            test.assertEqual(len(result), 1, (proposal, trial))
            at_rung += result[0]["rung"] == proposal["model_rung"]
        test.assertGreaterEqual(at_rung, 4, proposal)
    test.assertGreater(tpe, 0, "no trial was proposed by the model")
    return recorded


def wait_for_tpe_trial_running(process, directory, timeout=300):
    """True once a trial proposed by TPE has started and another job has passed a checkpoint (so
    that a kill leaves work to resume); False when the sweep ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
        if not os.path.exists(os.path.join(directory, "sweep.db")):
            continue
        try:
            started = query(directory, "SELECT COUNT(*) AS n FROM proposals WHERE method = 'tpe'")[0]["n"]
            running = query(directory, "SELECT COUNT(*) AS n FROM jobs WHERE status = 'running'")[0]["n"]
        except sqlite3.OperationalError:
            continue
        if started >= 1 and running >= 1:
            return True
    return False


class TpeSweepTest(unittest.TestCase):

    def test_tpe_asha_sweep_completes_every_trial_once(self):
        directory = os.path.join(WORK, "three_ranks")
        result = e2e.mpirun(3, "sweep", SWEEP, "--sweep-dir", directory, timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        rows = check_every_trial_once(self, directory)
        check_proposals(self, directory, rows)
        self.assertTrue(os.path.exists(os.path.join(directory, "best", "trial.json")))
        self.assertTrue(os.path.exists(os.path.join(directory, "report.html")))

    def test_one_group_sweep_is_reproduced_after_a_kill_and_resume(self):
        self.check_kill_and_resume("one_group")

    def test_the_stopping_rule_is_reproduced_after_a_kill_and_resume(self):
        # Its decisions depend on the order of the results: the resume replays them as written.
        self.check_kill_and_resume("stopping_one_group", "--set", "asha.rule=stopping")

    def check_kill_and_resume(self, name, *arguments):
        # One rank: one worker group, so results arrive in one order and proposals are fixed.
        reference = os.path.join(WORK, name)
        result = e2e.mpirun(1, "sweep", SWEEP, "--sweep-dir", reference, *arguments, timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        reference_rows = check_every_trial_once(self, reference)
        expected = check_proposals(self, reference, reference_rows)
        expected_results = query(reference, "SELECT trial_id, rung, metric FROM rung_results ORDER BY trial_id, rung")

        # A finished sweep resumed: nothing proposed again, nothing changed.
        result = e2e.mpirun(1, "sweep", SWEEP, "--sweep-dir", reference, "--resume", *arguments, timeout=200)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertEqual(proposals(reference), expected)
        self.assertEqual(query(reference, "SELECT trial_id, rung, metric FROM rung_results ORDER BY trial_id, rung"),
                         expected_results)

        # The same sweep killed once a TPE trial is under way, then resumed.
        killed = os.path.join(WORK, name + "_killed")
        process = sweep.start_sweep(1, SWEEP, killed, *arguments)
        try:
            seen = wait_for_tpe_trial_running(process, killed)
        finally:
            output = sweep.kill_sweep(process)
        self.assertTrue(seen, "the sweep ended before a TPE trial ran:\n" + output)
        sweep.wait_for_lock(killed)
        before = proposals(killed)
        self.assertLess(len(before), TRIALS, "the kill came after the last proposal")
        result = e2e.mpirun(1, "sweep", SWEEP, "--sweep-dir", killed, "--resume", *arguments, timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("interrupted jobs requeued", result.stdout)
        rows = check_every_trial_once(self, killed)
        after = check_proposals(self, killed, rows)
        # The proposals made before the kill were kept, and the resumed sweep went on with the
        # uninterrupted sweep's sequence: the same values, methods and fitted-on results.
        self.assertEqual(after[:len(before)], before)
        for mine, theirs in zip(after, expected):
            self.assertEqual({key: mine[key] for key in ("trial_id", "method", "model_rung", "fitted_on",
                                                         "parameter_values")},
                             {key: theirs[key] for key in ("trial_id", "method", "model_rung", "fitted_on",
                                                           "parameter_values")})
        self.assertEqual(query(killed, "SELECT trial_id, rung, metric FROM rung_results ORDER BY trial_id, rung"),
                         expected_results)
        # The same trials went on from each rung (under the stopping rule, decided as they came).
        went_on = "SELECT DISTINCT trial_id, rung FROM jobs WHERE rung > 0 ORDER BY trial_id, rung"
        self.assertEqual(query(killed, went_on), query(reference, went_on))
        print(f"\n  {len(before)} of {TRIALS} trials proposed before the kill; the resumed sweep proposed the rest "
              f"as the uninterrupted one", end=" ")

    def test_the_stopping_rule_decides_each_result_as_it_arrives(self):
        directory = os.path.join(WORK, "stopping")
        result = e2e.mpirun(2, "sweep", SWEEP, "--sweep-dir", directory, "--set", "asha.rule=stopping", timeout=400)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("eta 3; stopping rule", result.stdout)
        rows = check_every_trial_once(self, directory)
        check_proposals(self, directory, rows)
        # Rung 0's results in the order they were written, each judged against those before it:
        # it goes on if it is in the top max(1, floor(n / 3)) of the n results so far, ties to the
        # lower trial id. The promotion rule would send on only the final top floor(8 / 3) = 2.
        so_far, going_on = [], set()
        for arrived in query(directory, "SELECT trial_id, metric FROM rung_results WHERE rung = 0 ORDER BY rowid"):
            so_far.append((arrived["trial_id"], arrived["metric"]))
            ranked = sorted(so_far, key=lambda pair: (-pair[1], pair[0]))
            if arrived["trial_id"] in [trial for trial, _ in ranked[:max(1, len(so_far) // 3)]]:
                going_on.add(arrived["trial_id"])
        self.assertEqual(len(so_far), TRIALS)
        promoted = {row["trial_id"] for row in query(directory, "SELECT DISTINCT trial_id FROM jobs WHERE rung = 1")}
        self.assertEqual(promoted, going_on)
        completed = {row["trial_id"] for row in rows if row["status"] == "completed"}
        self.assertEqual(completed, going_on)

    def test_tpe_without_asha_fits_the_final_results(self):
        # scheduler: full trains every trial to budget.max: one rung, the final results.
        directory = os.path.join(WORK, "full")
        result = e2e.mpirun(2, "sweep", SWEEP, "--sweep-dir", directory, "--set", "scheduler=full",
                            "--set", "budget.min=1", "--set", "budget.max=1", "--set", "tpe.startup_trials=2",
                            timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("tpe search (the first 2 trials random, 24 candidates), full scheduler", result.stdout)
        rows = check_every_trial_once(self, directory)
        self.assertTrue(all(row["status"] == "completed" and row["rung"] == 0 for row in rows), rows)
        recorded = check_proposals(self, directory, rows, startup_trials=2)
        self.assertTrue(all(proposal["model_rung"] in (None, 0) for proposal in recorded), recorded)

    def test_bad_tpe_settings_exit_2_naming_the_key(self):
        sweep.check_bad_sweep_file(self, WORK, SWEEP_TEXT.format(trials=TRIALS).replace(
            "startup_trials: 3", "startup_trials: 0"), "tpe.startup_trials", os.path.join(WORK, "bad_startup"))
        sweep.check_bad_sweep_file(self, WORK, SWEEP_TEXT.format(trials=TRIALS).replace(
            "search: tpe", "search: random"), "search: tpe", os.path.join(WORK, "bad_tpe_section"))


if __name__ == "__main__":
    e2e.main()
