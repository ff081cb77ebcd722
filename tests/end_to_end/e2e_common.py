"""Shared helpers of the end-to-end tests: they drive the real `phalanx` binary (through mpirun
where a command is data-parallel) on small datasets and read back its files with h5py.

Configuration comes from the environment (CTest sets it, see CMakeLists.txt):
  PHALANX_BIN          the phalanx executable
  PHALANX_MPIEXEC      mpiexec/mpirun
  PHALANX_E2E_WORK     a scratch folder under the build tree (each test file uses a subfolder)
  PHALANX_FASHION_DIR  folder with the four Fashion-MNIST gzip IDX files
                       (default /usr/share/datasets/fashion-mnist)
  PHALANX_SOURCE_DIR   the source tree (for configs/; default: two folders above this file)
A test file can also be run by hand: python3 test_x.py PHALANX_BIN MPIEXEC [unittest args].
"""

import gzip
import json
import math
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import time
import unittest

import numpy as np

try:
    import h5py
except ImportError as error:  # h5py is a hard requirement: these tests read HDF5 files.
    sys.exit(f"end-to-end tests need h5py (Debian: python3-h5py): {error}")

try:
    import yaml
except ImportError:  # config.yaml is checked with PyYAML when it is there (Debian: python3-yaml)
    yaml = None


def _configure_from_argv():
    # `python3 test_x.py /path/to/phalanx /usr/bin/mpiexec [unittest args]`
    args = sys.argv[1:]
    if len(args) >= 2 and not args[0].startswith("-") and not args[1].startswith("-"):
        os.environ["PHALANX_BIN"] = args[0]
        os.environ["PHALANX_MPIEXEC"] = args[1]
        sys.argv[1:] = args[2:]


_configure_from_argv()

PHALANX = os.environ.get("PHALANX_BIN", "")
MPIEXEC = os.environ.get("PHALANX_MPIEXEC", "") or shutil.which("mpiexec") or "mpiexec"
FASHION_DIR = os.environ.get("PHALANX_FASHION_DIR", "/usr/share/datasets/fashion-mnist")
WORK_ROOT = os.environ.get("PHALANX_E2E_WORK") or os.path.join(os.getcwd(), "e2e-work")
SOURCE_DIR = os.environ.get("PHALANX_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))

IDX_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                   "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
ERROR_LINE = re.compile(r"^phalanx: error", re.MULTILINE)
STAGES = ("data_wait", "host_to_device", "forward", "backward", "allreduce_wait", "optimizer", "sync_wait", "other")


def child_environment():
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMP_NUM_THREADS": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"})
    return env


class Result:
    def __init__(self, command, completed, seconds):
        self.command = command
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.seconds = seconds

    def describe(self):
        def tail(text, lines=40):
            return "\n".join(text.splitlines()[-lines:])
        return (f"$ {' '.join(self.command)}\nexit status {self.returncode} after {self.seconds:.1f} s\n"
                f"--- stdout (tail) ---\n{tail(self.stdout)}\n--- stderr (tail) ---\n{tail(self.stderr)}")

    def error_lines(self):
        return [line for line in self.stderr.splitlines() if line.startswith("phalanx: error")]


def run_command(command, timeout=300, cwd=None):
    start = time.monotonic()
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                   env=child_environment(), cwd=cwd, errors="replace")
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"timed out after {timeout} s: {' '.join(command)}\n"
                             f"stdout: {error.stdout}\nstderr: {error.stderr}") from None
    return Result(command, completed, time.monotonic() - start)


def phalanx(*args, timeout=300, cwd=None):
    """The binary on its own (no mpirun): the data commands and command-line errors."""
    return run_command([PHALANX, *map(str, args)], timeout=timeout, cwd=cwd)


MPI_FLAGS = ["--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1"]


def seal_checkpoint(path):
    """`phalanx checkpoint seal PATH`, as a user accepts a checkpoint edited on purpose (h5py r+)."""
    result = phalanx("checkpoint", "seal", path)
    if result.returncode != 0:
        raise AssertionError("phalanx checkpoint seal failed\n" + result.describe())


