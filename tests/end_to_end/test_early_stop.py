"""End-to-end: train.early_stop ends a run cleanly and checkpoint.keep_best keeps best.h5, on one
rank and a tiny synthetic dataset (a few seconds). A min_delta no accuracy can exceed makes every
evaluation after the first "no improvement", so with patience 2 the run of 10 epochs stops after
epoch 3: final latest.h5 at that step, an early_stop event, summary.json saying so; best.h5 (by
the training loss, which falls) is sealed, survives checkpoint.keep, holds the weight average and
is not what --resume auto takes; the average's metrics reach the eval events and TensorBoard."""

import os
import shutil
import unittest

import e2e_common as e2e
from e2e_common import h5py

TRAIN, BATCH, EPOCHS = 64, 16, 10
STEPS_PER_EPOCH = TRAIN // BATCH  # 4
STOP_EPOCH = 3  # epoch 1 sets the best; epochs 2 and 3 do not improve on it by 2.0


def setUpModule():
    global WORK, RUN_DIR, RESULT
    e2e.require_binary()
    WORK = e2e.work_dir("early_stop")
    data = e2e.make_synth(os.path.join(WORK, "tiny.h5"), train=TRAIN, test=32, height=8, width=8, channels=1)
    config = e2e.base_config(data, name="early-stop", epochs=EPOCHS, batch_size=BATCH, preset="lenet5",
                             every_steps=1, keep=1, log_every_steps=STEPS_PER_EPOCH)
    config["model"] = {"layers": [{"type": "flatten"}, {"type": "linear", "out_features": 10}]}
    config["train"]["ema"] = {"decay": 0.9}
    config["train"]["early_stop"] = {"metric": "ema_test_accuracy", "patience": 2, "min_delta": 2.0}
    config["checkpoint"]["keep_best"] = "train_loss"
    RUN_DIR = os.path.join(WORK, "run")
    shutil.rmtree(RUN_DIR, ignore_errors=True)
    RESULT = e2e.phalanx("train", e2e.write_config(os.path.join(WORK, "early-stop.yaml"), config),
                         "--run-dir", RUN_DIR, timeout=120)


