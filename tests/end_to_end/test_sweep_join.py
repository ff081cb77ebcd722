"""End-to-end: jobs that join a running sweep (docs/SWEEPS.md, "Jobs that join a running sweep").
A sweep on one rank (`mpirun -np 1 phalanx sweep`) and a second, independent mpirun that joins it
(`phalanx sweep SWEEP --join DIR`), on a Fashion-MNIST subset:

- joined: the second job's rank is training within seconds of its start (the time is printed),
  both jobs' groups train trials, the sweep records every trial and (trial, rung) once, the join
  job exits 0 when the sweep ends and join.json is gone;
- refused, while the sweep runs: a join with another base config (exit 2 naming the config line),
  with another budget (naming 'budget'), or of a directory where no sweep runs (naming join.json),
  each with one error line and nothing written to the sweep;
- killed: the join job SIGKILLed (mpirun and its rank) mid-trial, after a checkpoint of its
  trial: the sweep records that job interrupted, continues the trial on its own group from the
  trial's newest checkpoint, and finishes with every trial and (trial, rung) once;
- the other side killed: the sweep's mpirun SIGKILLed while the joined group trains: the join job
  stops that trial after a step with a checkpoint and exits 1 naming the coordinator, and the
  sweep's --resume (without it) continues the trial from that checkpoint and finishes with every
  trial and (trial, rung) once.
"""

import json
import os
import socket
import sqlite3
import struct
import subprocess
import threading
import time
import unittest

import e2e_common as e2e
import sweep_common as sweep
from sweep_common import query

TRAIN, TEST = 3000, 300  # 94 or 188 steps an epoch: a job lasts seconds, long enough to be killed mid-way
TRIALS = 6
# The joined test's sweep has work left after the three refusals, which take about as long as six
# trials' first rung on one rank (each is an mpirun): with six trials, a loaded machine could hand
# the last one out before the join arrived, leaving the joined group nothing to take.
JOINED_TRIALS = 18
SWEEP_TEXT = """name: e2e_join
seed: 5
config: base.yaml
search: random
scheduler: asha
trials: {trials}
metric: test_accuracy
budget: {{unit: epochs, min: 1, max: 3, eta: 3}}
workers: {{join_running: false}}
space:
  optimizer.learning_rate: {{type: loguniform, low: 0.0005, high: 0.01}}
  train.batch_size: {{type: choice, values: [16, 32]}}
"""


def setUpModule():
    global WORK, SWEEP, JOINED_SWEEP
    WORK, _ = sweep.set_up("sweep_join", TRAIN, TEST, name="join-base", every_steps=5, keep=2, log_every_steps=1000)
    SWEEP = sweep.write_text(os.path.join(WORK, "sweep.yaml"), SWEEP_TEXT.format(trials=TRIALS))
    JOINED_SWEEP = sweep.write_text(os.path.join(WORK, "sweep-joined.yaml"), SWEEP_TEXT.format(trials=JOINED_TRIALS))


def start_join(directory, *args, sweep_file=None):
    """`mpirun -np 1 phalanx sweep SWEEP --join DIRECTORY` in the background, in its own session."""
    command = [e2e.MPIEXEC, *e2e.MPI_FLAGS, "-np", "1", e2e.PHALANX, "sweep", sweep_file or SWEEP, "--join", directory,
               *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=e2e.child_environment(), start_new_session=True)


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except (sqlite3.OperationalError, FileNotFoundError):
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {timeout} s")