def mpirun(np_ranks, *args, timeout=300, cwd=None):
    """`mpirun -np N phalanx ARGS...`"""
    return run_command([MPIEXEC, *MPI_FLAGS, "-np", str(np_ranks), PHALANX, *map(str, args)],
                       timeout=timeout, cwd=cwd)


def open_mpi_major():
    """The major version of the Open MPI whose mpiexec the tests run (`mpiexec (OpenRTE) 4.1.4`,
    `mpiexec (Open MPI) 5.0.7`); 0 for another MPI."""
    global _OPEN_MPI_MAJOR
    if _OPEN_MPI_MAJOR is None:
        first = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        found = re.match(r"\S+ \((?:OpenRTE|Open MPI)\) (\d+)\.", first)
        _OPEN_MPI_MAJOR = int(found.group(1)) if found else 0
    return _OPEN_MPI_MAJOR


_OPEN_MPI_MAJOR = None


def mpirun_per_rank(apps, flags=MPI_FLAGS, timeout=300, cwd=None):
    """One job whose ranks run different commands, as MPMD (`mpirun -np 1 A : -np 2 B`) would:
    apps is a list of (ranks, [command words]), in rank order. Debian 13's Open MPI 5.0.7 mpirun
    crashes on any MPMD command line (open-mpi/ompi#13303, external PMIx; still in 5.0.10), so
    every rank starts `sh`, which runs its own command by its rank number, on Open MPI 4 and 5 alike."""
    cases, rank = [], 0
    for ranks, words in apps:
        cases.append(f"{rank}{''.join(f'|{rank + more}' for more in range(1, ranks))}) "
                     f"exec {shlex.join(map(str, words))} ;;")
        rank += ranks
    script = f'case "$OMPI_COMM_WORLD_RANK" in {" ".join(cases)} esac; exit 99'
    return run_command([MPIEXEC, *flags, "-np", str(rank), "sh", "-c", script], timeout=timeout, cwd=cwd)


def work_dir(name):
    """A fresh scratch folder for one test file."""
    path = os.path.join(WORK_ROOT, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def fault_library(test, folder):
    """tests/end_to_end/failing_file_system.c built into `folder`; skips `test` where it cannot be built.
    Returns the environment that preloads it (a sanitizer runtime wants to come first; the preloaded
    calls are not what it checks)."""
    library = os.path.join(folder, "failing_file_system.so")
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "failing_file_system.c")
    built = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", library, source, "-ldl"],
                           capture_output=True, text=True)
    if built.returncode != 0:
        test.skipTest(f"cannot build the fault-injection library: {built.stderr.strip()}")
    environment = child_environment()
    environment["LD_PRELOAD"] = library
    environment["ASAN_OPTIONS"] = environment.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    return environment


def gpu_count():
    """GPUs the NVIDIA driver reports on this machine (0 without driver or nvidia-smi)."""
    try:
        listing = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU ")) if listing.returncode == 0 else 0


def require_binary():
    if not PHALANX or not os.access(PHALANX, os.X_OK):
        raise RuntimeError(f"PHALANX_BIN is not an executable: {PHALANX!r} (set it or pass it as argv[1])")


# ----- datasets ------------------------------------------------------------------------------

def require_fashion():
    missing = [name for name in IDX_FILES if not os.path.isfile(os.path.join(FASHION_DIR, name))]
    if missing:
        raise unittest.SkipTest(f"Fashion-MNIST IDX files not found in {FASHION_DIR} ({', '.join(missing)}); "
                                "set PHALANX_FASHION_DIR")


