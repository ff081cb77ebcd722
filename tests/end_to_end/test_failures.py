"""End-to-end: failures never hang a job, and a slow rank is named. A rank killed with SIGKILL ends
the job within 30 s with a message naming it; a rank stopped with SIGSTOP is found by the
watchdog after distributed.timeout_s, which names it and the collective the others waited in;
a rank slowed down by its "node" (here: stopped half of the time) shows up as the slowest rank in
the straggler events of metrics.jsonl. Every wait is bounded."""

import os
import re
import signal
import threading
import time
import unittest

import cluster_jobs as jobs
import e2e_common as e2e

RANKS, BATCH = 2, 32
TRAIN, TEST = 8192, 256
STALL_TIMEOUT = 3.0


def setUpModule():
    global WORK, DATA
    e2e.require_fashion()
    WORK = e2e.work_dir("failures")
    DATA = e2e.make_fashion_subset(WORK, TRAIN, TEST)


def config_path(name, timeout_s=300.0, log_every_steps=2, every_steps=0):
    config = e2e.base_config(DATA, name=name, seed=9, epochs=4, batch_size=BATCH, log_every_steps=log_every_steps,
                             every_steps=every_steps, keep=3)
    config["distributed"] = {"timeout_s": timeout_s}
    return e2e.write_config(os.path.join(WORK, f"{name}.yaml"), config)


