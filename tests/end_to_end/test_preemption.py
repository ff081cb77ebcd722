"""End-to-end: preemption through mpirun. SIGUSR1 to mpirun (which forwards it to every rank, as
Open MPI 4.1 does) or SIGTERM to the ranks themselves (what Slurm sends to every process of a job)
mid-run: all ranks finish the step, agree to stop after the same step, rank 0 writes that step's
checkpoint, the job exits with status 75; `--resume auto` in the same run directory then ends with
bitwise the same weights and optimizer state as an uninterrupted run."""

import os
import signal
import unittest

import cluster_jobs as jobs
import e2e_common as e2e
from e2e_common import h5py

RANKS, BATCH, EPOCHS = 2, 32, 2
TRAIN, TEST = 4096, 256
STEPS_PER_EPOCH = TRAIN // (RANKS * BATCH)  # 64
TOTAL_STEPS = EPOCHS * STEPS_PER_EPOCH  # 128
SIGNAL_AFTER_STEP = 20
PREEMPTED_STATUS = 75


def setUpModule():
    global WORK, CONFIG_PATH, STRAIGHT
    e2e.require_fashion()
    WORK = e2e.work_dir("preemption")
    data = e2e.make_fashion_subset(WORK, TRAIN, TEST)
    config = e2e.base_config(
        data, name="preemption", seed=5, epochs=EPOCHS, batch_size=BATCH, log_every_steps=2,
        optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9, "weight_decay": 0.0005},
        schedule={"type": "cosine", "warmup_epochs": 0.5})
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "preemption.yaml"), config)
    STRAIGHT = os.path.join(WORK, "straight")
    result = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", STRAIGHT, timeout=300)
    if result.returncode != 0:
        raise AssertionError("the uninterrupted run failed\n" + result.describe())


class PreemptionTest(unittest.TestCase):
    def preempt_and_resume(self, name, send_signal):
        run_dir = os.path.join(WORK, name)
        job = jobs.Job(WORK, name, RANKS, ["train", CONFIG_PATH, "--run-dir", run_dir, "--resume", "auto"])
        try:
            pids = job.rank_pids()
            jobs.wait_for_step(job, run_dir, SIGNAL_AFTER_STEP)
            send_signal(job, pids)
            status = job.wait(timeout=120)
        finally:
            job.kill()
        self.assertEqual(status, PREEMPTED_STATUS, job.output())

        stops = jobs.events(run_dir, "preempted")
        self.assertEqual(len(stops), 1, job.output())
        stop = stops[0]
        self.assertGreaterEqual(stop["step"], SIGNAL_AFTER_STEP)
        self.assertLess(stop["step"], TOTAL_STEPS, "the signal came before the end")
        checkpoint = os.path.join(run_dir, "checkpoints", f"step-{stop['step']}.h5")
        self.assertTrue(os.path.isfile(checkpoint), job.output())
        with h5py.File(checkpoint, "r") as file:
            self.assertEqual(int(file.attrs["step"]), stop["step"])
        self.assertFalse(os.path.exists(os.path.join(run_dir, "summary.json")), "a stopped run has no summary")
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints", "latest.h5")))
        self.assertIn(f"stopped by {stop['signal']} after step {stop['step']}", job.stdout() + job.stderr())
        # the handlers only set a flag: stopping takes one step and a checkpoint, not seconds
        self.assertLess(stop["signal_to_checkpoint_seconds"], 10.0)
        print(f"\n{name}: {stop['signal']} -> stop after step {stop['step']}, checkpoint "
              f"{stop['signal_to_checkpoint_seconds']:.3f} s after the signal "
              f"(agreement {stop['signal_to_agreement_seconds']:.3f} s)")

        resumed = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", run_dir, "--resume", "auto", timeout=300)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertIn(f"resumed from {checkpoint}", resumed.stdout)
        summary = e2e.read_summary(run_dir)
        self.assertEqual(summary["steps"], TOTAL_STEPS)
        differences = jobs.checkpoint_differences(os.path.join(STRAIGHT, "checkpoints", "latest.h5"),
                                                  os.path.join(run_dir, "checkpoints", "latest.h5"))
        self.assertEqual(differences, [], "the preempted and resumed run differs from the uninterrupted one")
        # the resumed run appends to the same metrics: the stop stays on record
        self.assertEqual(len(jobs.events(run_dir, "preempted")), 1)

    def test_sigusr1_to_mpirun(self):
        self.preempt_and_resume("usr1", lambda job, pids: os.kill(job.process.pid, signal.SIGUSR1))

    def test_sigterm_to_one_rank(self):
        # Only rank 1 hears it: the per-step agreement still stops both after the same step.
        self.preempt_and_resume("term", lambda job, pids: os.kill(pids[1], signal.SIGTERM))


if __name__ == "__main__":
    e2e.main()