def read_idx(path):
    with gzip.open(path, "rb") as stream:
        data = stream.read()
    magic, = struct.unpack(">I", data[:4])
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    assert magic >> 8 == 0x08, f"{path}: not an unsigned-byte IDX file"
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def write_idx(path, array):
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = struct.pack(">I", 0x0800 | array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    with gzip.open(path, "wb", compresslevel=1) as stream:
        stream.write(header + array.tobytes())


def write_fashion_subset_idx(folder, train_count, test_count):
    """Writes the first train_count / test_count samples of Fashion-MNIST as a gzip IDX set.
    Returns the labels of the subset: (train_labels, test_labels)."""
    require_fashion()
    os.makedirs(folder, exist_ok=True)
    subset = {}
    for name, count in zip(IDX_FILES, (train_count, train_count, test_count, test_count)):
        array = read_idx(os.path.join(FASHION_DIR, name))[:count]
        write_idx(os.path.join(folder, name), array)
        subset[name] = array
    return subset


def make_fashion_subset(folder, train_count=4000, test_count=1000):
    """The subset imported with `phalanx data import-idx --classes fashion`; returns the .h5 path
    (made once per work folder)."""
    output = os.path.join(folder, f"fashion-{train_count}-{test_count}.h5")
    if os.path.exists(output):
        return output
    idx_folder = os.path.join(folder, f"fashion-idx-{train_count}-{test_count}")
    write_fashion_subset_idx(idx_folder, train_count, test_count)
    result = phalanx("data", "import-idx", idx_folder, "-o", output, "--classes", "fashion", timeout=120)
    if result.returncode != 0:
        raise AssertionError("import-idx failed\n" + result.describe())
    return output


def make_synth(path, train=256, test=64, height=28, width=28, channels=1, classes=10, seed=3):
    result = phalanx("data", "synth", "-o", path, "--train", train, "--test", test, "--height", height,
                     "--width", width, "--channels", channels, "--classes", classes, "--seed", seed, timeout=120)
    if result.returncode != 0:
        raise AssertionError("data synth failed\n" + result.describe())
    return path


# ----- configs and run directories ------------------------------------------------------------

def _yaml_scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))  # a JSON string is a valid YAML double-quoted scalar