def check_every_trial_once(test, directory, trial_count=TRIALS):
    """Every trial ran each rung it reached once: one result per (trial, rung), each from one job
    recorded done, and no job left running."""
    trials = query(directory, "SELECT trial_id, status FROM trials ORDER BY trial_id")
    test.assertEqual([row["trial_id"] for row in trials], list(range(trial_count)))
    for row in trials:
        test.assertIn(row["status"], ("completed", "stopped"), row)
    results = query(directory, "SELECT trial_id, rung FROM rung_results ORDER BY trial_id, rung")
    done = query(directory, "SELECT trial_id, rung FROM jobs WHERE status = 'done' ORDER BY trial_id, rung")
    test.assertEqual([(row["trial_id"], row["rung"]) for row in done],
                     [(row["trial_id"], row["rung"]) for row in results])
    test.assertFalse(query(directory, "SELECT * FROM jobs WHERE status = 'running'"))
    test.assertFalse(os.path.exists(os.path.join(directory, "join.json")), "join.json outlived the sweep")


class SweepJoin(unittest.TestCase):
    def test_a_second_job_joins_refusals_name_the_difference(self):
        directory = os.path.join(WORK, "joined")
        process = sweep.start_sweep(1, JOINED_SWEEP, directory)
        try:
            wait_for(lambda: os.path.exists(os.path.join(directory, "join.json")), 60, "join.json")
            sweep_before = query(directory, "SELECT COUNT(*) AS n FROM workers")[0]["n"]
            # Refused while the sweep runs, each naming what differs; nothing recorded of them.
            other_base = e2e.mpirun(1, "sweep", JOINED_SWEEP, "--join", directory,
                                    "--set", "config.optimizer.learning_rate=0.125", timeout=120)
            self.assertEqual(other_base.returncode, 2, other_base.describe())
            errors = other_base.error_lines()
            self.assertEqual(len(errors), 1, other_base.describe())
            self.assertIn("refused by the sweep", errors[0])
            self.assertIn("learning_rate: 0.125", errors[0])
            other_budget = e2e.mpirun(1, "sweep", JOINED_SWEEP, "--join", directory, "--set", "budget.max=9", timeout=120)
            self.assertEqual(other_budget.returncode, 2, other_budget.describe())
            self.assertIn("'budget'", other_budget.error_lines()[0])
            nowhere = e2e.mpirun(1, "sweep", JOINED_SWEEP, "--join", os.path.join(WORK, "no-sweep-here"), timeout=120)
            self.assertEqual(nowhere.returncode, 2, nowhere.describe())
            self.assertIn("no-sweep-here/join.json", nowhere.error_lines()[0])
            self.assertEqual(query(directory, "SELECT COUNT(*) AS n FROM workers")[0]["n"], sweep_before)

            started = time.time()
            joined = start_join(directory, sweep_file=JOINED_SWEEP)

            def first_joined_job():
                first_start = query(directory, "SELECT MIN(started) AS t FROM jobs WHERE worker = 1")[0]["t"]
                for name, child in (("join job", joined), ("sweep", process)):
                    if first_start is None and child.poll() is not None:
                        raise AssertionError(f"the {name} exited ({child.returncode}) before the joined group took a "
                                             f"trial:\n{child.communicate()[0].decode(errors='replace')}")
                return first_start

            first = wait_for(first_joined_job, 120, "job on the joined group")
            seconds_to_training = first - started
            print(f"the joined job's group took its first trial {seconds_to_training:.1f} s after its mpirun started")
            self.assertLess(seconds_to_training, 20)
            join_output = joined.communicate(timeout=600)[0].decode(errors="replace")
            output = process.communicate(timeout=600)[0].decode(errors="replace")
        finally:
            for running in (process, locals().get("joined")):
                if running is not None and running.poll() is None:
                    sweep.kill_sweep(running)
        self.assertEqual(joined.returncode, 0, join_output)
        self.assertEqual(process.returncode, 0, output)
        self.assertIn("joined the sweep in", join_output)
        self.assertIn("the sweep ended", join_output)
        self.assertIn("joined job 1: worker(s) 1 join the sweep", output)
        self.assertIn("asked to join and was refused", output)
        check_every_trial_once(self, directory, JOINED_TRIALS)
        workers = {row["worker"] for row in query(directory, "SELECT worker FROM jobs WHERE status = 'done'")}
        self.assertEqual(workers, {0, 1}, "both jobs' groups trained trials")

    def test_a_malformed_join_file_names_its_field(self):
        # No sweep runs: each join.json is refused for its one wrong field before anything connects.
        directory = os.path.join(WORK, "malformed-join")
        os.makedirs(directory, exist_ok=True)
        good = {"host": "127.0.0.1", "addresses": ["127.0.0.1"], "port": 40000, "token": "t"}
        cases = (({"port": "x"}, "field 'port' is \"x\""),
                 ({"port": 4294975488}, "field 'port' is 4294975488"),  # 2^32 + 8192: no silent wrap to 8192
                 ({"port": 1.5}, "field 'port' is 1.5"),
                 ({"addresses": "x"}, "field 'addresses' must be a list of strings"),
                 ({"host": None}, "field 'host' must be a string, not null"),
                 ({"token": 7}, "field 'token' must be a string, not 7"))
        for change, expected in cases:
            with self.subTest(change=change):
                with open(os.path.join(directory, "join.json"), "w") as stream:
                    json.dump({**good, **change}, stream)
                result = e2e.mpirun(1, "sweep", SWEEP, "--join", directory, timeout=120)
                self.assertEqual(result.returncode, 2, result.describe())
                (line,) = result.error_lines()
                self.assertIn(os.path.join(directory, "join.json"), line)
                self.assertIn(expected, line)

    def test_an_answer_that_is_not_a_coordinators_is_refused(self):
        # join.json left by a killed sweep whose port another program now holds: what answers there
        # is named, with exit 2, whatever it sends.
        directory = os.path.join(WORK, "not-a-coordinator")
        os.makedirs(directory, exist_ok=True)
        for answer, expected in ((b"hello there", "is not a sweep's coordinator"),
                                 (json.dumps({"type": "welcome"}).encode(), "is not a welcome with a first worker"),
                                 (json.dumps({"type": "welcome", "first_worker": "x"}).encode(),
                                  "is not a welcome with a first worker")):
            with self.subTest(answer=answer):
                listener = socket.socket()
                listener.bind(("127.0.0.1", 0))
                listener.listen(1)
                port = listener.getsockname()[1]
                with open(os.path.join(directory, "join.json"), "w") as stream:
                    json.dump({"host": "127.0.0.1", "port": port, "token": "t"}, stream)

                def answer_once():
                    connection, _ = listener.accept()
                    with connection:
                        length = struct.unpack(">I", connection.recv(4))[0]
                        received = b""
                        while len(received) < length:
                            received += connection.recv(length - len(received))
                        connection.sendall(struct.pack(">I", len(answer)) + answer)
                        time.sleep(5)

                thread = threading.Thread(target=answer_once, daemon=True)
                thread.start()
                try:
                    result = e2e.mpirun(1, "sweep", SWEEP, "--join", directory, timeout=120)
                finally:
                    listener.close()
                self.assertEqual(result.returncode, 2, result.describe())
                (line,) = result.error_lines()
                for part in (f"127.0.0.1:{port}", os.path.join(directory, "join.json"), expected):
                    self.assertIn(part, line)

    def test_a_killed_join_jobs_trial_is_continued_by_the_sweep(self):
        directory = os.path.join(WORK, "killed")
        process = sweep.start_sweep(1, SWEEP, directory)
        joined = None
        try:
            wait_for(lambda: os.path.exists(os.path.join(directory, "join.json")), 60, "join.json")
            joined = start_join(directory)

            def joined_trial_with_checkpoint():
                rows = query(directory, "SELECT job_id, trial_id, rung FROM jobs WHERE worker = 1 AND status = 'running'")
                for row in rows:
                    trial_dir = os.path.join(directory, "trials", f"{row['trial_id']:05d}", "checkpoints")
                    if os.path.isdir(trial_dir) and any(name.endswith(".h5") for name in os.listdir(trial_dir)):
                        return row
                return None

            killed = wait_for(joined_trial_with_checkpoint, 300, "joined trial with a checkpoint")
            sweep.kill_sweep(joined)
            output = process.communicate(timeout=600)[0].decode(errors="replace")
        finally:
            for running in (process, joined):
                if running is not None and running.poll() is None:
                    sweep.kill_sweep(running)
        self.assertEqual(process.returncode, 0, output)
        self.assertIn(f"joined job 1: worker(s) 1 left; trial(s) {killed['trial_id']} requeued", output)
        job = query(directory, "SELECT * FROM jobs WHERE job_id = ?", killed["job_id"])[0]
        self.assertEqual(job["status"], "interrupted", job)
        # The sweep's own group continued the trial's rung from the checkpoint the killed job wrote.
        redo = query(directory, "SELECT * FROM jobs WHERE trial_id = ? AND rung = ? AND job_id > ? ORDER BY job_id",
                     killed["trial_id"], killed["rung"], killed["job_id"])
        self.assertTrue(redo, "the killed job's rung was not continued")
        self.assertEqual(redo[0]["worker"], 0, redo[0])
        self.assertEqual(redo[0]["status"], "done", redo[0])
        self.assertTrue(redo[0]["resumed_from"], redo[0])
        self.assertGreater(redo[0]["start_step"], 0, redo[0])
        check_every_trial_once(self, directory)

    def test_the_join_job_stops_with_a_checkpoint_when_the_sweep_is_killed(self):
        directory = os.path.join(WORK, "sweep-killed")
        process = sweep.start_sweep(1, SWEEP, directory)
        joined = None
        try:
            wait_for(lambda: os.path.exists(os.path.join(directory, "join.json")), 60, "join.json")
            joined = start_join(directory)
            running = wait_for(lambda: query(directory, "SELECT job_id, trial_id, rung FROM jobs "
                                                        "WHERE worker = 1 AND status = 'running'"),
                               300, "a job on the joined group")[0]
            killed_at = time.time()
            sweep.kill_sweep(process)
            join_output = joined.communicate(timeout=120)[0].decode(errors="replace")
        finally:
            for child in (process, joined):
                if child is not None and child.poll() is None:
                    sweep.kill_sweep(child)
        self.assertNotEqual(joined.returncode, 0, join_output)
        self.assertIn("the sweep's coordinator at", join_output)
        self.assertIn("is gone", join_output)
        # The joined group stopped its trial after a step with a checkpoint: the newest one of the
        # trial is at least where the killed job started.
        sweep.wait_for_lock(directory)
        resumed = e2e.mpirun(1, "sweep", SWEEP, "--sweep-dir", directory, "--resume", timeout=600)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        check_every_trial_once(self, directory)
        redo = query(directory, "SELECT * FROM jobs WHERE trial_id = ? AND rung = ? AND job_id > ? ORDER BY job_id",
                     running["trial_id"], running["rung"], running["job_id"])
        self.assertTrue(redo, "the joined group's rung was not continued")
        self.assertTrue(redo[0]["resumed_from"], redo[0])
        # ... from the checkpoint the joined group wrote as it stopped (after the kill): its trial's
        # metrics.jsonl has the stop's "handover" event at the step the redo starts from.
        events = e2e.read_metrics(os.path.join(directory, "trials", f"{running['trial_id']:05d}"))
        stops = [event for event in events if event["event"] == "handover" and event["time"] >= killed_at - 1]
        if stops:
            self.assertEqual(stops[-1]["step"], redo[0]["start_step"], (stops[-1], redo[0]))
        else:
            # The rung ended between the kill and the stop request: its result was lost with the
            # coordinator, and the redo recomputes it from the rung's last checkpoint, training nothing.
            self.assertEqual(redo[0]["start_step"], redo[0]["end_step"], redo[0])


if __name__ == "__main__":
    e2e.main()
