"""End-to-end: a preempted run resumes exactly. Two epochs straight give bitwise the same /model
and /optimizer datasets as one epoch (train.max_steps = the steps of one epoch, epochs: 2)
followed by `--resume auto` in the same run directory, and as `--resume PATH` from an explicit
step checkpoint into a new run directory. SGD with momentum and a cosine schedule with warm-up
make the optimizer state and the schedule position matter. A run resumed in the middle of an epoch
and of a log interval reports the same train_loss (epoch events, summary.json) and step losses as
the straight run, bit for bit; a checkpoint without the running loss totals still resumes. Mixup and
CutMix are on (train.mixup, some steps unmixed), so their draws must continue exactly too."""

import os
import shlex
import shutil
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py

RANKS, BATCH, EPOCHS = 2, 32, 2
TRAIN, TEST = 1024, 256
STEPS_PER_EPOCH = TRAIN // (RANKS * BATCH)  # 16
TOTAL_STEPS = EPOCHS * STEPS_PER_EPOCH  # 32
EVERY_STEPS = 8
SEED = 21


def setUpModule():
    global WORK, DATA, CONFIG_PATH, STRAIGHT
    e2e.require_fashion()
    WORK = e2e.work_dir("resume")
    DATA = e2e.make_fashion_subset(WORK, TRAIN, TEST)
    config = e2e.base_config(
        DATA, name="resume", seed=SEED, epochs=EPOCHS, batch_size=BATCH, every_steps=EVERY_STEPS, keep=10,
        log_every_steps=4,
        optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9, "weight_decay": 0.0005},
        schedule={"type": "cosine", "warmup_epochs": 0.5})
    # Mixed batches: a resume must draw each step's mixing as the straight run did.
    config["train"]["mixup"] = {"mixup_alpha": 0.4, "cutmix_alpha": 1.0, "probability": 0.8}
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "resume.yaml"), config)
    STRAIGHT = os.path.join(WORK, "straight")
    result = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", STRAIGHT)
    if result.returncode != 0:
        raise AssertionError("the straight two-epoch run failed\n" + result.describe())


def train(run_dir, *args, timeout=300):
    """`mpirun -np RANKS phalanx train` of the test's config into `run_dir`."""
    return e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", run_dir, *args, timeout=timeout)


def latest(run_dir):
    return os.path.join(run_dir, "checkpoints", "latest.h5")


RUNNING_TOTALS = ("epoch_loss_sum", "epoch_samples", "interval_loss_sum", "interval_correct", "interval_samples")


def epoch_losses(run_dir):
    return {event["epoch"]: event["train_loss"] for event in e2e.read_metrics(run_dir) if event["event"] == "epoch"}


def step_metrics(run_dir):
    return {event["step"]: (event["loss"], event["accuracy"])
            for event in e2e.read_metrics(run_dir) if event["event"] == "step"}


