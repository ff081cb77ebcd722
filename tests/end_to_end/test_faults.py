"""End-to-end: faults that lose nothing (docs/HARDENING.md). The disk fills during a checkpoint (a
small tmpfs as the run directory): the run stops naming the file and "no space left on device",
every checkpoint left under its real name loads, and `--resume auto` after space is freed
continues from the newest. A kill at random moments of a run that checkpoints every step never
leaves a half file under a real name. A dataset truncated, or one chunk of it damaged, under a
streaming run stops it with exit status 2 naming the file, the dataset and the samples; a file
system that fails under it (reads answer EIO) stops it with exit status 1 naming the file. A
learning rate far too high stops the run at the first step whose gradients are not finite, naming
the step and the layer, with every checkpoint finite (train.nonfinite: stop); with
train.nonfinite: skip two ranks skip those updates together and count them, and in a sweep the
diverged trial fails alone while its 2-rank group goes on. Resource limits: activations that
cannot fit in the memory a CPU rank may use, or a model whose weights and optimizer state alone
cannot, a YAML alias bomb of layers, a YAML text whose value begins with a ',' and a sweep grid
of 10^9 points are refused at once, in bounded memory."""

import os
import random
import re
import sqlite3
import resource
import signal
import subprocess
import time
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py

LAYERS = [{"type": "conv", "name": "conv", "out_channels": 2, "kernel": 3, "padding": 1},
          {"type": "relu"}, {"type": "flatten"}, {"type": "linear", "name": "fc", "out_features": 3}]


def setUpModule():
    global WORK, DATA
    WORK = e2e.work_dir("faults")
    DATA = e2e.make_synth(os.path.join(WORK, "synth.h5"), train=256, test=32, height=8, width=8, classes=3)


def small_config(name, data=None, **train):
    config = e2e.base_config(data or DATA, name=name, batch_size=4, every_steps=1, keep=3, log_every_steps=1)
    del config["model"]["preset"]
    config["model"]["layers"] = LAYERS
    config["train"].update(train)
    return e2e.write_config(os.path.join(WORK, name + ".yaml"), config)


def checkpoint_problems(run_dir):
    """Every file under a checkpoint's real name (step-N.h5, latest.h5) must open and hold the
    model; temporary names may be anything. Returns the problems, empty when none."""
    problems, folder = [], os.path.join(run_dir, "checkpoints")
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not (name.startswith("step-") or name.startswith("latest")) or not name.endswith(".h5"):
            continue
        try:
            with h5py.File(os.path.join(folder, name), "r") as file:
                if not e2e.datasets_under(file, "model"):
                    problems.append(f"{name}: no model datasets")
        except OSError as error:
            problems.append(f"{name}: {error}")
    return problems


# CTest sets the sanitizer options only for a sanitizer build of phalanx.
SANITIZED = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ


