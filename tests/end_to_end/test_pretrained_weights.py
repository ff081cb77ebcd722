"""End-to-end: PyTorch weights into phalanx. A safetensors file of resnet20's state_dict (written
here by a small writer, in F32, F16, BF16 and F64, with torch's I64 num_batches_tracked) is imported
with `phalanx checkpoint import` into a checkpoint holding exactly its values, which `checkpoint
verify`, `eval` and `checkpoint export` accept; `model.init_from` with `train.freeze` on 2 ranks
leaves the frozen tensors (batch-norm statistics included) at the file's values and moves the
others; another class count re-initialises the classifier head only; and damaged or mismatched
files exit 2 naming the file and tensor, with nothing written."""

import json
import os
import shutil
import struct
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py

FROZEN = ["conv1", "bn1", "layer1"]
STEPS = 3


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, numpy array of the bytes' type)}, written in the given order."""
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, (dtype, array) in tensors.items():
        raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as file:
        file.write(struct.pack("<Q", len(text)) + text + data)


def read_safetensors(path):
    """{name: float32 array} of an F32 safetensors file, and its metadata."""
    with open(path, "rb") as file:
        raw = file.read()
    length = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + length])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + length:]
    arrays = {}
    for name, entry in header.items():
        assert entry["dtype"] == "F32", entry
        begin, end = entry["data_offsets"]
        arrays[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(entry["shape"])
    return arrays, metadata


def setUpModule():
    global WORK, DATA, DATA5, STATE, EXPECTED, WEIGHTS, IMPORTED
    WORK = e2e.work_dir("pretrained_weights")
    DATA = e2e.make_synth(os.path.join(WORK, "synth10.h5"), 128, 32, 16, 16, 3, classes=10)
    DATA5 = e2e.make_synth(os.path.join(WORK, "synth5.h5"), 128, 32, 16, 16, 3, classes=5)
    # The names and shapes of resnet20's tensors, from a checkpoint phalanx writes after one step.
    run_dir = os.path.join(WORK, "shapes")
    result = e2e.phalanx("train", write_config("shapes", DATA, max_steps=1), "--run-dir", run_dir)
    assert result.returncode == 0, result.describe()
    model = e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"), ("model",))["model"]
    rng = np.random.default_rng(11)
    STATE, EXPECTED = {}, {}
    for name, array in sorted(model.items()):
        torch_name = name.replace("/", ".")
        if name.endswith("num_batches_tracked"):
            STATE[torch_name] = ("I64", np.array(5, dtype=np.int64))
            continue
        values = rng.standard_normal(array.shape).astype(np.float32) * 0.2
        if name.endswith("running_var"):
            values = np.abs(values) + 0.5
        if name == "conv1/weight":  # F16: the stored halves are the values
            half = values.astype(np.float16)
            STATE[torch_name], EXPECTED[name] = ("F16", half), half.astype(np.float32)
        elif name == "bn1/weight":  # BF16: the upper 16 bits of each float32
            bits = (values.view(np.uint32) >> 16).astype(np.uint16)
            STATE[torch_name] = ("BF16", bits)
            EXPECTED[name] = (bits.astype(np.uint32) << 16).view(np.float32)
        elif name == "fc/weight":  # F64: rounded to the nearest float32
            wide = values.astype(np.float64) + 1e-9
            STATE[torch_name], EXPECTED[name] = ("F64", wide), wide.astype(np.float32)
        else:
            STATE[torch_name], EXPECTED[name] = ("F32", values), values
    WEIGHTS = os.path.join(WORK, "resnet20.safetensors")
    write_safetensors(WEIGHTS, STATE)
    IMPORTED = os.path.join(WORK, "imported.h5")
    result = e2e.phalanx("checkpoint", "import", WEIGHTS, "--preset", "resnet20", "--input", "16x16x3",
                         "-o", IMPORTED)
    assert result.returncode == 0, result.describe()


def write_config(name, data, max_steps=STEPS, **model_and_train):
    config = e2e.base_config(data, name=name, batch_size=16, max_steps=max_steps, preset="resnet20",
                             optimizer={"type": "sgd", "learning_rate": 0.1, "momentum": 0.9,
                                        "weight_decay": 0.01},
                             schedule={"type": "constant"}, log_every_steps=1)
    for key, value in model_and_train.items():
        section, field = key.split("__")
        config[section][field] = value
    return e2e.write_config(os.path.join(WORK, name + ".yaml"), config)


def under(name, prefixes):
    return any(name == prefix or name.startswith(prefix + "/") for prefix in prefixes)


class PretrainedWeightsTest(unittest.TestCase):
    def test_import_holds_the_file_values(self):
        model = e2e.read_checkpoint_arrays(IMPORTED, ("model",))["model"]
        floats = {name: value for name, value in model.items() if not name.endswith("num_batches_tracked")}
        self.assertEqual(sorted(floats), sorted(EXPECTED))
        for name, expected in EXPECTED.items():
            np.testing.assert_array_equal(floats[name], expected, err_msg=name)
        self.assertEqual(e2e.phalanx("checkpoint", "verify", IMPORTED).returncode, 0)
        evaluated = e2e.phalanx("eval", "--checkpoint", IMPORTED, "--data", DATA, "--device", "cpu")
        self.assertEqual(evaluated.returncode, 0, evaluated.describe())
        # Out again as safetensors with torch's names: the same values.
        exported = os.path.join(WORK, "exported.safetensors")
        result = e2e.phalanx("checkpoint", "export", IMPORTED, exported)
        self.assertEqual(result.returncode, 0, result.describe())
        arrays, metadata = read_safetensors(exported)
        self.assertEqual(metadata, {"format": "pt"})
        self.assertEqual(sorted(arrays), sorted(name.replace("/", ".") for name in EXPECTED))
        for name, expected in EXPECTED.items():
            np.testing.assert_array_equal(arrays[name.replace("/", ".")], expected, err_msg=name)

    def test_import_class_count_comes_from_the_head(self):
        # Another --classes than the file's head: refused naming the head tensor and both shapes.
        output = os.path.join(WORK, "five.h5")
        result = e2e.phalanx("checkpoint", "import", WEIGHTS, "--preset", "resnet20", "--input", "16x16x3",
                             "--classes", "5", "-o", output)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn(f"{WEIGHTS}: tensor 'fc.weight' has shape [10, 64] in the file but [5, 64] in the model",
                      result.stderr)
        self.assertFalse(os.path.exists(output))

    def test_bad_files_exit_2_and_write_nothing(self):
        def damaged(name, change):
            state = dict(STATE)
            change(state)
            path = os.path.join(WORK, name + ".safetensors")
            write_safetensors(path, state)
            return path

        cases = [
            (damaged("missing", lambda state: state.pop("layer2.0.bn1.running_mean")),
             "the model's tensor 'layer2.0.bn1.running_mean' (shape [32]) is not in the file"),
            (damaged("extra", lambda state: state.update({"head.weight": ("F32", np.zeros(3, np.float32))})),
             "tensor 'head.weight' (shape [3]) is not in the model"),
            (damaged("misshapen", lambda state: state.update(
                {"layer1.0.conv1.weight": ("F32", np.zeros((16, 16, 1, 1), np.float32))})),
             "tensor 'layer1.0.conv1.weight' has shape [16, 16, 1, 1] in the file but [16, 16, 3, 3] in the model"),
            (damaged("integers", lambda state: state.update({"fc.bias": ("I32", np.zeros(10, np.int32))})),
             "tensor 'fc.bias' is I32; phalanx takes weights as F32, F16, BF16 or F64"),
            # A NaN weight evaluated to nonsense with exit 0; an F64 past float's range is infinite as float.
            (damaged("nan", lambda state: state.update(
                {"fc.bias": ("F32", np.array([0.0] * 7 + [np.nan] + [0.0] * 2, np.float32))})),
             "tensor 'fc.bias' holds a non-finite value (nan) at index 7"),
            (damaged("f64_past_float", lambda state: state.update({"fc.bias": ("F64", np.full(10, 1e300))})),
             "tensor 'fc.bias' holds a non-finite value (inf) at index 0 (as float)"),
        ]
        truncated = os.path.join(WORK, "truncated.safetensors")
        with open(WEIGHTS, "rb") as source, open(truncated, "wb") as target:
            raw = source.read()
            target.write(raw[:8 + struct.unpack("<Q", raw[:8])[0] + 100])  # the header and 100 bytes of data
        cases.append((truncated, "leave the data area of 100 bytes"))
        header_only = os.path.join(WORK, "header_only.safetensors")
        with open(header_only, "wb") as file:
            file.write(struct.pack("<Q", 20000) + b"{}")
        cases.append((header_only, "the safetensors header length 20000 runs past the end of the file (10 bytes"))
        for path, expected in cases:
            output = os.path.join(WORK, os.path.basename(path) + ".h5")
            result = e2e.phalanx("checkpoint", "import", path, "--preset", "resnet20", "--input", "16x16x3",
                                 "-o", output)
            self.assertEqual(result.returncode, 2, result.describe())
            self.assertIn(f"{path}: ", result.stderr)
            self.assertIn(expected, result.stderr)
            self.assertFalse(os.path.exists(output), path)
            self.assertEqual([name for name in os.listdir(WORK) if ".tmp-" in name], [])

    def test_paths_class_counts_and_edited_checkpoints_exit_2(self):
        def refused(expected, *arguments):
            result = e2e.phalanx("checkpoint", *arguments)
            self.assertEqual(result.returncode, 2, result.describe())
            (line,) = result.error_lines()
            self.assertIn(expected, line)
            return line

        # A directory for the checkpoint (its run directory, say), and an output that is the input.
        refused("not a checkpoint file", "export", WORK, os.path.join(WORK, "from-a-directory.safetensors"))
        self.assertFalse(os.path.exists(os.path.join(WORK, "from-a-directory.safetensors")))
        own = os.path.join(WORK, "own.h5")
        shutil.copyfile(IMPORTED, own)
        refused("is the checkpoint being read", "export", own, os.path.join(WORK, ".", "own.h5"))
        self.assertEqual(e2e.phalanx("checkpoint", "verify", own).returncode, 0, "export wrote over its input")
        weights = os.path.join(WORK, "own.safetensors")
        shutil.copyfile(WEIGHTS, weights)
        refused("is the safetensors file being read", "import", weights, "--preset", "resnet20", "--input", "16x16x3",
                "-o", weights)
        with open(WEIGHTS, "rb") as original, open(weights, "rb") as kept:
            self.assertEqual(original.read(), kept.read(), "import wrote over its input")
        for classes in ("0", "-3", "2000000000"):
            output = os.path.join(WORK, f"classes{classes}.h5")
            refused("--classes", "import", WEIGHTS, "--preset", "resnet20", "--input", "16x16x3", "--classes", classes,
                    "-o", output)
            self.assertFalse(os.path.exists(output))

        # --data arrives as written, a tab and a quote included (it was pasted into YAML).
        odd_path = os.path.join(WORK, 'a\\tb\t"c".h5')  # a backslash-t, a tab and quotes
        output = os.path.join(WORK, "odd-data.h5")
        result = e2e.phalanx("checkpoint", "import", WEIGHTS, "--preset", "resnet20", "--input", "16x16x3",
                             "--data", odd_path, "-o", output)
        self.assertEqual(result.returncode, 0, result.describe())
        evaluated = e2e.phalanx("eval", "--checkpoint", output, "--device", "cpu")
        self.assertEqual(evaluated.returncode, 2, evaluated.describe())
        self.assertIn(odd_path, evaluated.error_lines()[0])  # the dataset it looked for, as given

        # Checkpoints edited with h5py and sealed again (the documented way): a tensor whose shape
        # asks for terabytes, two datasets that meet in one torch name, and a /model emptied.
        def edited(name, edit):
            path = os.path.join(WORK, name + ".h5")
            shutil.copyfile(IMPORTED, path)
            with h5py.File(path, "r+") as file:
                edit(file)
            sealed = e2e.phalanx("checkpoint", "seal", path)
            self.assertEqual(sealed.returncode, 0, sealed.describe())
            return path

        huge = edited("huge", lambda file: file.create_dataset("model/extra", shape=(2 ** 40,), dtype="<f4",
                                                                chunks=(4096,)))
        line = refused("more than this machine's", "export", huge, os.path.join(WORK, "huge.safetensors"))
        self.assertIn("/model/extra", line)
        twice = edited("twice", lambda file: file.create_dataset("model/fc.weight", data=np.zeros((10, 64), "<f4")))
        line = refused("would both be torch's tensor 'fc.weight'", "export", twice,
                       os.path.join(WORK, "twice.safetensors"))
        self.assertIn("'fc/weight'", line)
        def empty_the_model(file):
            for name in list(file["model"].keys()):
                del file["model"][name]

        emptied = edited("emptied", empty_the_model)
        line = refused("/model: holds no tensors", "export", emptied, os.path.join(WORK, "emptied.safetensors"))
        self.assertIn(emptied, line)
        self.assertEqual([name for name in os.listdir(WORK) if name.endswith(".safetensors") and
                          name.startswith(("huge", "twice", "emptied", "from-a-directory"))], [])

    def test_init_from_with_freeze_moves_only_the_unfrozen(self):
        run_dir = os.path.join(WORK, "finetune")
        config = write_config("finetune", DATA, model__init_from=WEIGHTS, train__freeze=FROZEN,
                              checkpoint__every_steps=2)
        result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn(f"weights from {WEIGHTS} (107 parameters and buffers", result.stdout)
        self.assertIn("frozen (train.freeze: conv1, bn1, layer1): ", result.stdout)
        summary = e2e.read_summary(run_dir)
        self.assertEqual(summary["init_from"], {"file": WEIGHTS, "reinitialised": []})
        model = e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"), ("model",))["model"]
        moved = []
        for name, expected in EXPECTED.items():
            if under(name, FROZEN):
                np.testing.assert_array_equal(model[name], expected, err_msg=f"{name} is frozen")
            elif not np.array_equal(model[name], expected):
                moved.append(name)
        unfrozen = [name for name in EXPECTED if not under(name, FROZEN)]
        self.assertEqual(sorted(moved), sorted(unfrozen), "every unfrozen tensor moves, statistics included")

        # A resume takes the checkpoint's weights: model.init_from is not read again, and may change.
        resumed = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--resume",
                             os.path.join(run_dir, "checkpoints", "step-2.h5"),
                             "--set", "model.init_from=" + os.path.join(WORK, "no-such.safetensors"), timeout=300)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertNotIn("weights from", resumed.stdout)
        again = e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"), ("model",))["model"]
        for name in EXPECTED:
            np.testing.assert_array_equal(again[name], model[name], err_msg=f"{name}: the resumed step 3")
        # ... but not train.freeze, which shapes the trajectory.
        refused = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--resume",
                             os.path.join(run_dir, "checkpoints", "step-2.h5"), "--set", "train.freeze=[conv1]",
                             timeout=300)
        self.assertEqual(refused.returncode, 2, refused.describe())
        self.assertIn("freeze", refused.stderr)

    def test_another_class_count_reinitialises_the_head_only(self):
        run_dir = os.path.join(WORK, "five_classes")
        frozen = ["conv1", "bn1", "layer1", "layer2", "layer3"]
        config = write_config("five_classes", DATA5, model__init_from=IMPORTED, train__freeze=frozen)
        result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("classifier head re-initialised for 5 classes (the file's has another class count): "
                      "fc/weight, fc/bias", result.stdout)
        model = e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"), ("model",))["model"]
        self.assertEqual(model["fc/weight"].shape, (5, 64))
        for name, expected in EXPECTED.items():
            if not name.startswith("fc/"):
                np.testing.assert_array_equal(model[name], expected, err_msg=name)

    def test_init_from_and_freeze_refusals(self):
        misshapen = os.path.join(WORK, "init_misshapen.safetensors")
        state = dict(STATE)
        state["layer3.2.conv2.weight"] = ("F32", np.zeros((64, 64, 1, 1), np.float32))
        write_safetensors(misshapen, state)
        cases = [
            ({"model__init_from": misshapen},
             f"{misshapen}: tensor 'layer3.2.conv2.weight' has shape [64, 64, 1, 1] in the file but "
             "[64, 64, 3, 3] in the model"),
            ({"model__init_from": os.path.join(WORK, "absent.safetensors")}, "no such safetensors file"),
            ({"train__freeze": ["conv1", "layer9.0"]},
             "train.freeze: 'layer9/0' names no parameter of the model (its top-level layers: bn1, conv1, fc, "
             "layer1, layer2, layer3)"),
        ]
        for index, (changes, expected) in enumerate(cases):
            run_dir = os.path.join(WORK, f"refused{index}")
            config = write_config(f"refused{index}", DATA, **changes)
            result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, timeout=300)
            self.assertEqual(result.returncode, 2, result.describe())
            self.assertIn(expected, result.stderr)
            self.assertFalse(os.path.exists(run_dir), "a refused run leaves no run directory")


if __name__ == "__main__":
    e2e.main()