class FailureTest(unittest.TestCase):
    def start(self, name, timeout_s=300.0, log_every_steps=2, every_steps=0, environment=None):
        run_dir = os.path.join(WORK, name)
        job = jobs.Job(WORK, name, RANKS, ["train", config_path(name, timeout_s, log_every_steps, every_steps),
                                           "--run-dir", run_dir], environment=environment)
        self.addCleanup(job.kill)
        pids = job.rank_pids()
        jobs.wait_for_step(job, run_dir, 10)
        return job, run_dir, pids

    def test_killed_rank_ends_the_job_naming_it(self):
        job, _, pids = self.start("killed")
        start = time.monotonic()
        os.kill(pids[1], signal.SIGKILL)
        status = job.wait(timeout=60)
        seconds = time.monotonic() - start
        self.assertNotEqual(status, 0, job.output())
        self.assertLess(seconds, 30, job.output())
        self.assertRegex(job.stdout() + job.stderr(), r"rank 1\b", job.output())
        print(f"\nSIGKILL of rank 1: job ended after {seconds:.2f} s")

    def test_stalled_rank_is_named_by_the_watchdog(self):
        job, _, pids = self.start("stalled", timeout_s=STALL_TIMEOUT)
        start = time.monotonic()
        os.kill(pids[1], signal.SIGSTOP)
        try:
            status = job.wait(timeout=STALL_TIMEOUT + 30)
        finally:
            try:
                os.kill(pids[1], signal.SIGCONT)  # let the kill reach it if it survived
            except ProcessLookupError:
                pass
        seconds = time.monotonic() - start
        errors = job.stderr()
        self.assertEqual(status, 1, job.output())
        self.assertGreaterEqual(seconds, STALL_TIMEOUT, "the watchdog must wait distributed.timeout_s")
        message = re.search(r"phalanx: error: rank 0: watchdog: rank 0 waited [0-9.]+ s in '([a-z -]+)' of step "
                            r"\d+ \(distributed.timeout_s = 3\): stalled rank 1; rank 1 \(host [^,]+, pid (\d+)\) "
                            r"is not running \(stopped or killed\)", errors)
        self.assertIsNotNone(message, job.output())
        # Rank 0 waits in whichever collective of the training loop rank 1 was stopped before: every
        # step's gradient all-reduce and stop agreement, or a log interval's straggler report and
        # step metrics.
        self.assertIn(message.group(1), ("gradient all-reduce", "stop agreement", "straggler report", "step metrics"))
        self.assertEqual(int(message.group(2)), pids[1])
        print(f"\nSIGSTOP of rank 1: watchdog (timeout {STALL_TIMEOUT:g} s) ended the job after {seconds:.2f} s")

    def test_checkpoint_write_hung_on_rank_0_is_named_by_the_watchdog(self):
        """Rank 0 writes checkpoints alone, after the collective part: a write that never returns (a
        hard-mounted NFS export whose server went away) leaves rank 0 alive and rank 1 waiting in the
        next step's collective. Rank 1's watchdog ends the job after distributed.timeout_s, naming
        rank 0 and the checkpoint write; the checkpoints written before stay whole and no file has a
        checkpoint's name half-written."""
        environment = e2e.fault_library(self, WORK)
        run_dir = os.path.join(WORK, "hung-checkpoint")
        folder = os.path.join(run_dir, "checkpoints")
        trigger = os.path.join(WORK, "checkpoint-server-gone")
        environment.update({"PHALANX_TEST_HANGING_FOLDER": os.path.realpath(WORK) + "/hung-checkpoint/checkpoints",
                            "PHALANX_TEST_FAILURE_TRIGGER": trigger})
        job, _, _ = self.start("hung-checkpoint", timeout_s=STALL_TIMEOUT, every_steps=8, environment=environment)
        deadline = time.monotonic() + 60
        while "step-8.h5" not in os.listdir(folder) and time.monotonic() < deadline:
            time.sleep(0.02)
        open(trigger, "w").close()  # from now on rank 0's checkpoint writes block
        written = sorted(os.listdir(folder))
        start = time.monotonic()
        status = job.wait(timeout=STALL_TIMEOUT + 60)
        seconds = time.monotonic() - start
        self.assertEqual(status, 1, job.output())
        message = re.search(r"phalanx: error: rank 1: watchdog: rank 1 waited [0-9.]+ s in '([a-z -]+)' of step "
                            r"(\d+) \(distributed.timeout_s = 3\): stalled rank 0; rank 0 \(host [^,]+, pid \d+\) "
                            r"is still in 'checkpoint write' of step (\d+)", job.stderr())
        self.assertIsNotNone(message, job.output())
        self.assertIn(message.group(1), ("gradient all-reduce", "stop agreement", "straggler report", "step metrics",
                                         "checkpoint"))
        hung_at = int(message.group(3))
        self.assertEqual(hung_at % 8, 0, job.output())
        self.assertGreater(int(message.group(2)), hung_at, job.output())
        # Every file under a checkpoint's own name was there before the write hung, and verifies.
        names = [name for name in os.listdir(folder) if name.endswith(".h5") and not name.startswith(".")]
        self.assertNotIn(f"step-{hung_at}.h5", names)
        self.assertTrue(set(names) <= set(written), (names, written))
        paths = [os.path.join(folder, name) for name in names]
        self.assertTrue(paths)
        verified = e2e.phalanx("checkpoint", "verify", *paths)
        self.assertEqual(verified.returncode, 0, verified.describe())
        print(f"\ncheckpoint write hung on rank 0 at step {hung_at}: watchdog (timeout {STALL_TIMEOUT:g} s) "
              f"ended the job after {seconds:.2f} s")

    def test_an_evaluation_longer_than_the_timeout_is_not_a_stall(self):
        """A rank's forward passes over its part of the test split are its own work, however long:
        the watchdog watches only the sums after them (it ended healthy jobs whose evaluation outlasted
        distributed.timeout_s, as a CPU rank's part beside GPU ranks can)."""
        data = e2e.make_synth(os.path.join(WORK, "long-evaluation.h5"), train=256, test=12000, height=32, width=32,
                              channels=3, classes=10)
        config = e2e.base_config(data, name="long-evaluation", preset="resnet20", max_steps=4)
        config["distributed"] = {"timeout_s": 0.2}
        path = e2e.write_config(os.path.join(WORK, "long-evaluation.yaml"), config)
        run_dir = os.path.join(WORK, "long-evaluation")
        result = e2e.phalanx("train", path, "--run-dir", run_dir, timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        evaluations = jobs.events(run_dir, "eval")
        self.assertEqual(len(evaluations), 1, result.describe())
        # The watchdog needs the timeout and four beats more (0.55 s here) to call a stall.
        self.assertGreater(evaluations[0]["time"], 1.0, "the evaluation must outlast the watchdog's verdict")
        self.assertIn("test_accuracy", e2e.read_summary(run_dir))

    def test_slow_rank_is_reported_as_straggler(self):
        job, run_dir, pids = self.start("straggler", log_every_steps=4)
        reached = jobs.last_logged_step(run_dir)
        stop = threading.Event()

        def throttle():  # rank 1's "node" runs at 40 % speed: stopped 60 ms of every 100 ms
            while not stop.is_set():
                os.kill(pids[1], signal.SIGSTOP)
                time.sleep(0.06)
                os.kill(pids[1], signal.SIGCONT)
                time.sleep(0.04)
        thread = threading.Thread(target=throttle)
        thread.start()
        try:
            jobs.wait_for_step(job, run_dir, reached + 24)
        finally:
            stop.set()
            thread.join()
            os.kill(pids[1], signal.SIGCONT)
        os.kill(job.process.pid, signal.SIGUSR1)  # end early (preemption path), not the point here
        self.assertIn(job.wait(timeout=120), (0, 75), job.output())
        reports = [event for event in jobs.events(run_dir, "straggler") if event["step"] > reached + 4]
        self.assertTrue(reports, job.output())
        for event in reports:
            self.assertEqual(len(event["rank_ms"]), RANKS)
            self.assertAlmostEqual(event["slowest_ms"], max(event["rank_ms"]))
            self.assertGreaterEqual(event["ratio"], 1.0)
        slow = [event for event in reports if event["slowest_rank"] == 1]
        self.assertGreaterEqual(len(slow), (len(reports) + 1) // 2, reports)
        self.assertGreaterEqual(max(event["ratio"] for event in slow), 1.5, reports)
        self.assertRegex(job.stdout(), r"straggler: rank 1 busy [0-9.]+ ms per step, [0-9.]+x the median")
        print(f"\nthrottled rank 1: slowest in {len(slow)} of {len(reports)} intervals, "
              f"ratios {[round(event['ratio'], 2) for event in reports]}")


if __name__ == "__main__":
    e2e.main()
