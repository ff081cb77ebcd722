"""Helpers for tests and benchmarks that interfere with a running training job: start `mpirun
phalanx train` in the background, find the process of each rank, wait until the job reaches a
step, send signals, and compare the weights of two checkpoints bit for bit."""

import json
import os
import signal
import subprocess
import time

import numpy as np

import e2e_common as e2e


class Job:
    """`mpirun -np N phalanx train ...` running in the background, output to files."""

    def __init__(self, folder, name, ranks, args, mpirun_flags=(), environment=None):
        self.ranks = ranks
        self.stdout_path = os.path.join(folder, f"{name}.out")
        self.stderr_path = os.path.join(folder, f"{name}.err")
        self.command = [e2e.MPIEXEC, *e2e.MPI_FLAGS, *mpirun_flags, "-np", str(ranks), e2e.PHALANX,
                        *map(str, args)]
        self.started = time.monotonic()
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.process = subprocess.Popen(self.command, stdout=out, stderr=err, env=environment or e2e.child_environment(),
                                            start_new_session=True)

    def rank_pids(self, timeout=60):
        """{rank: pid} of the phalanx processes under this mpirun (from OMPI_COMM_WORLD_RANK)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = {}
            for pid in descendants(self.process.pid):
                try:
                    with open(f"/proc/{pid}/environ", "rb") as stream:
                        environment = dict(item.split(b"=", 1) for item in stream.read().split(b"\0") if b"=" in item)
                    with open(f"/proc/{pid}/comm") as stream:
                        command = stream.read().strip()
                except OSError:
                    continue
                if command == "phalanx" and b"OMPI_COMM_WORLD_RANK" in environment:
                    found[int(environment[b"OMPI_COMM_WORLD_RANK"])] = pid
            if len(found) == self.ranks:
                return found
            time.sleep(0.05)
        raise AssertionError(f"did not find the {self.ranks} rank processes within {timeout} s\n" + self.output())

    def wait(self, timeout):
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the job did not end within {timeout} s\n" + self.output()) from None
        return self.process.returncode

    def kill(self):
        """Ends whatever is left of the job: mpirun's session (it and every rank it started)."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()

    def stdout(self):
        with open(self.stdout_path, errors="replace") as stream:
            return stream.read()

    def stderr(self):
        with open(self.stderr_path, errors="replace") as stream:
            return stream.read()

    def output(self):
        return (f"$ {' '.join(self.command)}\nexit status {self.process.returncode}\n--- stdout ---\n"
                f"{self.stdout()[-4000:]}\n--- stderr ---\n{self.stderr()[-4000:]}")


def descendants(pid):
    children = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as stream:
                children += [int(child) for child in stream.read().split()]
    except OSError:
        return []
    result = list(children)
    for child in children:
        result += descendants(child)
    return result


def last_logged_step(run_dir):
    """The step of the newest step event in metrics.jsonl (0 before the first)."""
    try:
        with open(os.path.join(run_dir, "metrics.jsonl")) as stream:
            lines = stream.read().splitlines()
    except OSError:
        return 0
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line being written
        if event.get("event") == "step":
            return event["step"]
    return 0


def wait_for_step(job, run_dir, step, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if last_logged_step(run_dir) >= step:
            return
        if job.process.poll() is not None:
            raise AssertionError(f"the job ended before step {step}\n" + job.output())
        time.sleep(0.02)
    job.kill()
    raise AssertionError(f"the job did not reach step {step} within {timeout} s\n" + job.output())


def events(run_dir, name):
    return [event for event in e2e.read_metrics(run_dir) if event.get("event") == name]


def checkpoint_differences(expected_path, actual_path):
    """Names of /model and /optimizer datasets that differ in any bit (or exist in one file only)."""
    expected = e2e.read_checkpoint_arrays(expected_path)
    actual = e2e.read_checkpoint_arrays(actual_path)
    differences = []
    for group in ("model", "optimizer"):
        if not expected[group]:
            differences.append(f"/{group} is empty in {expected_path}")
        for name in sorted(set(expected[group]) | set(actual[group])):
            if name not in expected[group] or name not in actual[group]:
                differences.append(f"/{group}/{name} in one file only")
                continue
            left, right = expected[group][name], actual[group][name]
            if left.shape != right.shape or left.tobytes() != right.tobytes():
                gap = np.abs(left.astype(np.float64) - right).max() if left.shape == right.shape else "shape"
                differences.append(f"/{group}/{name} (max |diff| {gap})")
    return differences


# Elastic resume's tolerance (tests/end_to_end/test_elastic_resume.py explains it): a run resumed
# on another number of ranks ends within 1e-4 of each tensor's largest magnitude of the straight run.
ELASTIC_TOLERANCE = 1e-4


def elastic_differences(expected_path, actual_path, tolerance=ELASTIC_TOLERANCE):
    """(worst relative difference over the /model and /optimizer datasets, the datasets beyond
    the tolerance). Each difference is max |expected - actual| over the dataset's largest magnitude."""
    expected = e2e.read_checkpoint_arrays(expected_path)
    actual = e2e.read_checkpoint_arrays(actual_path)
    worst, beyond = 0.0, []
    for group in ("model", "optimizer"):
        if not expected[group]:
            beyond.append(f"/{group} is empty in {expected_path}")
        for name in sorted(set(expected[group]) | set(actual[group])):
            if name not in expected[group] or name not in actual[group] or \
                    expected[group][name].shape != actual[group][name].shape:
                beyond.append(f"/{group}/{name} missing or of another shape in one file")
                continue
            left, right = expected[group][name].astype(np.float64), actual[group][name]
            relative = float(np.abs(left - right).max()) / max(float(np.abs(left).max()), 1e-12)
            worst = max(worst, relative)
            if relative > tolerance:
                beyond.append(f"/{group}/{name} (relative difference {relative:.3g})")
    return worst, beyond

