"""End-to-end: launch/gpu-check.sh, the script a GPU lease runs, checked where there is no GPU so
that the lease's minutes go to running it. Bad usage and a missing bundle or CUDA build exit 2
with a message; with a CUDA build, `--run` on a machine without a GPU stops within seconds with
exit 3, and the dry run (GPU_CHECK_DRY_RUN=1) runs every step on the CPU and leaves its summary,
step logs and JSON results in $OUT, within the few files that come back from a lease."""

import json
import os
import shutil
import subprocess
import time
import unittest

import e2e_common as e2e

SCRIPT = os.path.join(e2e.SOURCE_DIR, "launch", "gpu-check.sh")


def gpu_check(*args, env=None, cwd=None, timeout=120):
    environment = dict(e2e.child_environment(), **(env or {}))
    return subprocess.run([SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=environment, cwd=cwd)


def build_folder():
    """The build folder of the phalanx binary under test (its src/ holds phalanx)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(e2e.PHALANX)))


def cuda_test_binaries():
    tests = os.path.join(build_folder(), "tests")
    binaries = [os.path.join(tests, name)
                for name in ("phalanx_backend_cuda_tests", "phalanx_comm_nccl_tests", "phalanx_parity_tests")]
    return binaries if all(os.access(binary, os.X_OK) for binary in binaries) else None


def open_mpi_plugin_folders():
    """Open MPI's and PMIx's plugin folders on this machine (what --bundle carries)."""
    listing = subprocess.run(["ompi_info", "--parsable", "--path", "pkglibdir"], capture_output=True, text=True)
    openmpi = next((line.split(":", 2)[2] for line in listing.stdout.splitlines()
                    if line.startswith("path:pkglibdir:")), None)
    libraries = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    pmix_library = next((line.split("=>")[1].strip() for line in libraries.splitlines()
                         if "libpmix.so.2 " in line), None)
    pmix = os.path.join(os.path.dirname(os.path.realpath(pmix_library)), "pmix") if pmix_library else None
    return openmpi, pmix


def torch_importable():
    """Whether the dry run's Python (/usr/bin/python3, as run_check sets PYTHON) has PyTorch."""
    return subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode == 0


class UsageTest(unittest.TestCase):
    WORK = e2e.work_dir("gpu_check_usage")

    def test_no_mode_is_usage_error(self):
        result = gpu_check()
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("usage: launch/gpu-check.sh --bundle DIR | --run DIR", result.stderr)

    def test_run_without_bundle_names_it_and_the_way_to_make_it(self):
        result = gpu_check("--run", "no-such-bundle", cwd=self.WORK)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("no no-such-bundle or no-such-bundle.tar.xz", result.stderr)
        self.assertIn("--bundle", result.stderr)

    def test_bundle_refuses_a_build_without_cuda_binaries(self):
        empty_build = os.path.join(self.WORK, "empty-build")
        os.makedirs(empty_build, exist_ok=True)
        bundle = os.path.join(self.WORK, "bundle")
        result = gpu_check("--bundle", bundle, env={"PHALANX_BUILD_DIR": empty_build}, cwd=e2e.SOURCE_DIR)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("phalanx_backend_cuda_tests is missing", result.stderr)
        self.assertIn("PHALANX_CUDA=ON", result.stderr)
        self.assertFalse(os.path.exists(bundle + ".tar.xz"))


class RunWithoutGpuTest(unittest.TestCase):
    """--run on an unpacked bundle made of this build's binaries (what --bundle would pack)."""

    WORK = e2e.work_dir("gpu_check_run")

    @classmethod
    def setUpClass(cls):
        binaries = cuda_test_binaries()
        if binaries is None:
            raise unittest.SkipTest("this build has no CUDA test binaries (PHALANX_CUDA off): nothing to bundle")
        if e2e.gpu_count() > 0:
            raise unittest.SkipTest("a GPU is present: the check would run for real")
        openmpi, pmix = open_mpi_plugin_folders()
        if not openmpi or not pmix:
            raise unittest.SkipTest("Open MPI's or PMIx's plugin folder not found")
        cls.bundle = os.path.join(cls.WORK, "gpu-bundle")
        os.makedirs(os.path.join(cls.bundle, "lib"))
        os.makedirs(os.path.join(cls.bundle, "mpi"))
        device_ops = os.path.join(build_folder(), "bench", "phalanx_bench_device_ops")
        if not os.path.exists(device_ops):
            raise unittest.SkipTest(f"{device_ops} is missing (PHALANX_BENCH off): --bundle would refuse too")
        for binary in [e2e.PHALANX, *binaries, device_ops]:
            os.symlink(os.path.abspath(binary), os.path.join(cls.bundle, os.path.basename(binary)))
        os.symlink(openmpi, os.path.join(cls.bundle, "mpi", "openmpi"))
        os.symlink(pmix, os.path.join(cls.bundle, "mpi", "pmix"))
        shutil.copytree(os.path.join(e2e.SOURCE_DIR, "configs"), os.path.join(cls.bundle, "configs"))
        for script in ("torch_resnet50.py", "torch_device_ops.py"):
            shutil.copy(os.path.join(e2e.SOURCE_DIR, "bench", script), cls.bundle)
        e2e.require_fashion()
        fashion = e2e.make_fashion_subset(os.path.join(cls.WORK, "fashion"), train_count=2000, test_count=500)
        os.symlink(fashion, os.path.join(cls.bundle, "fashion-mnist.h5"))

    def run_check(self, name, **env):
        out = os.path.join(self.WORK, name)
        shutil.rmtree(out, ignore_errors=True)
        # The GPU machine has no Open MPI: an install prefix with nothing in it stands for that (a
        # process started without mpirun looked there for orted, and MPI_Init failed).
        environment = {"OUT": out, "TMPDIR": os.path.join(self.WORK, "tmp-" + name), "PYTHON": "/usr/bin/python3",
                       "OPAL_PREFIX": os.path.join(self.WORK, "no-open-mpi")}
        os.makedirs(environment["TMPDIR"], exist_ok=True)
        start = time.monotonic()
        result = gpu_check("--run", self.bundle, env=dict(environment, **env), timeout=600)
        return result, out, time.monotonic() - start

    def test_stops_at_once_with_exit_3_and_says_why(self):
        result, out, seconds = self.run_check("no-gpu")
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertLess(seconds, 60)
        with open(os.path.join(out, "summary.txt")) as file:
            summary = file.read()
        self.assertIn("FAILED: no usable CUDA device", summary)
        self.assertNotIn("cuda-tests", summary, "nothing runs after the probe")

    def test_dry_run_runs_every_step_and_leaves_few_files(self):
        result, out, _ = self.run_check("dry-run", GPU_CHECK_DRY_RUN="1")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        with open(os.path.join(out, "summary.txt")) as file:
            summary = file.read()
        for step in ("cuda-tests", "nccl-tests", "train-fmnist", "synth-224", "train-resnet50", "torch-resnet50",
                     "train-resnet50-bf16-activations", "bench-transfer", "bench-device-ops", "torch-device-ops", "train-resnet50-fastest", "train-bf16", "train-auto-batch", "eval-gpu-checkpoint-on-cpu",
                     "eval-cpu-checkpoint-on-gpu", "bench-devices", "bench-allreduce"):
            self.assertRegex(summary, rf"{step}: exit \d+", step)
        self.assertRegex(summary, r"train-fmnist: exit 0 ")
        self.assertRegex(summary, r"train-resnet50: exit 0 ")
        # The second ResNet-50 run passes train.activation_dtype (the compute precision, fp32 on a CPU).
        self.assertRegex(summary, r"train-resnet50-bf16-activations: exit 0 ")
        # The op tables of both sides, fp32 only on a CPU.
        self.assertRegex(summary, r"bench-device-ops: exit 0 ")
        self.assertRegex(summary, r"# bench device_ops: cpu .*\n.*fp32\nconv 7x7/2 3->64 @224 forward +[0-9.]+\n")
        # PyTorch is the peer on the GPU machine; here it is optional (Debian's python3-torch): without
        # it the PyTorch steps still run and say what is missing.
        if torch_importable():
            self.assertRegex(summary, r"torch-device-ops: exit 0 ")
            self.assertRegex(summary, r"ratio phalanx \(fp32 activations\)/pytorch: [0-9.]+, against fp32 activations: ")
        else:
            self.assertRegex(summary, r"torch-device-ops: exit 1 ")
            self.assertIn("No module named 'torch'", summary)
            self.assertRegex(summary, r"ratio phalanx \(fp32 activations\)/pytorch: n/a, against fp32 activations: [0-9.]+")
        self.assertRegex(summary, r"train-resnet50-fastest: exit 0 ")
        self.assertRegex(summary, r"any algorithm: [0-9.]+ images/s")
        self.assertRegex(summary, r"batch norm 256 @56 backward +[0-9.]+\n")
        self.assertRegex(summary, r"phalanx, fp32 activations: [0-9.]+ images/s")
        # Without a GPU both ranks are CPU ranks; the batch split by throughput still trains.
        self.assertRegex(summary, r"train-mixed-split: exit 0 ")
        self.assertRegex(summary, r"batch split: rank 0 cpu \d+ \(")
        # The sweep step (all CPU groups without a GPU) runs to its end and counts its jobs.
        self.assertRegex(summary, r"sweep-gpu-and-cpu: exit 0 ")
        self.assertRegex(summary, r"sweep done in [0-9.]+ s: 3 trials")
        self.assertRegex(summary, r"jobs per device: +\d+ worker \d+ \(cpu")
        with open(os.path.join(out, "fmnist-summary.json")) as file:
            fmnist = json.load(file)
        self.assertGreater(fmnist["test_accuracy"], 0.6)
        self.assertIn("hidden_share", fmnist["time_breakdown"]["host_to_device_total"])
        with open(os.path.join(out, "resnet50-summary.json")) as file:
            self.assertGreater(json.load(file)["images_per_sec"], 0)
        with open(os.path.join(out, "resnet50-bf16-activations-summary.json")) as file:
            self.assertGreater(json.load(file)["images_per_sec"], 0)
        self.assertRegex(summary, r"breakdown ms/step: allreduce_total [0-9.]+")
        files = os.listdir(out)
        self.assertLessEqual(len(files), 8, files)
        self.assertIn("steps.log", files)


if __name__ == "__main__":
    e2e.main()