def to_yaml(value, indent=0):
    """A small YAML writer (block style), so that configs do not depend on PyYAML."""
    pad = " " * indent
    lines = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:")
                lines.append(to_yaml(item, indent + 2))
            elif isinstance(item, list):
                lines.append(f"{pad}{key}: []")
            else:
                lines.append(f"{pad}{key}: {_yaml_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                inner = to_yaml(item, indent + 2).splitlines()
                lines.append(f"{pad}- {inner[0].lstrip()}")
                lines += inner[1:]
            else:
                lines.append(f"{pad}- {_yaml_scalar(item)}")
    return "\n".join(lines)


def write_config(path, config):
    with open(path, "w") as stream:
        stream.write(to_yaml(config) + "\n")
    return path


def base_config(data_path, name="e2e", seed=1, epochs=1, batch_size=32, max_steps=None, preset="fmnist_cnn",
                optimizer=None, schedule=None, every_steps=0, keep=2, log_every_steps=10):
    config = {
        "name": name,
        "seed": seed,
        "device": "cpu",
        "model": {"preset": preset},
        "data": {"path": os.path.abspath(data_path)},
        "optimizer": optimizer or {"type": "adamw", "learning_rate": 0.002, "weight_decay": 0.0001},
        "schedule": schedule or {"type": "cosine", "warmup_epochs": 0.1},
        "train": {"epochs": epochs, "batch_size": batch_size, "log_every_steps": log_every_steps},
        "checkpoint": {"every_steps": every_steps, "keep": keep},
    }
    if max_steps is not None:
        config["train"]["max_steps"] = max_steps
    return config


def read_summary(run_dir):
    with open(os.path.join(run_dir, "summary.json")) as stream:
        return json.load(stream)


def read_metrics(run_dir):
    events = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as stream:
        for number, line in enumerate(stream, 1):
            if line.strip():
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise AssertionError(f"metrics.jsonl line {number} is not JSON: {line!r} ({error})")
    return events


def _protobuf_fields(message):
    """(field number, wire type, value) of a protobuf message: an int for varints, bytes for the
    rest (https://protobuf.dev/programming-guides/encoding)."""
    at = 0

    def varint():
        nonlocal at
        value, shift = 0, 0
        while True:
            byte = message[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value
    while at < len(message):
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            yield field, wire, varint()
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            yield field, wire, message[at:at + size]
            at += size
        elif wire == 2:
            size = varint()
            yield field, wire, message[at:at + size]
            at += size
        else:
            raise AssertionError(f"protobuf wire type {wire} in a TensorBoard event")


def read_tensorboard_files(run_dir):
    """[(file name, [event])] of the run directory's TensorBoard event files in name order (the
    order TensorBoard reads them). An event is a dict with step, wall_time and, as present,
    file_version, scalars {tag: value}, session_status (SessionLog; START = 1), checkpoint_path.
    Decodes the TFRecord framing and the few Event fields phalanx writes (tensorboard_writer.cpp)."""
    files = []
    for name in sorted(n for n in os.listdir(run_dir) if n.startswith("events.out.tfevents.")):
        with open(os.path.join(run_dir, name), "rb") as stream:
            data = stream.read()
        events, at = [], 0
        while at < len(data):
            (length,) = struct.unpack_from("<Q", data, at)
            record = data[at + 12:at + 12 + length]
            if len(record) != length or at + 16 + length > len(data):
                raise AssertionError(f"{name}: record at byte {at} is cut short")
            at += 16 + length
            event = {"step": 0, "wall_time": 0.0}
            for field, _, value in _protobuf_fields(record):
                if field == 1:
                    (event["wall_time"],) = struct.unpack("<d", value)
                elif field == 2:
                    event["step"] = value
                elif field == 3:
                    event["file_version"] = value.decode()
                elif field == 5:  # Summary { repeated Value value = 1 }
                    for _, _, summary_value in _protobuf_fields(value):
                        parts = {number: part for number, _, part in _protobuf_fields(summary_value)}
                        event.setdefault("scalars", {})[parts[1].decode()] = struct.unpack("<f", parts[2])[0]
                elif field == 7:  # SessionLog { status = 1; checkpoint_path = 2 }
                    for number, _, part in _protobuf_fields(value):
                        if number == 1:
                            event["session_status"] = part
                        elif number == 2:
                            event["checkpoint_path"] = part.decode()
            events.append(event)
        files.append((name, events))
    return files


SESSION_START = 1


def tensorboard_scalars(files):
    """{tag: [(step, value)]} as TensorBoard shows the files of read_tensorboard_files: its
    event accumulator treats every SessionLog START after the run's first as a restart and drops
    the points it read before whose step is >= the START's step."""
    scalars, seen_start = {}, False
    for _, events in files:
        for event in events:
            if event.get("session_status") == SESSION_START:
                if seen_start:
                    for tag in scalars:
                        scalars[tag] = [(step, value) for step, value in scalars[tag] if step < event["step"]]
                seen_start = True
            for tag, value in event.get("scalars", {}).items():
                scalars.setdefault(tag, []).append((event["step"], value))
    return scalars


def finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def datasets_under(file, group):
    """{relative/name: numpy array} of every dataset under `group` of an open h5py file."""
    found = {}

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            found[name] = item[()]
    if group in file:
        file[group].visititems(visit)
    return found


def read_checkpoint_arrays(path, groups=("model", "optimizer")):
    with h5py.File(path, "r") as file:
        return {group: datasets_under(file, group) for group in groups}


def attr_text(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray) and value.shape == ():
        return attr_text(value[()])
    return str(value)


SKIPPED_STATUS = 77  # CTest's SKIP_RETURN_CODE for these tests


def main():
    """Runner for the test files: exit status 0 when every test passed, 77 when everything was
    skipped (the reasons are printed), 1 on any failure or error."""
    require_binary()
    program = unittest.main(module="__main__", exit=False, verbosity=2)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0 or len(result.skipped) >= result.testsRun:
        for test, reason in result.skipped:
            print(f"skipped {test}: {reason}")
        sys.exit(SKIPPED_STATUS)
    sys.exit(0)