def in_memory_limit(gigabytes):
    """An address-space limit for the child; none under a sanitizer, whose runtime reserves
    terabytes of address space for its shadow memory at start (it would abort before main). The
    refusals are then checked by exit status and message alone."""
    if SANITIZED:
        return None
    limit = int(gigabytes * 2**30)
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class FaultTest(unittest.TestCase):
    def small_disk(self, name, size):
        """A tmpfs of `size` mounted at WORK/name for this test (skipped where none can be mounted)."""
        mount_point = os.path.join(WORK, name)
        os.makedirs(mount_point, exist_ok=True)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mount_point],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            self.skipTest(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
        self.addCleanup(subprocess.run, ["umount", mount_point])
        return mount_point

    def test_disk_full_during_a_checkpoint_keeps_the_previous_ones(self):
        # 120 KiB: the config, the logs and three checkpoints of this model (34 KiB each) fit, a
        # fourth does not.
        mount_point = self.small_disk("small-disk", "120k")
        run_dir = os.path.join(mount_point, "run")
        config = small_config("disk_full", epochs=1)
        result = e2e.phalanx("train", config, "--run-dir", run_dir, timeout=300)
        self.assertEqual(result.returncode, 1, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        self.assertIn(os.path.join(run_dir, "checkpoints", "step-"), lines[0], result.describe())
        self.assertIn("no space left on device", lines[0], result.describe())
        print(f"\n    {lines[0]}", end=" ")
        kept = sorted(name for name in os.listdir(os.path.join(run_dir, "checkpoints")) if name.startswith("step-"))
        self.assertTrue(kept, "no checkpoint was kept")
        self.assertEqual(checkpoint_problems(run_dir), [])
        newest = max(int(name[len("step-"):-len(".h5")]) for name in kept)
        # Space freed (the tmpfs grows): the same command with --resume auto goes on from the newest.
        subprocess.run(["mount", "-o", "remount,size=4m", mount_point], check=True)
        resumed = e2e.phalanx("train", config, "--run-dir", run_dir, "--resume", "auto", timeout=300)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertIn(f"step-{newest}.h5", resumed.stdout + resumed.stderr, resumed.describe())
        # 256 samples, batch 4: the epoch ends at step 64, and its checkpoint loads.
        self.assertIn("step-64.h5", checkpoint_names(run_dir))
        self.assertEqual(checkpoint_problems(run_dir), [])

    def test_disk_full_during_an_import_says_so_and_leaves_nothing(self):
        # HDF5's exit handler crashed (status 139) on the file whose writes had failed, after the
        # message; now the status is 1 and the message gives the system's reason.
        mount_point = self.small_disk("small-import-disk", "200k")
        output = os.path.join(mount_point, "made", "synth.h5")
        result = e2e.phalanx("data", "synth", "-o", output, "--train", 2000, "--test", 100, timeout=120)
        self.assertEqual(result.returncode, 1, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        self.assertIn(f"{output}: no space left on device (writing /train/images failed; nothing was written)",
                      lines[0])
        self.assertEqual(os.listdir(mount_point), [], "no temporary file and no folder it made are left")

    def test_kill_at_any_moment_never_leaves_a_half_checkpoint(self):
        config = small_config("killed", epochs=2)
        chooser = random.Random(21)
        for attempt in range(6):
            run_dir = os.path.join(WORK, f"killed-{attempt}")
            process = subprocess.Popen([e2e.PHALANX, "train", config, "--run-dir", run_dir],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       env=e2e.child_environment())
            # Wait for the first checkpoint, then kill at a random moment of the steps that
            # follow: each step writes one, so most kills land in or next to a write.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not checkpoint_names(run_dir) and process.poll() is None:
                time.sleep(0.02)
            time.sleep(chooser.uniform(0.0, 1.5))
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
            self.assertEqual(checkpoint_problems(run_dir), [], f"attempt {attempt}")

    def stream(self, name, data, checkpoint_every_steps, environment=None):
        """Starts a 3-epoch training run that streams `data` (data.cache: none, a 1 MB shuffle
        window), checkpointing every `checkpoint_every_steps` steps (0: never); returns the process,
        its output piped, and the run directory."""
        config = small_config(name, data=data, epochs=3)
        run_dir = os.path.join(WORK, name)
        process = subprocess.Popen([e2e.PHALANX, "train", config, "--run-dir", run_dir, "--set", "data.cache=none",
                                    "--set", "data.stream_window_mb=1",
                                    "--set", f"checkpoint.every_steps={checkpoint_every_steps}"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=environment or e2e.child_environment())
        self.addCleanup(process.kill)
        return process, run_dir

    def assert_stopped_naming(self, process, status, culprits):
        """Waits for a run to end with exit status `status` and one error line naming every culprit."""
        stdout, stderr = process.communicate(timeout=300)
        self.assertEqual(process.returncode, status, stdout[-2000:] + stderr[-2000:])
        lines = [line for line in stderr.splitlines() if line.startswith("phalanx: error")]
        self.assertEqual(len(lines), 1, stderr)
        for culprit in culprits:
            self.assertIn(culprit, lines[0])
        print(f"\n    {lines[0]}", end=" ")

    def assert_checkpoints_before_the_fault_are_whole(self, run_dir):
        # keep: 3, every 20 steps from step 20 on: all there up to the fault, each loadable.
        self.assertTrue(checkpoint_names(run_dir), "no checkpoint before the fault")
        self.assertEqual(checkpoint_problems(run_dir), [])

    def test_dataset_truncated_while_streaming_is_an_input_error(self):
        data = e2e.make_synth(os.path.join(WORK, "stream.h5"), train=8192, test=32, height=16, width=16,
                              channels=3, classes=3)
        process, _ = self.stream("truncated", data, checkpoint_every_steps=0)
        for line in process.stdout:
            if "step" in line and "loss" in line:
                break
        with open(data, "r+b") as file:  # cut the file in half under the running job
            file.truncate(os.path.getsize(data) // 2)
        self.assert_stopped_naming(process, 2, (data, "/train/images[", "shrank"))

    def test_chunk_damaged_while_streaming_is_an_input_error_naming_its_samples(self):
        data = os.path.join(WORK, "damaged.h5")
        synth = e2e.phalanx("data", "synth", "-o", data, "--train", 4096, "--test", 32, "--height", 16, "--width", 16,
                            "--channels", 3, "--classes", 3, "--chunk", 512, timeout=120)
        self.assertEqual(synth.returncode, 0, synth.describe())
        with h5py.File(data, "r") as file:  # where the sixth chunk of the training images lies
            chunk = file["train/images"].id.get_chunk_info(5)
        process, run_dir = self.stream("damaged", data, checkpoint_every_steps=20)
        wait_for_a_checkpoint(process, run_dir)
        with open(data, "r+b") as file:  # flip bytes in the middle of the chunk, on disk, under the job
            file.seek(chunk.byte_offset + chunk.size // 2)
            damaged = bytes(byte ^ 0xFF for byte in file.read(64))
            file.seek(chunk.byte_offset + chunk.size // 2)
            file.write(damaged)
        self.assert_stopped_naming(process, 2, (data, "/train/images[2560:3072]", "Fletcher-32 checksum"))
        self.assert_checkpoints_before_the_fault_are_whole(run_dir)

    def test_file_system_failing_under_a_streaming_run_names_the_file(self):
        environment = e2e.fault_library(self, WORK)
        data = e2e.make_synth(os.path.join(WORK, "failing.h5"), train=4096, test=32, height=16, width=16,
                              channels=3, classes=3)
        trigger = os.path.join(WORK, "file-system-gone")
        if os.path.exists(trigger):
            os.remove(trigger)
        environment.update({"PHALANX_TEST_FAILING_FILE": os.path.realpath(data), "PHALANX_TEST_FAILURE_TRIGGER": trigger})
        process, run_dir = self.stream("failing", data, checkpoint_every_steps=20, environment=environment)
        wait_for_a_checkpoint(process, run_dir)
        open(trigger, "w").close()  # from now on every read of the dataset fails with EIO
        self.assert_stopped_naming(process, 1, (data, "/train/", "Input/output error", "--resume auto"))
        self.assert_checkpoints_before_the_fault_are_whole(run_dir)

    def test_nonfinite_loss_stops_at_its_step_and_keeps_the_last_good_checkpoint(self):
        config = small_config("diverged", epochs=1)
        run_dir = os.path.join(WORK, "diverged")
        # 1e30: the first update leaves huge but finite weights; the next forward overflows.
        result = e2e.phalanx("train", config, "--run-dir", run_dir, "--set", "optimizer.learning_rate=1e30")
        self.assertEqual(result.returncode, 1, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        found = re.search(r"step (\d+): the loss or its gradients are not finite; the first layer in backward "
                          r"order with non-finite gradients: fc/(weight|bias)", lines[0])
        self.assertIsNotNone(found, lines[0])
        step = int(found.group(1))
        print(f"\n    {lines[0]}", end=" ")
        self.assertGreater(step, 1)
        # Every step checkpoints: the one before the failing step is the last, and it is finite.
        self.assertIn(f"the last good checkpoint, {run_dir}/checkpoints/step-{step - 1}.h5, is kept", lines[0])
        steps = sorted(int(name[len("step-"):-len(".h5")]) for name in checkpoint_names(run_dir))
        self.assertEqual(steps[-1], step - 1)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints", "latest.h5")))
        for kept in steps:
            arrays = e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", f"step-{kept}.h5"))
            for group in arrays.values():
                for name, value in group.items():
                    self.assertTrue(np.isfinite(value).all(), f"step-{kept}.h5: {name}")
        # A rate that is itself infinite in float makes the weights inf at the first update: that
        # checkpoint is refused, so nothing non-finite is ever written.
        run_dir = os.path.join(WORK, "diverged-weights")
        result = e2e.phalanx("train", config, "--run-dir", run_dir, "--set", "optimizer.learning_rate=1e39")
        self.assertEqual(result.returncode, 1, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        self.assertIn("step 1: the weights are not finite after the update", lines[0])
        self.assertIn("step-1.h5 is not written", lines[0])
        self.assertIn("no checkpoint was written before it", lines[0])
        self.assertEqual(checkpoint_names(run_dir), [])

    def test_nonfinite_skip_policy_skips_on_every_rank_and_counts(self):
        config = small_config("skipping", epochs=1, max_steps=8, nonfinite="skip")
        run_dir = os.path.join(WORK, "skipping")
        result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--set", "optimizer.learning_rate=1e30",
                            "--set", "checkpoint.keep=20")
        self.assertEqual(result.returncode, 0, result.describe())
        skips = [int(line.split(":")[0].split()[-1]) for line in result.stdout.splitlines()
                 if "update skipped on every rank (train.nonfinite: skip)" in line]
        summary = e2e.read_summary(run_dir)
        self.assertGreater(len(skips), 0, result.describe())
        self.assertEqual(summary["nonfinite_skipped_steps"], len(skips))
        self.assertEqual(skips, list(range(skips[0], 9)), "once the weights diverged every later step skips")
        steps = [event for event in e2e.read_metrics(run_dir) if event["event"] == "step"]
        self.assertEqual(steps[-1]["skipped_steps"], len(skips))
        # No update after the first skip: the weights stay those of the step before it.
        folder = os.path.join(run_dir, "checkpoints")
        before = e2e.read_checkpoint_arrays(os.path.join(folder, f"step-{skips[0] - 1}.h5"))["model"]
        after = e2e.read_checkpoint_arrays(os.path.join(folder, "latest.h5"))["model"]
        self.assertEqual(sorted(before), sorted(after))
        for name in before:
            np.testing.assert_array_equal(before[name], after[name], err_msg=name)
        with h5py.File(os.path.join(folder, "latest.h5"), "r") as file:
            self.assertEqual(int(file["state/nonfinite_skipped_steps"][()]), len(skips))

    def test_a_diverged_trial_fails_alone_in_a_two_rank_sweep_group(self):
        # One worker group of both ranks: the trial at 1e30 stops on both together, is recorded as
        # failed with its message, and the group trains the next trial (before, any error in a
        # group of several ranks aborted the whole sweep).
        base = small_config("sweep_base", epochs=1)
        path = os.path.join(WORK, "diverging_sweep.yaml")
        with open(path, "w") as file:
            file.write(f"name: diverging\nconfig: {base}\nsearch: grid\nscheduler: full\nmetric: test_accuracy\n"
                       f"budget: {{unit: samples, max: 48}}\nworkers: {{cpu_ranks_per_trial: 2}}\n"
                       f"space:\n  optimizer.learning_rate: {{type: choice, values: [1.0e+30, 0.01]}}\n")
        directory = os.path.join(WORK, "diverging-sweep")
        result = e2e.mpirun(2, "sweep", path, "--sweep-dir", directory, timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        failed = [line for line in result.stdout.splitlines() if " failed on worker " in line]
        self.assertEqual(len(failed), 1, result.describe())
        self.assertIn("the loss or its gradients are not finite", failed[0])
        connection = sqlite3.connect(os.path.join(directory, "sweep.db"))
        statuses = sorted(row[0] for row in connection.execute("SELECT status FROM jobs"))
        connection.close()
        self.assertEqual(statuses, ["done", "failed"], result.describe())

    def refused_in_bounded_memory(self, name, config):
        """Trains `config` under a 4 GiB address-space limit, which must refuse it at start with
        exit status 2 and one error line, without training; returns the line."""
        path = e2e.write_config(os.path.join(WORK, name + ".yaml"), config)
        start = time.monotonic()
        completed = subprocess.run([e2e.PHALANX, "train", path, "--run-dir", os.path.join(WORK, name)],
                                   capture_output=True, text=True, timeout=120, env=e2e.child_environment(),
                                   preexec_fn=in_memory_limit(4))
        self.assertEqual(completed.returncode, 2, completed.stdout[-2000:] + completed.stderr[-2000:])
        lines = [line for line in completed.stderr.splitlines() if line.startswith("phalanx: error")]
        self.assertEqual(len(lines), 1, completed.stderr)
        print(f"\n    {lines[0]}", end=" ")
        self.assertNotIn("loss", completed.stdout, "it trained")
        self.assertLess(time.monotonic() - start, 30)
        return lines[0]

    def test_a_model_or_activations_that_do_not_fit_are_refused_before_training(self):
        if SANITIZED:
            self.skipTest("the refusal is of a 4 GiB address-space limit, which a sanitizer cannot run under")
        # Two 256-channel convolutions at 32x32 and a local batch of 1024: about 4 GiB of
        # activations, under a 4 GiB address-space limit of which the process maps about 1 GiB.
        data = e2e.make_synth(os.path.join(WORK, "wide.h5"), train=1024, test=32, height=32, width=32,
                              channels=3, classes=3)
        config = e2e.base_config(data, name="too_wide", batch_size=1024, max_steps=1)
        del config["model"]["preset"]
        config["model"]["layers"] = [{"type": "conv", "out_channels": 256, "kernel": 3, "padding": 1},
                                     {"type": "relu"},
                                     {"type": "conv", "out_channels": 256, "kernel": 3, "padding": 1},
                                     {"type": "relu"}, {"type": "global_avg_pool"}, {"type": "flatten"},
                                     {"type": "linear", "out_features": 3}]
        line = self.refused_in_bounded_memory("too_wide", config)
        for culprit in ("train.batch_size: a training step at a local batch of 1024 needs about", "GiB",
                        "ulimit -v", "train.accumulation_steps"):
            self.assertIn(culprit, line)
        # A small model whose loader ring of 1024 prefetched batches is what does not fit: the
        # message names data.prefetch_batches (it named train.batch_size and accumulation, no cure).
        config = e2e.base_config(data, name="deep_ring", batch_size=1024, max_steps=1)
        del config["model"]["preset"]
        config["model"]["layers"] = [{"type": "flatten"}, {"type": "linear", "out_features": 3}]
        config["data"]["prefetch_batches"] = 1024
        line = self.refused_in_bounded_memory("deep_ring", config)
        for culprit in ("data.prefetch_batches: the loader's ring of 1024 prefetched batches", "GiB", "ulimit -v",
                        "lower data.prefetch_batches"):
            self.assertIn(culprit, line)
        # 3.4e9 parameters (a 64 -> 5e7 -> 3 linear stack): 51 GiB of weights, gradients and AdamW's
        # two moments. Refused before the model is built: its first allocation would fail under the
        # limit with the allocator's error and exit status 1.
        config = e2e.base_config(DATA, name="too_large", batch_size=4, max_steps=1)
        del config["model"]["preset"]
        config["model"]["layers"] = [{"type": "flatten"}, {"type": "linear", "out_features": 50_000_000},
                                     {"type": "linear", "out_features": 3}]
        line = self.refused_in_bounded_memory("too_large", config)
        for culprit in ("model.layers: the model's 3400000003 parameters need about 50.66 GiB",
                        "weights, their gradients and the optimizer state (optimizer.type adamw: exp_avg, "
                        "exp_avg_sq)",
                        "ulimit -v"):
            self.assertIn(culprit, line)

    def test_yaml_alias_bomb_of_layers_is_refused_in_bounded_memory(self):
        layers = "    - &b0 {type: relu}\n" + "".join(
            f"    - &b{level} {{type: residual, main: [{', '.join([f'*b{level - 1}'] * 10)}]}}\n"
            for level in range(1, 9))
        path = os.path.join(WORK, "alias_bomb.yaml")
        with open(path, "w") as file:
            file.write(f"name: bomb\ndata: {{path: {DATA}}}\nmodel:\n  layers:\n{layers}")
        self.assert_train_refused_at_once_in_bounded_memory(path, "bomb", "more than 10000 layers")

    def test_yaml_comma_where_a_value_begins_is_refused_in_bounded_memory(self):
        # yaml-cpp 0.7 reads it as an endless run of empty documents (the config fuzzer's
        # out-of-memory finding); under the address-space limit that ended in std::bad_alloc.
        path = os.path.join(WORK, "stray_comma.yaml")
        with open(path, "w") as file:
            file.write(f",\nname: comma\ndata: {{path: {DATA}}}\nmodel: {{preset: lenet5}}\n")
        self.assert_train_refused_at_once_in_bounded_memory(
            path, "comma", "stray_comma.yaml: line 1, column 1: YAML syntax error: unexpected ','")

    def assert_train_refused_at_once_in_bounded_memory(self, config_path, run_name, expected):
        """`train` of the config exits with status 2 and `expected` on stderr within 30 s, under a
        4 GiB address-space limit (none under a sanitizer)."""
        start = time.monotonic()
        completed = subprocess.run([e2e.PHALANX, "train", config_path, "--run-dir", os.path.join(WORK, run_name)],
                                   capture_output=True, text=True, timeout=60, env=e2e.child_environment(),
                                   preexec_fn=in_memory_limit(4))
        self.assertEqual(completed.returncode, 2, completed.stderr)
        self.assertIn(expected, completed.stderr)
        self.assertLess(time.monotonic() - start, 30)

    def test_sweep_grid_of_a_billion_points_is_refused(self):
        base = small_config("grid_base")
        choices = "[" + ", ".join(str(value / 10) for value in range(1, 11)) + "]"
        path = os.path.join(WORK, "billion.yaml")
        with open(path, "w") as file:
            file.write(f"name: billion\nconfig: {base}\nsearch: grid\nscheduler: full\nbudget: {{max: 1}}\nspace:\n"
                       f"  optimizer.learning_rate: {{type: choice, values: {choices}}}\n"
                       f"  optimizer.weight_decay: {{type: choice, values: {choices}}}\n"
                       f"  optimizer.beta1: {{type: choice, values: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9]}}\n"
                       f"  train.batch_size: {{type: int, low: 1, high: 1000}}\n"
                       f"  train.log_every_steps: {{type: int, low: 1, high: 1000}}\n")
        completed = subprocess.run([e2e.MPIEXEC, *e2e.MPI_FLAGS, "-np", "1", e2e.PHALANX, "sweep", path,
                                    "--sweep-dir", os.path.join(WORK, "billion")],
                                   capture_output=True, text=True, timeout=120, env=e2e.child_environment(),
                                   preexec_fn=in_memory_limit(4))
        self.assertEqual(completed.returncode, 2, completed.stderr)
        lines = [line for line in completed.stderr.splitlines() if line.startswith("phalanx: error")]
        self.assertEqual(len(lines), 1, completed.stderr)
        self.assertIn("billion.yaml: space", lines[0])
        self.assertIn("more than 1000000 points", lines[0])


def checkpoint_names(run_dir):
    folder = os.path.join(run_dir, "checkpoints")
    return [name for name in os.listdir(folder) if name.startswith("step-")] if os.path.isdir(folder) else []


def wait_for_a_checkpoint(process, run_dir):
    """Until the run's first checkpoint is there, it ended, or 120 s passed (any checkpoint: on a
    quiet machine step-20.h5 may already have been rotated out by the time this looks)."""
    deadline = time.monotonic() + 120
    while not checkpoint_names(run_dir) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)


if __name__ == "__main__":
    e2e.main()