class EarlyStopTest(unittest.TestCase):
    def test_the_run_stops_cleanly_after_patience_evaluations(self):
        self.assertEqual(RESULT.returncode, 0, RESULT.describe())
        self.assertIn(f"early stop after epoch {STOP_EPOCH}: ema_test_accuracy has not improved", RESULT.stdout)
        summary = e2e.read_summary(RUN_DIR)
        self.assertEqual(summary["steps"], STOP_EPOCH * STEPS_PER_EPOCH)
        self.assertEqual(summary["early_stop"]["stopped_early"], True)
        self.assertEqual(summary["early_stop"]["stopped_after_epoch"], STOP_EPOCH)
        self.assertEqual(summary["early_stop"]["best_epoch"], 1)
        events = e2e.read_metrics(RUN_DIR)
        self.assertEqual([event["epoch"] for event in events if event["event"] == "eval"],
                         list(range(1, STOP_EPOCH + 1)))
        stops = [event for event in events if event["event"] == "early_stop"]
        self.assertEqual(len(stops), 1)
        self.assertEqual((stops[0]["epoch"], stops[0]["evaluations_since_best"]), (STOP_EPOCH, 2))
        # The weight average's metrics beside the weights', in TensorBoard as well.
        scalars = e2e.tensorboard_scalars(e2e.read_tensorboard_files(RUN_DIR))
        evals = [event for event in events if event["event"] == "eval"]
        self.assertEqual([value for _, value in scalars["eval/ema_test_accuracy"]],
                         [event["ema_test_accuracy"] for event in evals])
        self.assertIn("eval/ema_test_loss", scalars)
        with h5py.File(os.path.join(RUN_DIR, "checkpoints", "latest.h5"), "r") as file:
            self.assertEqual(int(file["state/global_step"][()]), STOP_EPOCH * STEPS_PER_EPOCH)
            self.assertEqual(int(file["state/early_stop/evaluations_since_best"][()]), 2)

    def test_best_checkpoint_is_kept_sealed_and_not_resumed_from(self):
        self.assertEqual(RESULT.returncode, 0, RESULT.describe())
        best = os.path.join(RUN_DIR, "checkpoints", "best.h5")
        summary = e2e.read_summary(RUN_DIR)["best_checkpoint"]
        self.assertEqual((summary["metric"], summary["path"]), ("train_loss", best))
        # keep: 1 left one step-<N>.h5 beside latest.h5 and best.h5.
        self.assertEqual(sorted(os.listdir(os.path.dirname(best))),
                         ["best.h5", "latest.h5", f"step-{STOP_EPOCH * STEPS_PER_EPOCH}.h5"])
        self.assertEqual(e2e.phalanx("checkpoint", "verify", best).returncode, 0)
        with h5py.File(best, "r") as file:
            self.assertEqual(int(file["state/global_step"][()]), summary["epoch"] * STEPS_PER_EPOCH)
            self.assertAlmostEqual(float(file["state/keep_best/best"][()]), summary["value"], places=12)
            self.assertIn("ema", file)
        # The training loss fell every epoch, so the last epoch's end wrote best.h5 and step-12.h5.
        # best.h5 comes first: a kill between the two must not leave a checkpoint whose keep_best
        # state holds a best that best.h5 does not (it would stay one best behind for good).
        self.assertEqual(summary["epoch"], STOP_EPOCH)
        step_file = os.path.join(RUN_DIR, "checkpoints", f"step-{STOP_EPOCH * STEPS_PER_EPOCH}.h5")
        # (Equal where the file system's clock ticks coarser than the two writes.)
        self.assertLessEqual(os.stat(best).st_mtime_ns, os.stat(step_file).st_mtime_ns)
        # --resume auto takes the newest step; best.h5 (an earlier one, or the same) is never chosen.
        # (In a copy: the other test reads the run as it ended.)
        copy = os.path.join(WORK, "resumed")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(RUN_DIR, copy)
        resumed = e2e.phalanx("train", os.path.join(WORK, "early-stop.yaml"), "--run-dir", copy,
                              "--resume", "auto", timeout=120)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertRegex(resumed.stdout, rf"resumed from \S+/(latest|step-{STOP_EPOCH * STEPS_PER_EPOCH})\.h5 ")
        # A run that had stopped stays stopped: no further epoch is trained.
        self.assertEqual(e2e.read_summary(copy)["steps"], STOP_EPOCH * STEPS_PER_EPOCH)

    def test_the_stopped_run_resumed_again_keeps_its_summary(self):
        # A requeued job of a run that early stopping ended: nothing is left to train, and its
        # summary and metrics stand (it used to evaluate again and write a summary of zero losses).
        self.assertEqual(RESULT.returncode, 0, RESULT.describe())
        copy = os.path.join(WORK, "run-again")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(RUN_DIR, copy)
        with open(os.path.join(copy, "summary.json")) as stream:
            summary = stream.read()
        metrics = e2e.read_metrics(copy)
        again = e2e.phalanx("train", os.path.join(WORK, "early-stop.yaml"), "--run-dir", copy, "--resume", "auto",
                            timeout=120)
        self.assertEqual(again.returncode, 0, again.describe())
        self.assertIn("nothing left to train", again.stdout)
        with open(os.path.join(copy, "summary.json")) as stream:
            self.assertEqual(stream.read(), summary)
        self.assertEqual(e2e.read_metrics(copy), metrics)

    def test_a_resume_that_watches_another_metric_trains_on(self):
        # The stopped run's count is of ema_test_accuracy: a resume that stops on another metric
        # starts counting afresh (MetricWatch::restore), so it is not finished and trains on.
        self.assertEqual(RESULT.returncode, 0, RESULT.describe())
        copy = os.path.join(WORK, "run-other-metric")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(RUN_DIR, copy)
        again = e2e.phalanx("train", os.path.join(WORK, "early-stop.yaml"), "--run-dir", copy, "--resume", "auto",
                            "--set", "train.early_stop.metric=test_loss", "--set", "train.early_stop.min_delta=0",
                            "--set", "train.early_stop.patience=100", timeout=120)
        self.assertEqual(again.returncode, 0, again.describe())
        self.assertNotIn("nothing left to train", again.stdout)
        self.assertEqual(e2e.read_summary(copy)["steps"], EPOCHS * STEPS_PER_EPOCH, again.describe())


if __name__ == "__main__":
    e2e.main()