class ResumeTest(unittest.TestCase):
    def assert_same_checkpoint(self, expected_path, actual_path):
        expected = e2e.read_checkpoint_arrays(expected_path, ("model", "optimizer", "state"))
        actual = e2e.read_checkpoint_arrays(actual_path, ("model", "optimizer", "state"))
        self.assertTrue(expected["model"] and expected["optimizer"], "checkpoint without /model or /optimizer")
        self.assertEqual(set(expected["optimizer"]), {f"{name}/momentum_buffer" for name in expected["model"]
                                                      if "running_" not in name
                                                      and not name.endswith("num_batches_tracked")})
        for group in ("model", "optimizer"):
            self.assertEqual(sorted(expected[group]), sorted(actual[group]), group)
            for name, value in expected[group].items():
                other = actual[group][name]
                self.assertEqual(value.shape, other.shape, name)
                bits = (lambda array: array.view(np.uint32)) if value.dtype == np.float32 else np.atleast_1d
                self.assertTrue(np.array_equal(bits(value), bits(other)),
                                f"/{group}/{name} differs after resuming "
                                f"(max |diff| {np.abs(value.astype(np.float64) - other).max():.3g})")
        for name in ("global_step", "epoch", "step_in_epoch", "samples_seen"):
            self.assertEqual(int(expected["state"][name]), int(actual["state"][name]), name)
        with h5py.File(actual_path, "r") as file:
            self.assertEqual(int(file.attrs["step"]), TOTAL_STEPS)

    def test_straight_run_checkpoints(self):
        with open(os.path.join(STRAIGHT, "config.yaml")) as stream:
            self.assertIn("cutmix_alpha: 1", stream.read(), "the run should mix its batches")
        names = set(os.listdir(os.path.join(STRAIGHT, "checkpoints")))
        self.assertEqual(names, {f"step-{step}.h5" for step in range(EVERY_STEPS, TOTAL_STEPS + 1, EVERY_STEPS)}
                         | {"latest.h5"})
        arrays = e2e.read_checkpoint_arrays(os.path.join(STRAIGHT, "checkpoints", f"step-{STEPS_PER_EPOCH}.h5"))
        # the momentum buffers carry real state at the resume point, so losing them would show
        self.assertGreater(np.abs(arrays["optimizer"]["fc1/weight/momentum_buffer"]).max(), 0.0)

    def test_resume_auto_in_the_same_run_directory(self):
        run_dir = os.path.join(WORK, "preempted")
        first = train(run_dir, "--set", f"train.max_steps={STEPS_PER_EPOCH}")
        self.assertEqual(first.returncode, 0, first.describe())
        first_summary = e2e.read_summary(run_dir)
        self.assertEqual(first_summary["steps"], STEPS_PER_EPOCH)
        with h5py.File(latest(run_dir), "r") as file:
            self.assertEqual(int(file.attrs["step"]), STEPS_PER_EPOCH)
        # After one epoch the weights are not yet those of the straight run's end.
        halfway = e2e.read_checkpoint_arrays(latest(run_dir), ("model",))["model"]
        final = e2e.read_checkpoint_arrays(latest(STRAIGHT), ("model",))["model"]
        self.assertFalse(np.array_equal(halfway["fc1/weight"], final["fc1/weight"]))

        resumed = train(run_dir, "--resume", "auto")
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertIn("resumed from", resumed.stdout + resumed.stderr)
        self.assert_same_checkpoint(latest(STRAIGHT), latest(run_dir))

        summary, straight_summary = e2e.read_summary(run_dir), e2e.read_summary(STRAIGHT)
        self.assertEqual(summary["steps"], TOTAL_STEPS)
        self.assertAlmostEqual(summary["epochs"], float(EPOCHS))
        self.assertIn("resumed_from", summary)
        self.assertEqual(summary["test_accuracy"], straight_summary["test_accuracy"])
        self.assertEqual(summary["test_loss"], straight_summary["test_loss"])

        # metrics.jsonl continues: both halves' step events, in order, without gaps or repeats
        events = e2e.read_metrics(run_dir)
        steps = [event["step"] for event in events if event["event"] == "step"]
        straight_steps = [event["step"] for event in e2e.read_metrics(STRAIGHT) if event["event"] == "step"]
        self.assertEqual(steps, straight_steps)
        self.assertEqual([event["epoch"] for event in events if event["event"] == "epoch"], [1, 2])
        # the resumed half logs the same losses as the straight run
        straight_losses = {e["step"]: e["loss"] for e in e2e.read_metrics(STRAIGHT) if e["event"] == "step"}
        for event in events:
            if event["event"] == "step" and event["step"] > STEPS_PER_EPOCH:
                self.assertEqual(event["loss"], straight_losses[event["step"]], event)

    def test_resume_after_a_kill_during_a_checkpoint_write(self):
        # What kill -9 (a node failure) leaves when it hits rank 0 while it writes the checkpoint of
        # step 16: step-8.h5, a temporary file cut short, metrics.jsonl up to step 16, no latest.h5
        # or summary. (A real kill lands at a random moment; tests the same state deterministically.)
        run_dir = os.path.join(WORK, "killed")
        first = train(run_dir, "--set", f"train.max_steps={2 * EVERY_STEPS}")
        self.assertEqual(first.returncode, 0, first.describe())
        checkpoints = os.path.join(run_dir, "checkpoints")
        with open(os.path.join(checkpoints, f"step-{2 * EVERY_STEPS}.h5"), "rb") as stream:
            cut_short = stream.read()[:4096]
        for name in (f"step-{2 * EVERY_STEPS}.h5", "latest.h5"):
            os.remove(os.path.join(checkpoints, name))
        os.remove(os.path.join(run_dir, "summary.json"))
        temporary = os.path.join(checkpoints, f"step-{2 * EVERY_STEPS}.h5.tmp-4242")
        with open(temporary, "wb") as stream:
            stream.write(cut_short)
        logged = [event["step"] for event in e2e.read_metrics(run_dir) if event["event"] == "step"]
        self.assertGreater(max(logged), EVERY_STEPS, "the killed run should have logged past its checkpoint")

        resumed = train(run_dir, "--resume", "auto")
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertIn(f"resumed from {checkpoints}/step-{EVERY_STEPS}.h5", resumed.stdout)
        self.assert_same_checkpoint(latest(STRAIGHT), latest(run_dir))
        self.assertFalse(os.path.exists(temporary), "the cut-short temporary file is still there")
        # the steps after the checkpoint are trained again: logged once, as in the straight run
        steps = [event["step"] for event in e2e.read_metrics(run_dir) if event["event"] == "step"]
        straight_steps = [event["step"] for event in e2e.read_metrics(STRAIGHT) if event["event"] == "step"]
        self.assertEqual(steps, straight_steps)
        self.assertEqual(e2e.read_summary(run_dir)["test_accuracy"], e2e.read_summary(STRAIGHT)["test_accuracy"])
        self.assert_tensorboard_shows_each_step_once(run_dir, f"{checkpoints}/step-{EVERY_STEPS}.h5")

    def assert_tensorboard_shows_each_step_once(self, run_dir, resumed_from):
        # The killed run's event file keeps its steps past the checkpoint (event files are
        # append-only); the resumed run's file starts with a SessionLog START at the step after the
        # checkpoint, and TensorBoard's rule for it leaves each step once, as in metrics.jsonl.
        files = e2e.read_tensorboard_files(run_dir)
        self.assertEqual(len(files), 2, [name for name, _ in files])
        starts = [[(event["step"], event.get("checkpoint_path", "")) for event in events
                   if event.get("session_status") == e2e.SESSION_START] for _, events in files]
        self.assertEqual(starts, [[(1, "")], [(EVERY_STEPS + 1, resumed_from)]])
        written = [event["step"] for _, events in files for event in events
                   if "step/loss" in event.get("scalars", {})]
        self.assertGreater(len(written), len(set(written)), "the killed run's file should repeat steps")
        shown = e2e.tensorboard_scalars(files)
        metrics = e2e.read_metrics(run_dir)
        for kind, key in (("step", "loss"), ("epoch", "train_loss"), ("eval", "test_accuracy")):
            expected = [(event["step"], event[key]) for event in metrics if event["event"] == kind]
            got = shown[f"{kind}/{key}"]
            self.assertEqual([step for step, _ in got], [step for step, _ in expected], kind)
            for (_, value), (_, logged) in zip(got, expected):
                self.assertAlmostEqual(value, logged, delta=1e-6 * max(1.0, abs(logged)), msg=kind)

    def test_resume_from_an_explicit_checkpoint(self):
        checkpoint = os.path.join(STRAIGHT, "checkpoints", f"step-{EVERY_STEPS}.h5")  # mid-epoch: step 8 of 16
        run_dir = os.path.join(WORK, "from-path")
        resumed = train(run_dir, "--resume", checkpoint)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assert_same_checkpoint(latest(STRAIGHT), latest(run_dir))
        summary = e2e.read_summary(run_dir)
        self.assertEqual(summary["steps"], TOTAL_STEPS)
        self.assertEqual(os.path.realpath(summary.get("resumed_from", "")), os.path.realpath(checkpoint))
        names = set(os.listdir(os.path.join(run_dir, "checkpoints")))
        self.assertEqual(names, {f"step-{step}.h5" for step in range(2 * EVERY_STEPS, TOTAL_STEPS + 1, EVERY_STEPS)}
                         | {"latest.h5"}, "the resumed run writes the checkpoints after its start only")
        # the first epoch's train_loss counts the steps before the resume too, as the straight run's
        self.assertEqual(epoch_losses(run_dir), epoch_losses(STRAIGHT))

    def test_ranks_given_different_resume_options_are_refused(self):
        # --resume comes from each rank's own command line: ranks that disagree took different paths
        # through the set-up's collectives and waited in them for ever.
        run_dir = os.path.join(WORK, "resume-disagrees")
        checkpoint = os.path.join(STRAIGHT, "checkpoints", f"step-{EVERY_STEPS}.h5")
        command = [e2e.PHALANX, "train", CONFIG_PATH, "--run-dir", run_dir]
        result = e2e.mpirun_per_rank([(1, command), (1, command + ["--resume", checkpoint])], timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn(f"rank 1: --resume: rank 1 was given '{checkpoint}' but rank 0 '(none)'", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), "nothing is trained or written")

    def test_ranks_that_open_different_files_under_one_name_are_refused(self):
        # A relative --resume path in each rank's own working directory: two different checkpoints.
        folders = [os.path.join(WORK, f"rank-{rank}-folder") for rank in range(2)]
        for folder, step in zip(folders, (EVERY_STEPS, 2 * EVERY_STEPS)):
            os.makedirs(folder, exist_ok=True)
            shutil.copyfile(os.path.join(STRAIGHT, "checkpoints", f"step-{step}.h5"), os.path.join(folder, "from.h5"))
        run_dir = os.path.join(WORK, "resume-other-files")
        command = shlex.join([e2e.PHALANX, "train", CONFIG_PATH, "--run-dir", run_dir, "--resume", "from.h5"])
        result = e2e.mpirun_per_rank([(1, ["sh", "-c", f"cd {shlex.quote(folder)} && exec {command}"])
                                      for folder in folders], timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("from.h5: rank 1 opened a checkpoint whose contents differ from the one rank 0 opened",
                      result.stderr)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")), "nothing is trained or written")

    def test_a_resume_mid_epoch_and_mid_log_interval_reports_the_straight_losses(self):
        # A kill after step 20 of a run that checkpoints every 6 steps: the resume starts at step 18,
        # step 2 of the second (last) epoch and halfway through the log interval of steps 17-20.
        every = 6
        run_dir = os.path.join(WORK, "killed-mid-interval")
        first = train(run_dir, "--set", "train.max_steps=20", "--set", f"checkpoint.every_steps={every}")
        self.assertEqual(first.returncode, 0, first.describe())
        for name in ("checkpoints/latest.h5", "summary.json"):
            os.remove(os.path.join(run_dir, name))
        checkpoint = os.path.join(run_dir, "checkpoints", "step-18.h5")
        with h5py.File(checkpoint, "r") as file:
            self.assertEqual(int(file["state/step_in_epoch"][()]), 18 - STEPS_PER_EPOCH)
            self.assertEqual(file["state/epoch_loss_sum"].shape, (RANKS,))
            # two steps of the interval are behind the checkpoint, on each rank
            self.assertEqual(list(file["state/interval_samples"][()]), [2 * BATCH] * RANKS)
            self.assertTrue(all(file["state/epoch_loss_sum"][()] > 0))

        resumed = train(run_dir, "--resume", "auto", "--set", f"checkpoint.every_steps={every}")
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertIn(f"resumed from {checkpoint}", resumed.stdout)
        self.assertNotIn("no running loss totals", resumed.stdout)
        self.assertEqual(epoch_losses(run_dir), epoch_losses(STRAIGHT))
        self.assertEqual(step_metrics(run_dir), step_metrics(STRAIGHT))
        summary, straight_summary = e2e.read_summary(run_dir), e2e.read_summary(STRAIGHT)
        for key in ("train_loss", "test_loss", "test_accuracy", "steps"):
            self.assertEqual(summary[key], straight_summary[key], key)
        # the resumed run's history holds the epochs it evaluated: the last one
        self.assertEqual(summary["history"][-1]["train_loss"], straight_summary["history"][-1]["train_loss"])

    def test_a_checkpoint_without_running_totals_still_resumes(self):
        # A checkpoint as written before the totals were stored, in the middle of the last epoch (and
        # at a log interval's end): it resumes to the same weights, says what it cannot restore, and
        # the epoch's train_loss covers the steps after the resume only.
        checkpoint = os.path.join(WORK, "step-24-without-totals.h5")
        with open(os.path.join(STRAIGHT, "checkpoints", "step-24.h5"), "rb") as source, \
                open(checkpoint, "wb") as copy:
            copy.write(source.read())
        with h5py.File(checkpoint, "r+") as file:
            for name in RUNNING_TOTALS:
                del file["state"][name]
        e2e.seal_checkpoint(checkpoint)  # edited on purpose
        run_dir = os.path.join(WORK, "without-totals")
        resumed = train(run_dir, "--resume", checkpoint)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertIn("no running loss totals", resumed.stdout)
        self.assert_same_checkpoint(latest(STRAIGHT), latest(run_dir))
        # steps 25-32 in two log intervals of equal size: their mean is the epoch's loss over them
        after_resume = [loss for step, (loss, _) in sorted(step_metrics(run_dir).items()) if step > 24]
        self.assertEqual(len(after_resume), 2)
        train_loss = epoch_losses(run_dir)[2]
        self.assertAlmostEqual(train_loss, sum(after_resume) / 2, delta=1e-12 * train_loss)
        self.assertNotEqual(train_loss, epoch_losses(STRAIGHT)[2])

    def test_the_comparison_would_see_lost_optimizer_state(self):
        # Guards the two tests above: resuming from a copy of the checkpoint whose momentum buffers
        # are zeroed must end with other weights, so "bitwise equal" really covers the optimizer.
        checkpoint = os.path.join(WORK, f"step-{EVERY_STEPS}-no-momentum.h5")
        with open(os.path.join(STRAIGHT, "checkpoints", f"step-{EVERY_STEPS}.h5"), "rb") as source, \
                open(checkpoint, "wb") as copy:
            copy.write(source.read())
        with h5py.File(checkpoint, "r+") as file:
            for name in e2e.datasets_under(file, "optimizer"):
                file["optimizer"][name][...] = 0.0
                # edited on purpose: without its checksum the dataset loads unverified
                del file["optimizer"][name].attrs["checksum"]
        e2e.seal_checkpoint(checkpoint)  # edited on purpose
        run_dir = os.path.join(WORK, "no-momentum")
        resumed = train(run_dir, "--resume", checkpoint)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        changed = e2e.read_checkpoint_arrays(latest(run_dir), ("model",))["model"]
        final = e2e.read_checkpoint_arrays(latest(STRAIGHT), ("model",))["model"]
        self.assertFalse(np.array_equal(changed["fc1/weight"], final["fc1/weight"]))

    def test_resume_auto_without_a_checkpoint_starts_fresh(self):
        run_dir = os.path.join(WORK, "fresh-auto")
        result = train(run_dir, "--resume", "auto", "--set", "train.max_steps=4")
        self.assertEqual(result.returncode, 0, result.describe())
        summary = e2e.read_summary(run_dir)
        self.assertEqual(summary["steps"], 4)
        self.assertNotIn("resumed_from", summary)

    def test_resume_on_other_ranks_with_another_global_batch_is_refused(self):
        # Another world size keeps the checkpoint's global batch (test_elastic_resume); local
        # batches that would change it are refused naming both world sizes and the key.
        checkpoint = os.path.join(STRAIGHT, "checkpoints", f"step-{EVERY_STEPS}.h5")
        run_dir = os.path.join(WORK, "other-world-size")
        result = e2e.mpirun(1, "train", CONFIG_PATH, "--run-dir", run_dir, "--resume", checkpoint,
                            "--set", f"distributed.local_batches=[{BATCH}]", timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        self.assertIn(f"step-{EVERY_STEPS}.h5", lines[0])
        for part in (f"written by {RANKS} ranks", "resumed on 1 ranks", "distributed.local_batches"):
            self.assertIn(part, lines[0])
        self.assertFalse(os.path.exists(run_dir), "a refused resume must not create its run directory")

    def test_resume_that_would_change_the_trajectory_is_refused(self):
        # A resumed run continues the same run: a new seed (other data order and masks) or batch
        # size is refused with exit 2 naming the checkpoint and the key, and nothing is written.
        checkpoint = os.path.join(STRAIGHT, "checkpoints", f"step-{EVERY_STEPS}.h5")
        for label, override, key in (("seed", "seed=99", "seed"),
                                     ("batch", "train.batch_size=16", "batch_size")):
            run_dir = os.path.join(WORK, f"changed-{label}")
            result = train(run_dir, "--resume", checkpoint, "--set", override, timeout=120)
            self.assertEqual(result.returncode, 2, result.describe())
            lines = result.error_lines()
            self.assertEqual(len(lines), 1, result.describe())
            self.assertIn(f"step-{EVERY_STEPS}.h5", lines[0])
            self.assertIn(key, lines[0])
            self.assertFalse(os.path.exists(run_dir), "a refused resume must not create its run directory")

    def test_a_resume_mid_epoch_on_a_split_of_another_size_is_refused(self):
        # data.path may change (the same data moved), but the epoch's permutation is a function of
        # the sample count: on 1088 samples (17 steps an epoch, so step 8 passed the step check) the
        # rest of the epoch would repeat some samples and skip others, and it went on unsaid.
        checkpoint = os.path.join(STRAIGHT, "checkpoints", f"step-{EVERY_STEPS}.h5")
        other = e2e.make_fashion_subset(WORK, TRAIN + 64, TEST)
        run_dir = os.path.join(WORK, "other-size")
        result = train(run_dir, "--resume", checkpoint, "--set", f"data.path={other}", timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        (line,) = result.error_lines()
        self.assertIn(f"step-{EVERY_STEPS}.h5: written at step {EVERY_STEPS} of epoch 1 of a training split of "
                      f"{TRAIN} samples, but this run's has {TRAIN + 64}", line)
        self.assertFalse(os.path.exists(run_dir))
        # The same data at another path resumes (a copy to local disk, say).
        copy = os.path.join(WORK, "moved.h5")
        with open(DATA, "rb") as source, open(copy, "wb") as target:
            target.write(source.read())
        moved = os.path.join(WORK, "moved-data")
        result = train(moved, "--resume", checkpoint, "--set", f"data.path={copy}", "--set",
                       f"train.max_steps={EVERY_STEPS + 2}", timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())

    def test_more_epochs_may_extend_a_finished_run(self):
        run_dir = os.path.join(WORK, "extended")
        result = train(run_dir, "--resume", latest(STRAIGHT), "--set", "train.epochs=3")
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertEqual(e2e.read_summary(run_dir)["steps"], TOTAL_STEPS + STEPS_PER_EPOCH)

    def test_fewer_epochs_than_the_checkpoint_stands_in_are_refused(self):
        # The straight run's step-24 checkpoint is in epoch 2: a resume with train.epochs 1 has no
        # epoch to take its place in. Exit 2 naming the key, nothing written (it used to fail an
        # internal check in the loader after config.yaml was rewritten).
        checkpoint = os.path.join(STRAIGHT, "checkpoints", f"step-{3 * EVERY_STEPS}.h5")
        run_dir = os.path.join(WORK, "fewer-epochs")
        result = train(run_dir, "--resume", checkpoint, "--set", "train.epochs=1", timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        self.assertIn(f"step-{3 * EVERY_STEPS}.h5", lines[0])
        self.assertIn("train.epochs of at least 2", lines[0])
        self.assertFalse(os.path.exists(run_dir), "a refused resume must not create its run directory")

    def test_a_finished_run_resumed_again_keeps_its_summary(self):
        # A requeued job, or its command run twice: nothing is left to train, and the summary and the
        # metrics stand as they were (no second evaluation of the last step, no losses of zero).
        run_dir = os.path.join(WORK, "finished-twice")
        first = train(run_dir, "--set", "train.max_steps=4")
        self.assertEqual(first.returncode, 0, first.describe())
        with open(os.path.join(run_dir, "summary.json")) as stream:
            summary = stream.read()
        metrics = e2e.read_metrics(run_dir)
        again = train(run_dir, "--resume", "auto", "--set", "train.max_steps=4")
        self.assertEqual(again.returncode, 0, again.describe())
        self.assertIn("at step 4: nothing left to train, the run ended there", again.stdout)
        with open(os.path.join(run_dir, "summary.json")) as stream:
            self.assertEqual(stream.read(), summary)
        self.assertEqual(e2e.read_metrics(run_dir), metrics)

    def test_a_resume_from_an_earlier_checkpoint_sets_the_later_ones_aside(self):
        # --resume PATH with a checkpoint of the same run directory rolls the run back: the
        # checkpoints past it belong to the abandoned run and go to checkpoints/abandoned-*, so a
        # later --resume auto continues the rolled-back run, not the abandoned one.
        run_dir = os.path.join(WORK, "rolled-back")
        first = train(run_dir, "--set", f"train.max_steps={3 * EVERY_STEPS}")
        self.assertEqual(first.returncode, 0, first.describe())
        folder = os.path.join(run_dir, "checkpoints")
        back = train(run_dir, "--resume",
                     os.path.join(folder, f"step-{EVERY_STEPS}.h5"),
                     "--set", f"train.max_steps={EVERY_STEPS + 2}")
        self.assertEqual(back.returncode, 0, back.describe())
        self.assertIn(f"resumed at step {EVERY_STEPS}: the run's later checkpoints", back.stdout)
        aside = [name for name in os.listdir(folder) if name.startswith("abandoned-")]
        self.assertEqual(len(aside), 1, os.listdir(folder))
        self.assertEqual(set(os.listdir(os.path.join(folder, aside[0]))),
                         {f"step-{2 * EVERY_STEPS}.h5", f"step-{3 * EVERY_STEPS}.h5", "latest.h5"})
        with h5py.File(latest(run_dir), "r") as file:
            self.assertEqual(int(file.attrs["step"]), EVERY_STEPS + 2)
        onward = train(run_dir, "--resume", "auto", "--set", f"train.max_steps={EVERY_STEPS + 4}")
        self.assertEqual(onward.returncode, 0, onward.describe())
        self.assertIn(f"latest.h5 at epoch 1, step {EVERY_STEPS + 2}", onward.stdout + onward.stderr)
        self.assertEqual(e2e.read_summary(run_dir)["steps"], EVERY_STEPS + 4)

    def test_a_failure_on_one_rank_mid_run_ends_the_job(self):
        # latest.h5 cannot be written (a folder is in the way) after training: rank 0 fails while
        # rank 1 waits in a collective. The job must end with rank 0's message, not hang.
        run_dir = os.path.join(WORK, "blocked-latest")
        os.makedirs(os.path.join(run_dir, "checkpoints", "latest.h5", "in-the-way"))
        result = train(run_dir, "--set", "train.max_steps=2", timeout=120)
        self.assertNotEqual(result.returncode, 0, result.describe())
        self.assertIn("latest.h5", result.stderr, result.describe())
        self.assertIn("rank 0", result.stderr, result.describe())


if __name__ == "__main__":
    e2e.main()
