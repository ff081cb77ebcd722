"""What the sweep tests (test_sweep.py, test_sweep_group_sizes.py, test_sweep_idle_tail.py) share:
their scratch folder with a Fashion-MNIST subset and a base training config, the sweep database
read with sqlite3, a sweep started in the background and killed with all its ranks, the step events of a trial's
metrics.jsonl against a straight run of the same trial, and bad sweep files refused.
"""

import fcntl
import os
import signal
import sqlite3
import subprocess
import time

import cluster_jobs
import e2e_common as e2e


def set_up(folder, train_count, test_count, **base):
    """A fresh scratch folder for one test file, with a Fashion-MNIST subset of `train_count` and
    `test_count` images and base.yaml, the training config its sweeps start from
    (e2e_common.base_config with `base`). Returns (folder, data file)."""
    e2e.require_fashion()
    work = e2e.work_dir(folder)
    data = e2e.make_fashion_subset(work, train_count, test_count)
    e2e.write_config(os.path.join(work, "base.yaml"), e2e.base_config(data, **base))
    return work, data


def write_text(path, text):
    with open(path, "w") as stream:
        stream.write(text)
    return path


def query(directory, sql, *parameters, timeout=5):
    """The rows of `sql` on DIRECTORY/sweep.db, as dicts; `timeout`: seconds to wait for a lock
    that a running sweep holds (sqlite3's default 5)."""
    connection = sqlite3.connect(os.path.join(directory, "sweep.db"), timeout=timeout)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute(sql, parameters)]
    finally:
        connection.close()


def start_sweep(ranks, sweep, directory, *args):
    """`mpirun -np RANKS phalanx sweep SWEEP --sweep-dir DIRECTORY ARGS...` in the background, in its
    own process group (os.killpg kills mpirun and its ranks together); output in one pipe."""
    command = [e2e.MPIEXEC, *e2e.MPI_FLAGS, "-np", str(ranks), e2e.PHALANX, "sweep", sweep,
               "--sweep-dir", directory, *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=e2e.child_environment(), start_new_session=True)


def kill_sweep(process):
    """SIGKILL to a sweep's mpirun (start_sweep) and every process under it, the ranks included, as
    a scheduler or a lost node ends them. The ranks run in process groups of their own: SIGKILL to
    mpirun's group alone leaves them running for a while, long enough to finish a job and record
    it. Returns mpirun's output."""
    for pid in cluster_jobs.descendants(process.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return process.communicate()[0].decode(errors="replace")


def wait_for_lock(directory, timeout=60):
    """Waits until no process of a killed sweep holds its lock (its ranks outlive mpirun for a
    moment)."""
    deadline = time.monotonic() + timeout
    with open(os.path.join(directory, "sweep.lock"), "a") as stream:
        while True:
            try:
                fcntl.flock(stream, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(stream, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{directory}/sweep.lock still held {timeout} s after the kill")
                time.sleep(0.1)


def step_events(run_dir):
    """The "step" events of a run's metrics.jsonl, in file order."""
    return [event for event in e2e.read_metrics(run_dir) if event["event"] == "step"]


def compare_with_straight_run(test, run_dir, straight_dir, bitwise_until, tolerance, close_until=None):
    """A trial's step events (`run_dir`) against a straight `phalanx train` of the same trial
    (`straight_dir`): the same steps, the same learning rate at each, the same loss bitwise up to
    step `bitwise_until` and within `tolerance` relative after it, up to step `close_until` (None:
    to the end). Returns the largest relative loss difference after `bitwise_until`."""
    ours, theirs = step_events(run_dir), step_events(straight_dir)
    test.assertEqual([event["step"] for event in ours], [event["step"] for event in theirs])
    largest = 0.0
    for mine, straight in zip(ours, theirs):
        test.assertAlmostEqual(mine["learning_rate"], straight["learning_rate"], delta=1e-9, msg=mine)
        if mine["step"] <= bitwise_until:
            test.assertEqual(mine["loss"], straight["loss"], mine)
        elif close_until is None or mine["step"] <= close_until:
            test.assertAlmostEqual(mine["loss"], straight["loss"], delta=tolerance * straight["loss"], msg=mine)
            largest = max(largest, abs(mine["loss"] - straight["loss"]) / straight["loss"])
    return largest


def check_bad_sweep_file(test, work, text, fragment, directory):
    """`phalanx sweep` of a sweep file with `text` exits 2 with one error line that names the file
    and holds `fragment`, and creates no sweep directory."""
    path = write_text(os.path.join(work, "bad.yaml"), text)
    result = e2e.phalanx("sweep", path, "--sweep-dir", directory, timeout=60)
    test.assertEqual(result.returncode, 2, result.describe())
    errors = result.error_lines()
    test.assertEqual(len(errors), 1, result.describe())
    test.assertIn("bad.yaml", errors[0])
    test.assertIn(fragment, errors[0])
    test.assertFalse(os.path.exists(directory), "a bad sweep file must not create the sweep directory")
