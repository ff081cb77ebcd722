"""End-to-end: bad usage, config and data (docs/DESIGN.md §4 "Exit status"). Every case must end with exit
status exactly 2, one `phalanx: error` line on stderr that names the culprit (file, key or
dataset) even with 2 ranks, and nothing written: the --run-dir is not created, so there is no
summary.json and no checkpoint in it."""

import os
import re
import shutil
import unittest
import zlib

import numpy as np

import e2e_common as e2e
from e2e_common import h5py

RANKS = 2
TRAINED_RUN = None  # (config path, run directory) of the one short run some tests share
TRAIN_ERROR_LINE = re.compile(r"^phalanx: error: rank \d+: ")


def setUpModule():
    global WORK, DATA, RGB_DATA
    WORK = e2e.work_dir("bad_inputs")
    DATA = e2e.make_synth(os.path.join(WORK, "synth.h5"), train=256, test=64)
    RGB_DATA = e2e.make_synth(os.path.join(WORK, "synth-rgb.h5"), train=256, test=64, height=32, width=32,
                              channels=3)


def copy_dataset(name):
    path = os.path.join(WORK, name)
    shutil.copyfile(DATA, path)
    return path


class BadInputsTest(unittest.TestCase):
    def config(self, **changes):
        config = e2e.base_config(DATA, name="bad", max_steps=2, batch_size=16)
        for dotted, value in changes.items():
            section, _, key = dotted.partition("__")
            if key:
                config.setdefault(section, {})[key] = value
            else:
                config[section] = value
        return config

    def write(self, name, config):
        return e2e.write_config(os.path.join(WORK, name + ".yaml"), config)

    def check_refused(self, result, run_dir, *culprits, error_format=TRAIN_ERROR_LINE):
        """Exit 2, one error line naming every culprit, nothing written under run_dir."""
        self.assertEqual(result.returncode, 2, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, "expected exactly one 'phalanx: error' line\n" + result.describe())
        self.assertRegex(lines[0], error_format, result.describe())
        for culprit in culprits:
            self.assertIn(culprit, lines[0], result.describe())
        print(f"\n    {lines[0]}", end=" ")
        if run_dir is not None:
            written = []
            for folder, _, files in os.walk(run_dir):
                written += [os.path.relpath(os.path.join(folder, name), run_dir) for name in files]
            self.assertNotIn("summary.json", written, "summary.json was written for a refused run")
            self.assertEqual([name for name in written if name.startswith("checkpoints")], [],
                             "a checkpoint was written for a refused run")
            self.assertFalse(os.path.exists(run_dir),
                             f"the run directory was created for a refused run (holding {sorted(written)})")
        return lines[0]

    def train_refused(self, case, config_path, *culprits, extra=(), ranks=RANKS):
        run_dir = os.path.join(WORK, "runs", case)
        result = e2e.mpirun(ranks, "train", config_path, "--run-dir", run_dir, *extra, timeout=120)
        return self.check_refused(result, run_dir, *culprits)

    # ----- config ---------------------------------------------------------------------------

    def test_unknown_config_key_suggests_the_right_one(self):
        config = self.config()
        config["optimizer"]["learning_rat"] = 0.01
        line = self.train_refused("unknown-key", self.write("unknown-key", config), "learning_rat")
        self.assertRegex(line.lower(), r"did you mean.*optimizer\.learning_rate|did you mean.*'learning_rate'")

    def test_unknown_top_level_key(self):
        config = self.config()
        config["trian"] = {"epochs": 1}
        line = self.train_refused("unknown-section", self.write("unknown-section", config), "trian")
        self.assertIn("did you mean", line.lower())
        self.assertIn("train", line.replace("trian", ""))

    def test_wrong_type(self):
        config = self.config(train__epochs="three")
        self.train_refused("wrong-type", self.write("wrong-type", config), "train.epochs")

    def test_negative_batch_size(self):
        config = self.config(train__batch_size=-4)
        self.train_refused("negative-batch", self.write("negative-batch", config), "train.batch_size")

    def test_unknown_preset(self):
        config = self.config(model={"preset": "resnet21"})
        line = self.train_refused("unknown-preset", self.write("unknown-preset", config), "model.preset", "resnet21")
        self.assertIn("resnet20", line)

    def test_missing_config_file(self):
        path = os.path.join(WORK, "no-such-config.yaml")
        self.train_refused("missing-config", path, "no-such-config.yaml")

    def test_empty_config_file(self):
        path = os.path.join(WORK, "empty-config.yaml")
        open(path, "w").close()
        self.train_refused("empty-config", path, "empty-config.yaml")

    def test_yaml_syntax_error(self):
        path = os.path.join(WORK, "syntax-error.yaml")
        with open(path, "w") as stream:
            stream.write("name: bad\ntrain:\n  epochs: [1, 2\n  batch_size: 16\n")
        line = self.train_refused("syntax-error", path, "syntax-error.yaml")
        self.assertRegex(line, r"line \d+")

    def test_unknown_set_key(self):
        path = self.write("set-unknown", self.config())
        line = self.train_refused("set-unknown", path, "train.epoch", extra=("--set", "train.epoch=3"))
        self.assertIn("did you mean", line.lower())
        self.assertIn("train.epochs", line)

    def test_set_without_equals(self):
        path = self.write("set-no-equals", self.config())
        self.train_refused("set-no-equals", path, "train.epochs", extra=("--set", "train.epochs"))

    def test_set_with_a_bad_value(self):
        path = self.write("set-bad-value", self.config())
        self.train_refused("set-bad-value", path, "optimizer.learning_rate",
                           extra=("--set", "optimizer.learning_rate=fast"))

    def test_reduced_activations_without_that_precision(self):
        path = self.write("activation-dtype", self.config())
        line = self.train_refused("activation-dtype", path, "train.activation_dtype", "train.precision",
                                  extra=("--set", "train.activation_dtype=bf16"))
        self.assertIn("(from --set train.activation_dtype)", line)

    def test_reduced_activations_with_gradient_accumulation(self):
        # The micro-batches slice and sum in fp32 elements: reduced activations are refused there.
        path = self.write("activation-dtype-accumulation", self.config(device="cpu"))
        line = self.train_refused("activation-dtype-accumulation", path, "train.activation_dtype",
                                  "train.accumulation_steps",
                                  extra=("--set", "train.precision=bf16", "--set", "train.activation_dtype=bf16",
                                         "--set", "train.accumulation_steps=2"))
        self.assertIn("bf16", line)

    def test_fp16_on_a_cpu_rank(self):
        # CPU ranks compute in fp32 or bf16; fp16 needs a GPU rank.
        path = self.write("fp16-cpu", self.config(device="cpu"))
        line = self.train_refused("fp16-cpu", path, "train.precision", "needs a GPU rank",
                                  extra=("--set", "train.precision=fp16"))
        self.assertIn("fp16", line)

    def test_device_cuda_without_a_gpu(self):
        # Refused alike by a build without the CUDA backend and by one that finds no GPU.
        if e2e.gpu_count() > 0:
            self.skipTest("this machine has a GPU: device: cuda is valid here")
        config = self.config(device="cuda")
        line = self.train_refused("device-cuda", self.write("device-cuda", config), "cuda", "device")
        self.assertIn("no usable CUDA device", line)

    def test_clip_grad_norm_not_positive(self):
        for case, value in (("clip-zero", 0), ("clip-negative", -1.0)):
            config = self.config(train__clip_grad_norm=value)
            self.train_refused(case, self.write(case, config), "train.clip_grad_norm")

    def test_mixup_alpha_not_positive(self):
        # One start (the probabilities' ranges are the config unit tests').
        config = self.config(train__mixup={"mixup_alpha": 0.2, "cutmix_alpha": 0})
        self.train_refused("mixup-alpha-zero", self.write("mixup-alpha-zero", config),
                           "train.mixup.cutmix_alpha")

    def test_top_k_outside_the_classes(self):
        # Below 1 is refused with the config; above the data's 10 classes once the data is read,
        # still before anything is written.
        config = self.config(eval={"top_k": [0]})
        self.train_refused("top-k-zero", self.write("top-k-zero", config), "eval.top_k")
        config = self.config(eval={"top_k": [5, 11]})
        self.train_refused("top-k-too-large", self.write("top-k-too-large", config), "eval.top_k", "11",
                           "10 classes")

    def test_ema_decay_outside_the_unit_interval(self):
        for case, value in (("ema-decay-one", 1.0), ("ema-decay-zero", 0)):
            config = self.config(train__ema={"decay": value})
            self.train_refused(case, self.write(case, config), "train.ema.decay")

    def test_random_resized_crop_that_cannot_be(self):
        # The ranges, sizes and combinations are refused with the config; a training size above the
        # stored 28x28 images once the data is read, still before anything is written.
        key = "data.augment.random_resized_crop"

        def crop(**values):
            return {"random_resized_crop": {"size": 24, **values}}

        cases = (
            ("crop-scale-empty", {"data__augment": crop(scale=[0.9, 0.2])}, key + ".scale", "empty"),
            ("crop-scale-above-one", {"data__augment": crop(scale=[0.5, 1.5])}, key + ".scale", "(0, 1]"),
            ("crop-ratio-empty", {"data__augment": crop(ratio=[2, 0.5])}, key + ".ratio", "empty"),
            ("crop-ratio-zero", {"data__augment": crop(ratio=[0, 1])}, key + ".ratio", "> 0"),
            ("crop-size-zero", {"data__augment": crop(size=0)}, key + ".size", ">= 1"),
            ("crop-larger-than-stored", {"data__augment": crop(size=30)}, key + ".size", "28x28"),
            ("crop-with-padding", {"data__augment": {**crop(), "random_crop_padding": 2}},
             "data.augment.random_crop_padding", key),
            ("eval-resize-below-crop", {"data__augment": crop(), "data__eval_resize": 20}, "data.eval_resize",
             "smaller than the centre crop"),
            ("eval-resize-zero", {"data__augment": crop(), "data__eval_resize": 0}, "data.eval_resize", ">= 1"),
        )
        for case, changes, *culprits in cases:
            with self.subTest(case):
                self.train_refused(case, self.write(case, self.config(**changes)), *culprits)

    def test_watched_metric_the_run_does_not_record(self):
        # An average's metric without train.ema and a typo are refused with the config; a top-k
        # above the data's 10 classes once the data is read, still before anything is written.
        config = self.config(train__early_stop={"metric": "ema_test_accuracy"})
        self.train_refused("early-stop-ema", self.write("early-stop-ema", config), "train.early_stop.metric",
                           "train.ema")
        config = self.config(checkpoint__keep_best="test_acc")
        self.train_refused("keep-best-typo", self.write("keep-best-typo", config), "checkpoint.keep_best",
                           "test_acc")
        config = self.config(train__early_stop={"metric": "test_top20_accuracy"})
        self.train_refused("early-stop-top20", self.write("early-stop-top20", config), "train.early_stop.metric",
                           "test_top20_accuracy")

    def test_batch_larger_than_the_dataset(self):
        config = self.config(train__batch_size=200)  # 2 x 200 > 256 training samples
        line = self.train_refused("batch-too-large", self.write("batch-too-large", config), "256")
        self.assertIn("batch", line.lower())

    # ----- data files -----------------------------------------------------------------------

    def test_missing_data_file(self):
        missing = os.path.join(WORK, "no-such-data.h5")
        config = self.config(data={"path": missing})
        self.train_refused("missing-data", self.write("missing-data", config), missing)

    def test_split_the_file_does_not_have(self):
        path = self.write("no-such-split", self.config())
        line = self.train_refused("no-such-split", path, "has no split 'tset'", "data.test_split",
                                  extra=("--set", "data.test_split=tset"))
        self.assertIn("it has: train, test", line)

    def test_data_file_is_text(self):
        path = os.path.join(WORK, "text-data.h5")
        with open(path, "w") as stream:
            stream.write("this is not an HDF5 file\n" * 10)
        config = self.config(data={"path": path})
        self.train_refused("text-data", self.write("text-data", config), path)

    def test_empty_data_file(self):
        path = os.path.join(WORK, "empty-data.h5")
        open(path, "w").close()
        config = self.config(data={"path": path})
        self.train_refused("empty-data", self.write("empty-data", config), path)

    def broken_dataset_refused(self, case, edit, *culprits):
        path = copy_dataset(case + ".h5")
        with h5py.File(path, "r+") as file:
            edit(file)
        config = self.config(data={"path": path})
        return self.train_refused(case, self.write(case, config), path, *culprits)

    def test_dataset_whose_root_header_runs_past_the_file_is_refused_at_open(self):
        # HDF5 1.10 allocates the root group's header at the size it states inside H5Fopen, before
        # phalanx can check it as it checks every other header (4 GB for a file of 22 KB, found by
        # the dataset fuzzer): the checked driver reads that header when it opens the file and
        # refuses it, saying why; train and `data inspect` exit 2 naming the file.
        path = copy_dataset("root-header-past-the-end.h5")
        with open(path, "r+b") as stream:
            content = bytearray(stream.read())
            self.assertEqual(content[8], 0, "not a version 0 superblock")
            root = int.from_bytes(content[64:72], "little")
            self.assertEqual(content[root], 1, "not a version 1 object header")
            content[root + 8:root + 12] = (0xFFFFFF00).to_bytes(4, "little")  # its first chunk's size
            stream.seek(0)
            stream.write(content)
        culprits = (path, f"the root group's object header at byte {root}: a chunk of 4294967040 bytes",
                    "runs past the file's end")
        config = self.config(data={"path": path})
        self.train_refused("root-header-past-the-end", self.write("root-header-past-the-end", config), *culprits)
        result = e2e.phalanx("data", "inspect", path, timeout=60)
        self.check_refused(result, None, *culprits, error_format=re.compile(r"^phalanx: error: rank 0: "))

    def test_gzip_chunk_that_inflates_short_is_refused_naming_its_samples(self):
        # HDF5 1.10 copies a whole chunk out of what its gzip filter returns without comparing the
        # sizes: a chunk that inflates to 5 bytes made it copy the rest from past its buffer (heap
        # contents trained on, or a crash). The checked driver inflates each chunk as it reads it
        # for HDF5 and refuses that one: exit 2 naming the file, the dataset and the samples.
        path = os.path.join(WORK, "gzip-chunk-short.h5")
        result = e2e.phalanx("data", "synth", "-o", path, "--train", 256, "--test", 64, "--chunk", 64, "--gzip", 4,
                             "--seed", 3, timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())
        with h5py.File(path, "r+") as file:
            images = file["/train/images"]
            self.assertEqual(images.chunks[0], 64)
            self.assertEqual(images.compression, "gzip")
            images.id.write_direct_chunk((128, 0, 0, 0), zlib.compress(b"\x07" * 5))
        config = self.config(data={"path": path})
        self.train_refused("gzip-chunk-short", self.write("gzip-chunk-short", config), path,
                           "/train/images[128:192]", "it inflates to 5 bytes, a chunk of the dataset holds 50176")

    def test_missing_train_labels(self):
        self.broken_dataset_refused("no-train-labels", lambda file: file.__delitem__("/train/labels"),
                                    "/train/labels")

    def test_label_out_of_range(self):
        def edit(file):
            labels = file["/train/labels"][()]
            labels[17] = 10  # 10 classes: 0..9
            file["/train/labels"][...] = labels
        line = self.broken_dataset_refused("label-out-of-range", edit, "/train/labels")
        self.assertIn("10", line)

    def test_negative_test_label(self):
        def edit(file):
            labels = file["/test/labels"][()]
            labels[3] = -1
            file["/test/labels"][...] = labels
        self.broken_dataset_refused("negative-test-label", edit, "/test/labels")

    def test_image_label_count_mismatch(self):
        def edit(file):
            labels = file["/train/labels"][()]
            del file["/train/labels"]
            file.create_dataset("/train/labels", data=labels[:-5].astype(np.int32))
        self.broken_dataset_refused("count-mismatch", edit, "/train/labels")

    def test_float32_images(self):
        def edit(file):
            images = file["/train/images"]
            attributes = dict(images.attrs)
            values = images[()].astype(np.float32) / 255.0
            del file["/train/images"]
            replaced = file.create_dataset("/train/images", data=values)
            for key, value in attributes.items():
                replaced.attrs[key] = value
        line = self.broken_dataset_refused("float-images", edit, "/train/images")
        self.assertIn("uint8", line)

    def test_wrong_format_attribute(self):
        def edit(file):
            file.attrs["format"] = "not-phalanx"
        self.broken_dataset_refused("wrong-format", edit, "format")

    def test_mean_that_no_pixels_in_the_unit_interval_have(self):
        def edit(file):
            file["/train/images"].attrs["mean"] = np.array([5.0], dtype=np.float32)
        self.broken_dataset_refused("mean-out-of-range", edit, "mean", "[0, 1]")

    def test_streamed_split_with_a_bad_label_is_refused_before_the_run_starts(self):
        # A streamed split met a bad label only when a read reached it, with the run directory (and
        # maybe checkpoints) written; its labels are now checked at start, each rank its share.
        def edit(file):
            labels = file["/train/labels"][()]
            labels[250] = 10
            file["/train/labels"][...] = labels
        path = copy_dataset("streamed-bad-label.h5")
        with h5py.File(path, "r+") as file:
            edit(file)
        config = self.config(data={"path": path, "cache": "none"})
        self.train_refused("streamed-bad-label", self.write("streamed-bad-label", config), path,
                           "/train/labels[250] = 10")

    def test_a_rank_that_fails_before_a_set_up_collective_ends_the_job_with_its_message(self):
        # The ranks run in folders of their own and the relative data.path is in rank 0's only: rank
        # 1 fails to open it while rank 0 goes on into the set-up's collectives (the node cache's),
        # where it would wait forever. The failing rank waits distributed.timeout_s at the set-up
        # agreement, then ends the job with its own message and exit status 2.
        folders = [os.path.join(WORK, "skipped-collective", f"rank{rank}") for rank in range(2)]
        for folder in folders:
            os.makedirs(folder, exist_ok=True)
        shutil.copyfile(DATA, os.path.join(folders[0], "relative.h5"))
        config = self.config(data={"path": "relative.h5", "cache": "node"}, distributed={"timeout_s": 5})
        config_path = self.write("skipped-collective", config)
        run_dir = os.path.join(WORK, "runs", "skipped-collective")
        result = e2e.mpirun_per_rank(
            [(1, ["sh", "-c", f"cd {folder} && exec {e2e.PHALANX} train {config_path} --run-dir {run_dir}"])
             for folder in folders], timeout=120)
        line = self.check_refused(result, run_dir, "relative.h5", "within 5 s")
        self.assertIn("rank 1", line)

    def test_stride_and_padding_past_any_image_are_refused_naming_the_layer(self):
        for case, key, value, culprit in (("huge-stride", "stride", 1000000, "stride 1000000"),
                                          ("huge-padding", "padding", 100000, "200026x200026x8 per sample")):
            layers = [{"type": "conv", "name": "wide", "out_channels": 8, "kernel": 3, key: value},
                      {"type": "flatten"}, {"type": "linear", "name": "head", "out_features": 10}]
            config = self.config(model={"layers": layers})
            self.train_refused(case, self.write(case, config), "wide", culprit)

    def test_mean_std_of_the_wrong_length(self):
        def edit(file):
            file["/train/images"].attrs["std"] = np.array([0.3, 0.3, 0.3], dtype=np.float32)
        self.broken_dataset_refused("std-length", edit, "std")

    # ----- model does not fit the data ------------------------------------------------------

    def test_preset_that_does_not_fit_the_data(self):
        config = self.config(data={"path": RGB_DATA})
        path = self.write("preset-misfit", config)
        line = self.train_refused("preset-misfit", path, "fmnist_cnn")
        self.assertIn("32", line)
        # The config file and its key, and the data file, as every other bad input names them.
        self.assertIn(f"{path}: model.preset 'fmnist_cnn' on {RGB_DATA} (samples ", line)

    def test_layer_list_with_the_wrong_number_of_classes(self):
        layers = [{"type": "conv", "name": "c1", "out_channels": 4, "kernel": 3, "padding": 1},
                  {"type": "relu"}, {"type": "flatten"},
                  {"type": "linear", "name": "head", "out_features": 7}]
        config = self.config(model={"layers": layers})
        path = self.write("classes-misfit", config)
        line = self.train_refused("classes-misfit", path, "model", "10")
        self.assertIn("7", line)
        self.assertIn(f"{path}: model.layers on ", line)

    def test_linear_on_image_input(self):
        layers = [{"type": "conv", "name": "c1", "out_channels": 4, "kernel": 3},
                  {"type": "linear", "name": "head", "out_features": 10}]
        config = self.config(model={"layers": layers})
        self.train_refused("linear-without-flatten", self.write("linear-without-flatten", config), "head")

    def test_layer_name_reused_inside_a_residual_block(self):
        # Names become checkpoint groups (/model/<name>/weight): a name used both at the top level
        # and inside a residual path would collide when the checkpoint is written, at the end of
        # the run. It must be refused up front, as duplicates within one list are.
        layers = [{"type": "conv", "name": "shared_conv", "out_channels": 4, "kernel": 3, "padding": 1},
                  {"type": "residual", "name": "block",
                   "main": [{"type": "conv", "name": "shared_conv", "out_channels": 4, "kernel": 3, "padding": 1}]},
                  {"type": "flatten"},
                  {"type": "linear", "name": "head", "out_features": 10}]
        config = self.config(model={"layers": layers})
        self.train_refused("nested-duplicate-name", self.write("nested-duplicate-name", config), "shared_conv")

    # ----- checkpoints and ranks ------------------------------------------------------------

    def reseal(self, checkpoint):
        """`phalanx checkpoint seal`, as a user accepts a checkpoint changed on purpose."""
        resealed = e2e.phalanx("checkpoint", "seal", checkpoint)
        self.assertEqual(resealed.returncode, 0, resealed.describe())
        self.assertIn(f"{checkpoint}: sealed", resealed.stdout)

    def trained_run(self):
        """(config path, run directory) of one short finished run, trained once for the tests that
        need a real checkpoint or a run directory that holds a run."""
        global TRAINED_RUN
        if TRAINED_RUN is None:
            source_dir = os.path.join(WORK, "runs", "checkpoint-source")
            config_path = self.write("checkpoint-source", self.config())
            trained = e2e.mpirun(RANKS, "train", config_path, "--run-dir", source_dir, timeout=180)
            self.assertEqual(trained.returncode, 0, "a short training run to get a real checkpoint failed\n" +
                             trained.describe())
            TRAINED_RUN = (config_path, source_dir)
        return TRAINED_RUN

    def test_eval_names_the_checkpoint_and_data_that_do_not_fit_and_a_data_path_gone(self):
        # Data of another image shape: the message says which checkpoint on which data (it said
        # neither). The run's data.path gone (or relative to another folder): the message says the
        # path came from the checkpoint and how to give the data.
        _, source_dir = self.trained_run()
        checkpoint = os.path.join(source_dir, "checkpoints", "latest.h5")
        result = e2e.phalanx("eval", "--checkpoint", checkpoint, "--data", RGB_DATA, timeout=60)
        self.check_refused(result, None, f"{checkpoint} on {RGB_DATA}", "but the data has 32x32x3",
                           error_format=re.compile(r"^phalanx: error: rank 0: "))
        moved = os.path.join(WORK, "data-moved")
        shutil.rmtree(moved, ignore_errors=True)
        os.makedirs(moved)
        result = e2e.phalanx("eval", "--checkpoint", checkpoint, timeout=60, cwd=moved)
        self.assertEqual(result.returncode, 0, result.describe())  # data.path is absolute here
        relative = os.path.join(moved, "relative.h5")
        with h5py.File(checkpoint, "r") as source:
            config_text = source.attrs["config"]
        config_text = config_text if isinstance(config_text, str) else config_text.decode()
        shutil.copyfile(checkpoint, relative)
        with h5py.File(relative, "r+") as edited:
            edited.attrs["config"] = config_text.replace(DATA, "gone/synth.h5")
        self.reseal(relative)
        result = e2e.phalanx("eval", "--checkpoint", relative, timeout=60, cwd=moved)
        self.check_refused(result, None, "gone/synth.h5: no such file", f"data.path of {relative}:/config",
                           error_format=re.compile(r"^phalanx: error: rank 0: "))
        self.assertIn("give the dataset with --data FILE", result.stderr)

    def test_predictions_written_over_their_own_inputs_are_refused(self):
        # `predict --output` naming the checkpoint (or the dataset) would replace it while it is read.
        _, source_dir = self.trained_run()
        checkpoint = os.path.join(WORK, "predict-input.h5")
        shutil.copyfile(os.path.join(source_dir, "checkpoints", "latest.h5"), checkpoint)
        for output, what in ((checkpoint, "checkpoint"), (DATA, "dataset")):
            with open(output, "rb") as stream:
                before = stream.read()
            result = e2e.phalanx("predict", "--checkpoint", checkpoint, "--data", DATA, "--output",
                                 os.path.join(os.path.dirname(output), ".", os.path.basename(output)), timeout=120)
            line = self.check_refused(result, None, os.path.basename(output), f"is the {what} being read",
                                      error_format=re.compile(r"^phalanx: error: "))
            with open(output, "rb") as stream:
                self.assertEqual(stream.read(), before, f"{output} changed: {line}")

    def test_truncated_checkpoint_on_resume(self):
        config_path, source_dir = self.trained_run()
        checkpoint = os.path.join(source_dir, "checkpoints", "latest.h5")
        truncated = os.path.join(WORK, "truncated-checkpoint.h5")
        with open(checkpoint, "rb") as stream:
            content = stream.read()
        with open(truncated, "wb") as stream:
            stream.write(content[:len(content) // 2])
        self.train_refused("truncated-checkpoint", config_path, "truncated-checkpoint.h5",
                           extra=("--resume", truncated))

    def test_a_byte_changed_in_a_sealed_checkpoint_is_refused_before_hdf5_reads_it(self):
        # Every checkpoint is sealed (a 512-byte user block holds the size and XXH64 of the rest):
        # one flipped bit anywhere, in HDF5's own structures too (where a damaged attribute message
        # can crash HDF5 1.10's decoder), is refused before HDF5 parses a byte: exit 2 naming the
        # file and the seal, for eval, predict and --resume, and nothing written.
        config_path, source_dir = self.trained_run()
        checkpoint = os.path.join(source_dir, "checkpoints", "latest.h5")
        with open(checkpoint, "rb") as stream:
            content = bytearray(stream.read())
        self.assertTrue(content.startswith(b"phalanx-checkpoint-seal 1\n"), content[:64])
        with h5py.File(checkpoint, "r") as file:  # h5py reads a sealed checkpoint as any HDF5 file
            self.assertEqual(file.userblock_size, 512)
            self.assertEqual(e2e.attr_text(file.attrs["format"]), "phalanx-checkpoint")
        verified = e2e.phalanx("checkpoint", "verify", checkpoint)
        self.assertEqual(verified.returncode, 0, verified.describe())
        self.assertIn(f"{checkpoint}: sealed, matches", verified.stdout)
        for name, offset in (("superblock", 512 + 20), ("middle", len(content) // 2), ("last", len(content) - 1)):
            damaged = os.path.join(WORK, f"seal-broken-{name}.h5")
            flipped = bytearray(content)
            flipped[offset] ^= 0x01
            with open(damaged, "wb") as stream:
                stream.write(flipped)
            culprits = (damaged, "contents do not match the seal phalanx wrote", "phalanx checkpoint seal")
            error_format = re.compile(r"^phalanx: error: rank 0: ")
            result = e2e.phalanx("eval", "--checkpoint", damaged, "--data", DATA, timeout=60)
            self.check_refused(result, None, *culprits, error_format=error_format)
            output = os.path.join(WORK, f"seal-broken-{name}-predictions.h5")
            result = e2e.mpirun(RANKS, "predict", "--checkpoint", damaged, "--data", DATA, "--output", output,
                                timeout=60)
            self.check_refused(result, None, *culprits, error_format=error_format)
            self.assertFalse([entry for entry in os.listdir(WORK) if entry.startswith(f"seal-broken-{name}-pred")])
            self.train_refused(f"seal-broken-{name}", config_path, *culprits, extra=("--resume", damaged))
            result = e2e.phalanx("checkpoint", "verify", checkpoint, damaged)
            self.check_refused(result, None, *culprits, error_format=error_format)
            self.assertIn(f"{checkpoint}: sealed, matches", result.stdout)
            with open(damaged, "rb") as stream:
                self.assertEqual(stream.read(), flipped, "a refused checkpoint was changed")

    def test_a_checkpoint_from_before_seals_loads_and_can_be_sealed(self):
        # Without its user block a checkpoint is what phalanx wrote before seals (HDF5 from byte 0):
        # eval loads it unchecked, `checkpoint verify` calls it unsealed (exit 2), and
        # `checkpoint seal` seals it as it is, after which it verifies and loads.
        _, source_dir = self.trained_run()
        with open(os.path.join(source_dir, "checkpoints", "latest.h5"), "rb") as stream:
            content = stream.read()
        unsealed = os.path.join(WORK, "unsealed-checkpoint.h5")
        with open(unsealed, "wb") as stream:
            stream.write(content[512:])
        evaluated = e2e.phalanx("eval", "--checkpoint", unsealed, "--data", DATA, timeout=60)
        self.assertEqual(evaluated.returncode, 0, evaluated.describe())
        result = e2e.phalanx("checkpoint", "verify", unsealed)
        self.check_refused(result, None, unsealed, "unsealed: written before checkpoints were sealed",
                           error_format=re.compile(r"^phalanx: error: rank 0: "))
        self.reseal(unsealed)
        with open(unsealed, "rb") as stream:
            self.assertEqual(stream.read(), content, "sealing the stripped file gives back the checkpoint")
        verified = e2e.phalanx("checkpoint", "verify", unsealed)
        self.assertEqual(verified.returncode, 0, verified.describe())
        resealed = e2e.phalanx("eval", "--checkpoint", unsealed, "--data", DATA, timeout=60)
        self.assertEqual(resealed.returncode, 0, resealed.describe())
        # the same accuracy and loss (the line ends with the time taken)
        self.assertEqual(resealed.stdout.split(" (")[0], evaluated.stdout.split(" (")[0])

    def test_an_unsealed_checkpoint_whose_attribute_message_is_damaged_is_refused_not_crashed(self):
        # A checkpoint from before seals is parsed by HDF5 unchecked, and HDF5 1.10 decodes an
        # attribute message at the sizes it states: a root attribute whose dataspace size says
        # 65,535 bytes (as the checkpoint fuzzer found) made eval end in signal 11. phalanx reads
        # each object header before HDF5 decodes it: exit 2 naming the file, the object and the
        # attribute, for eval, predict and --resume, and nothing written.
        config_path, source_dir = self.trained_run()
        with open(os.path.join(source_dir, "checkpoints", "latest.h5"), "rb") as stream:
            content = bytearray(stream.read()[512:])
        name = content.find(b"samples_seen\0")
        self.assertGreater(name, 8, "no samples_seen attribute message in the root's header")
        self.assertEqual(content[name - 8], 1, "not a version 1 attribute message")
        content[name - 8 + 6:name - 8 + 8] = b"\xff\xff"  # the message's dataspace size
        damaged = os.path.join(WORK, "unsealed-attribute-damaged.h5")
        with open(damaged, "wb") as stream:
            stream.write(content)
        culprits = (damaged, ": /: object header at byte", '(attribute) "samples_seen": its dataspace',
                    "runs past the message")
        error_format = re.compile(r"^phalanx: error: rank 0: ")
        result = e2e.phalanx("eval", "--checkpoint", damaged, "--data", DATA, timeout=60)
        self.check_refused(result, None, *culprits, error_format=error_format)
        output = os.path.join(WORK, "unsealed-attribute-damaged-predictions.h5")
        result = e2e.mpirun(RANKS, "predict", "--checkpoint", damaged, "--data", DATA, "--output", output,
                            timeout=60)
        self.check_refused(result, None, *culprits, error_format=error_format)
        self.assertFalse([entry for entry in os.listdir(WORK)
                          if entry.startswith("unsealed-attribute-damaged-predictions")])
        self.train_refused("unsealed-attribute-damaged", config_path, *culprits, extra=("--resume", damaged))

    def test_damaged_checkpoint_is_refused_by_eval_predict_and_resume(self):
        # Bytes changed inside a weight's data leave HDF5's structure intact: without checksums the
        # checkpoint would load, and eval/predict would report on wrong weights with exit status 0.
        # The seal refuses it first; resealed (as after an edit on purpose), the weight's own
        # checksum still does.
        config_path, source_dir = self.trained_run()
        damaged = os.path.join(WORK, "damaged-checkpoint.h5")
        shutil.copyfile(os.path.join(source_dir, "checkpoints", "latest.h5"), damaged)
        with h5py.File(damaged, "r") as file:
            weight = file["/model/conv1/weight"]
            offset, size = weight.id.get_offset(), weight.id.get_storage_size()
        self.assertIsNotNone(offset, "/model/conv1/weight is not stored contiguously")
        with open(damaged, "r+b") as stream:
            stream.seek(offset + size // 2)
            original = stream.read(64)
            stream.seek(offset + size // 2)
            stream.write(bytes(byte ^ 0x40 for byte in original))
        error_format = re.compile(r"^phalanx: error: rank 0: ")
        result = e2e.phalanx("eval", "--checkpoint", damaged, "--data", DATA)
        self.check_refused(result, None, damaged, "contents do not match the seal phalanx wrote",
                           error_format=error_format)
        resealed = e2e.phalanx("checkpoint", "seal", damaged)
        self.assertEqual(resealed.returncode, 0, resealed.describe())
        result = e2e.phalanx("eval", "--checkpoint", damaged, "--data", DATA)
        self.check_refused(result, None, damaged, "/model/conv1/weight", "checksum", error_format=error_format)
        output = os.path.join(WORK, "damaged-predictions.h5")
        result = e2e.mpirun(RANKS, "predict", "--checkpoint", damaged, "--data", DATA, "--output", output)
        self.check_refused(result, None, damaged, "/model/conv1/weight", error_format=error_format)
        self.assertEqual([name for name in os.listdir(WORK) if name.startswith("damaged-predictions")], [])
        self.train_refused("damaged-checkpoint", config_path, damaged, "checksum", extra=("--resume", damaged))

    def test_checkpoint_whose_string_heap_would_hang_hdf5_is_refused_at_once(self):
        # An h5py edit stores a string attribute as a variable-length string, in a global heap
        # collection. One damaged as the dataset fuzzer found (a free-space object of size 0) makes
        # HDF5 1.10 loop forever reading it; checkpoints are read through phalanx's checked file
        # driver, so eval, predict and --resume stop at once naming the file (a hang times out).
        config_path, source_dir = self.trained_run()
        damaged = os.path.join(WORK, "heap-damaged-checkpoint.h5")
        shutil.copyfile(os.path.join(source_dir, "checkpoints", "latest.h5"), damaged)
        with h5py.File(damaged, "r+") as file:
            del file.attrs["format"]
            file.attrs["format"] = "phalanx-checkpoint"
        self.reseal(damaged)  # an edit on purpose
        edited = e2e.phalanx("eval", "--checkpoint", damaged, "--data", DATA, timeout=60)
        self.assertEqual(edited.returncode, 0, "the edited checkpoint, still sound, does not load\n" +
                         edited.describe())
        with open(damaged, "rb") as stream:
            content = bytearray(stream.read())
        collection = content.find(b"GCOL\x01")
        self.assertGreaterEqual(collection, 0, "h5py wrote no global heap collection")
        self.assertEqual(content.find(b"GCOL\x01", collection + 1), -1, "more than one collection")
        # The string is object 1 (a 16-byte header, its 18 bytes padded to 24); free space follows.
        self.assertEqual(content[collection + 16], 1)
        self.assertEqual(int.from_bytes(content[collection + 24:collection + 32], "little"), 18)
        free_space = collection + 16 + 16 + 24
        self.assertEqual(content[free_space:free_space + 2], b"\0\0", "no free space after the string")
        content[free_space + 8:free_space + 16] = bytes(8)
        with open(damaged, "wb") as stream:
            stream.write(content)
        self.reseal(damaged)  # so that the damage gets past the seal to HDF5 and the checked driver
        culprits = (damaged, f"the global heap collection at byte {collection} is damaged",
                    f"object 0 at byte {free_space} (free space) has size 0")
        error_format = re.compile(r"^phalanx: error: rank 0: ")
        result = e2e.phalanx("eval", "--checkpoint", damaged, "--data", DATA, timeout=60)
        self.check_refused(result, None, *culprits, error_format=error_format)
        output = os.path.join(WORK, "heap-damaged-predictions.h5")
        result = e2e.mpirun(RANKS, "predict", "--checkpoint", damaged, "--data", DATA, "--output", output,
                            timeout=60)
        self.check_refused(result, None, *culprits, error_format=error_format)
        self.assertEqual([name for name in os.listdir(WORK) if name.startswith("heap-damaged-predictions")], [])
        self.train_refused("heap-damaged-checkpoint", config_path, *culprits, extra=("--resume", damaged))

    def test_run_directory_that_cannot_be_created(self):
        in_the_way = os.path.join(WORK, "a-file-in-the-way")
        with open(in_the_way, "w") as stream:
            stream.write("not a folder\n")
        run_dir = os.path.join(in_the_way, "run")
        result = e2e.mpirun(RANKS, "train", self.write("uncreatable-run-dir", self.config()), "--run-dir", run_dir,
                            timeout=120)
        self.check_refused(result, run_dir, run_dir)

    def test_run_directory_that_holds_a_run_needs_resume(self):
        # A fresh run there would truncate the old metrics and mix its checkpoints with the old ones.
        config_path, source_dir = self.trained_run()
        before = {}
        for folder, _, files in os.walk(source_dir):
            for name in files:
                with open(os.path.join(folder, name), "rb") as stream:
                    before[os.path.relpath(os.path.join(folder, name), source_dir)] = stream.read()
        result = e2e.mpirun(RANKS, "train", config_path, "--run-dir", source_dir, timeout=120)
        line = self.check_refused(result, None, source_dir, "--resume auto")
        self.assertIn("metrics.jsonl", line)
        after = {}
        for folder, _, files in os.walk(source_dir):
            for name in files:
                with open(os.path.join(folder, name), "rb") as stream:
                    after[os.path.relpath(os.path.join(folder, name), source_dir)] = stream.read()
        self.assertEqual(sorted(after), sorted(before), "files of the old run were added or removed")
        self.assertTrue(all(after[name] == before[name] for name in before), "a file of the old run changed")

    def test_resume_from_a_missing_checkpoint(self):
        config_path = self.write("missing-checkpoint", self.config())
        missing = os.path.join(WORK, "no-such-checkpoint.h5")
        self.train_refused("missing-checkpoint", config_path, "no-such-checkpoint.h5", extra=("--resume", missing))

    def test_resume_from_a_dataset_file(self):
        config_path = self.write("dataset-as-checkpoint", self.config())
        self.train_refused("dataset-as-checkpoint", config_path, DATA, extra=("--resume", DATA))

    def test_config_mismatch_between_ranks(self):
        config = self.config()
        a_path = self.write("mismatch-a", config)
        config["optimizer"]["learning_rate"] = 0.5
        b_path = self.write("mismatch-b", config)
        run_dir = os.path.join(WORK, "runs", "mismatch")
        result = e2e.mpirun_per_rank([(1, [e2e.PHALANX, "train", a_path, "--run-dir", run_dir]),
                                      (1, [e2e.PHALANX, "train", b_path, "--run-dir", run_dir])], timeout=120)
        line = self.check_refused(result, run_dir, "mismatch-")
        self.assertIn("rank 1", line)

    # ----- command line ---------------------------------------------------------------------

    def test_unknown_sub_command(self):
        result = e2e.phalanx("trian", os.path.join(WORK, "x.yaml"))
        self.check_refused(result, None, "trian", error_format=re.compile(r"^phalanx: error"))

    def test_unknown_option(self):
        path = self.write("unknown-option", self.config())
        run_dir = os.path.join(WORK, "runs", "unknown-option")
        result = e2e.phalanx("train", path, "--run-dir", run_dir, "--bogus-option")
        self.check_refused(result, run_dir, "--bogus-option", error_format=re.compile(r"^phalanx: error"))

    def test_unknown_data_sub_command(self):
        result = e2e.phalanx("data", "import-cifar10-typo", WORK)
        self.check_refused(result, None, "import-cifar10-typo", error_format=re.compile(r"^phalanx: error"))


if __name__ == "__main__":
    e2e.main()
