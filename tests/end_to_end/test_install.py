"""End-to-end: phalanx installed as a cluster site installs it. `cmake --install` of this build into a
temporary prefix; from another folder the installed `phalanx train` runs a config from
share/phalanx/configs; a small CMake project of a user's own (tests/install/consumer) builds
against the exported package and trains a few steps through the C++ API; `module load phalanx`
(Debian's environment-modules) puts it on PATH and sets PHALANX_ROOT. Also `phalanx --version` and
the `version` object of summary.json.

Needs PHALANX_BUILD_DIR (the build tree to install; CTest sets it) and PHALANX_CMAKE (cmake)."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import unittest

import e2e_common as e2e

BUILD_DIR = os.environ.get("PHALANX_BUILD_DIR") or os.path.dirname(os.path.dirname(os.path.abspath(e2e.PHALANX or ".")))
CMAKE = os.environ.get("PHALANX_CMAKE") or shutil.which("cmake") or "cmake"
MODULES_INIT = "/usr/share/modules/init/bash"  # Debian's environment-modules
STEPS = 20


def setUpModule():
    global WORK, PREFIX, DATA, INSTALL_RESULT, VERSION
    e2e.require_binary()
    e2e.require_fashion()
    WORK = e2e.work_dir("install")
    PREFIX = os.path.join(WORK, "prefix")
    DATA = e2e.make_fashion_subset(WORK, 2000, 500)
    INSTALL_RESULT = e2e.run_command([CMAKE, "--install", BUILD_DIR, "--prefix", PREFIX], timeout=300)
    VERSION = e2e.phalanx("--version", timeout=60)


def installed(*parts):
    return os.path.join(PREFIX, *parts)


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.assertEqual(INSTALL_RESULT.returncode, 0, INSTALL_RESULT.describe())
        # A folder of its own, outside the source and build trees: nothing may be found by accident.
        self.elsewhere = os.path.join(WORK, "elsewhere-" + self._testMethodName)
        shutil.rmtree(self.elsewhere, ignore_errors=True)
        os.makedirs(self.elsewhere)

    def version_number(self):
        match = re.match(r"phalanx (\S+) \(commit (\S+),", VERSION.stdout)
        self.assertIsNotNone(match, VERSION.describe())
        return match.group(1), match.group(2)

    def test_layout(self):
        version, _ = self.version_number()
        for path in (("bin", "phalanx"), ("bin", "phalanx-mpirun"),
                     ("share", "phalanx", "configs", "fashion_mnist.yaml"),
                     ("share", "phalanx", "launch", "phalanx-mpirun"),
                     ("share", "phalanx", "launch", "slurm", "train.sbatch"),
                     ("share", "modulefiles", "phalanx", version),
                     ("include", "phalanx", "train", "job.hpp"),
                     ("lib", "libphalanx_train.a"),
                     ("lib", "cmake", "phalanx", "phalanxConfig.cmake"),
                     ("lib", "cmake", "phalanx", "phalanxTargets.cmake")):
            self.assertTrue(os.path.isfile(installed(*path)), "not installed: " + "/".join(path))
        for program in (("bin", "phalanx"), ("bin", "phalanx-mpirun"), ("share", "phalanx", "launch", "slurm", "train.sbatch")):
            self.assertTrue(os.access(installed(*program), os.X_OK), "/".join(program) + " is not executable")

    def test_version_names_the_commit_and_every_library(self):
        self.assertEqual(VERSION.returncode, 0, VERSION.describe())
        version, commit = self.version_number()
        self.assertRegex(version, r"^\d+\.\d+\.\d+$")
        source_head = subprocess.run(["git", "-C", e2e.SOURCE_DIR, "rev-parse", "--short=12", "HEAD"],
                                     capture_output=True, text=True)
        if source_head.returncode == 0:  # a source tree from git: the stamp must be its commit
            head = source_head.stdout.strip()
            edited = subprocess.run(["git", "-C", e2e.SOURCE_DIR, "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True).stdout.strip()
            if edited:
                # Edits on top of the commit: a digest of them, so that two builds of different edits
                # (a sweep and a job joining it) do not pass for one program.
                difference = subprocess.run(["git", "-C", e2e.SOURCE_DIR, "diff", "HEAD", "--no-ext-diff"],
                                            capture_output=True).stdout
                self.assertEqual(commit, f"{head}-modified-{hashlib.sha256(difference).hexdigest()[:8]}")
            else:
                self.assertEqual(commit, head)
        for library in (r"CUDA:\s+(on: toolkit \d+\.\d+, runtime \S+, driver \S+, cuDNN \d+\.\d+\.\d+, NCCL \d+\.\d+\.\d+|off)",
                        r"HDF5:\s+\d+\.\d+\.\d+ \((serial|parallel)\)", r"oneDNN:\s+\d+\.\d+\.\d+",
                        r"MPI:\s+.+\(MPI \d+\.\d+\)"):
            self.assertRegex(VERSION.stdout, library)
        with_cuda = os.environ.get("PHALANX_WITH_CUDA") == "1"
        self.assertEqual("CUDA:   on" in VERSION.stdout, with_cuda, VERSION.stdout)
        installed_version = e2e.run_command([installed("bin", "phalanx"), "--version"], timeout=60, cwd=self.elsewhere)
        self.assertEqual(installed_version.returncode, 0, installed_version.describe())
        self.assertEqual(installed_version.stdout, VERSION.stdout)

    def test_installed_program_trains_a_shipped_config(self):
        config = installed("share", "phalanx", "configs", "fashion_mnist.yaml")
        result = e2e.run_command([e2e.MPIEXEC, *e2e.MPI_FLAGS, "-np", "2", installed("bin", "phalanx"), "train", config,
                                  "--set", f"data.path={DATA}", "--set", f"train.max_steps={STEPS}",
                                  "--run-dir", "run"], timeout=300, cwd=self.elsewhere)
        self.assertEqual(result.returncode, 0, result.describe())
        summary = e2e.read_summary(os.path.join(self.elsewhere, "run"))
        self.assertEqual(summary["steps"], STEPS)
        self.assertEqual(summary["world_size"], 2)
        # summary.json says what ran: the same words as --version.
        _, commit = self.version_number()
        self.assertEqual(summary["version"]["git_commit"], commit)
        self.assertIn(summary["version"]["mpi"], VERSION.stdout)
        self.assertIn(summary["version"]["onednn"], VERSION.stdout)
        self.assertIn(summary["version"]["hdf5"], VERSION.stdout)

    def test_consumer_project_builds_against_the_package_and_trains(self):
        source = os.path.join(e2e.SOURCE_DIR, "tests", "install", "consumer")
        build = os.path.join(self.elsewhere, "build")
        configure = e2e.run_command([CMAKE, "-S", source, "-B", build, "-G", "Ninja",
                                     f"-DCMAKE_PREFIX_PATH={PREFIX}", "-DCMAKE_BUILD_TYPE=Release"], timeout=300)
        self.assertEqual(configure.returncode, 0, configure.describe())
        compile_result = e2e.run_command([CMAKE, "--build", build], timeout=600)
        self.assertEqual(compile_result.returncode, 0, compile_result.describe())
        program = os.path.join(build, "train_through_api")
        config = installed("share", "phalanx", "configs", "fashion_mnist.yaml")
        result = e2e.run_command([e2e.MPIEXEC, *e2e.MPI_FLAGS, "-np", "1", program, config, "run",
                                  f"data.path={DATA}", f"train.max_steps={STEPS}"], timeout=300, cwd=self.elsewhere)
        self.assertEqual(result.returncode, 0, result.describe())
        match = re.search(r"through the API: (\d+) steps, test accuracy ([0-9.]+)", result.stdout)
        self.assertIsNotNone(match, result.describe())
        self.assertEqual(int(match.group(1)), STEPS)
        # 20 steps of batch 64 on real Fashion-MNIST: far above chance (0.10), whatever the seed.
        self.assertGreater(float(match.group(2)), 0.3, result.describe())
        self.assertTrue(os.path.isfile(os.path.join(self.elsewhere, "run", "checkpoints", "latest.h5")))
        # A bad config through the API gets the same exit status as through `phalanx train`.
        bad = e2e.run_command([e2e.MPIEXEC, *e2e.MPI_FLAGS, "-np", "1", program, config, "bad-run",
                               "train.batch_sise=3"], timeout=120, cwd=self.elsewhere)
        self.assertEqual(bad.returncode, 2, bad.describe())
        self.assertIn("batch_sise", bad.stderr)

    def test_module_load_puts_it_on_path(self):
        if not os.path.isfile(MODULES_INIT):
            self.skipTest(f"{MODULES_INIT} not found (Debian: environment-modules)")
        script = (f". {MODULES_INIT} && module use {installed('share', 'modulefiles')} && module load phalanx && "
                  "echo \"PATH_PHALANX=$(command -v phalanx)\" && echo \"PATH_LAUNCHER=$(command -v phalanx-mpirun)\" && "
                  "echo \"ROOT=$PHALANX_ROOT\" && phalanx --version && module unload phalanx && "
                  "echo \"AFTER=${PHALANX_ROOT:-unset}\"")
        result = e2e.run_command(["bash", "-c", script], timeout=120, cwd=self.elsewhere)
        self.assertEqual(result.returncode, 0, result.describe())
        real_prefix = os.path.realpath(PREFIX)
        self.assertIn(f"PATH_PHALANX={real_prefix}/bin/phalanx\n", result.stdout)
        self.assertIn(f"PATH_LAUNCHER={real_prefix}/bin/phalanx-mpirun\n", result.stdout)
        self.assertIn(f"ROOT={real_prefix}\n", result.stdout)
        self.assertIn(VERSION.stdout, result.stdout)
        self.assertIn("AFTER=unset", result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
