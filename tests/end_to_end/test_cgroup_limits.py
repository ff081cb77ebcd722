"""End-to-end: a job in a control group that holds it to one core and 1 GiB (a container's --cpus 1
--memory 1g, Slurm's --mem) sizes itself by the group, not by the machine: the real binary, started in
a child group made here, says `threads 1` on its start line (the default thread count, no
OMP_NUM_THREADS) and takes half of 1 GiB as the data cache's budget. The same run outside the group
is the control: more threads where the machine has more cores, and a larger budget. Skipped where
this process cannot make groups (not root, no writable cgroup mount, a v2 parent without the
controllers delegated)."""

import os
import re
import shutil
import subprocess
import time
import unittest

import e2e_common as e2e

LIMIT_BYTES = 1 << 30


def cgroup_parents():
    """This process's group directory per controller ("cpu", "memory") and whether it is v2's: the
    v1 hierarchy's where one holds the controller, else the unified one's. Only mounts that show
    their hierarchy's top (root "/") are used: a container's view starts at its own group."""
    paths = {}
    with open("/proc/self/cgroup") as file:
        for line in file:
            hierarchy, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in (controllers.split(",") if controllers else ["unified"] if hierarchy == "0" else []):
                paths[controller] = path.lstrip("/")
    v1, unified = {}, None
    with open("/proc/self/mountinfo") as file:
        for line in file:
            fields, _, tail = line.rstrip("\n").partition(" - ")
            fields, tail = fields.split(), tail.split()
            if len(fields) < 5 or len(tail) < 3 or fields[3] != "/":
                continue
            if tail[0] == "cgroup":
                for controller in set(tail[2].split(",")) & {"cpu", "memory"} & set(paths):
                    v1[controller] = os.path.join(fields[4], paths[controller])
            elif tail[0] == "cgroup2" and "unified" in paths:
                unified = os.path.join(fields[4], paths["unified"])
    return {controller: (v1[controller], False) if controller in v1 else (unified, True) if unified else None
            for controller in ("cpu", "memory")}


class CgroupJobTest(unittest.TestCase):
    def setUp(self):
        e2e.require_binary()
        self.work = e2e.work_dir("cgroup_limits")
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("one core: a quota of one changes nothing")
        self.groups = []
        name = f"phalanx-e2e-{os.getpid()}"
        settings = {"cpu": (("cpu.cfs_quota_us", "100000"), ("cpu.max", "100000 100000")),
                    "memory": (("memory.limit_in_bytes", str(LIMIT_BYTES)), ("memory.max", str(LIMIT_BYTES)))}
        for controller, parent in cgroup_parents().items():
            if parent is None:
                self.skipTest(f"no cgroup mount with the {controller} controller at its top")
            directory, unified = parent
            group = os.path.join(directory, name)
            try:
                if group not in self.groups:  # v2 holds both controllers in one group
                    os.makedirs(group, exist_ok=True)
                    self.addCleanup(self.remove_group, group)  # also when a later step skips the test
                    self.groups.append(group)
                with open(os.path.join(group, settings[controller][1 if unified else 0][0]), "w") as file:
                    file.write(settings[controller][1 if unified else 0][1])
            except OSError as error:
                self.skipTest(f"cannot make or limit {group}: {error}")

    @staticmethod
    def remove_group(group):
        # Removed once empty: the singleton's Open MPI daemon outlives the run briefly.
        deadline = time.monotonic() + 20
        while True:
            try:
                os.rmdir(group)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def train(self, name, in_groups):
        data = e2e.make_synth(os.path.join(self.work, "tiny.h5"), train=64, test=32, height=8, width=8)
        config = e2e.base_config(data, name=name, batch_size=16, max_steps=2, preset="lenet5")
        config["model"] = {"layers": [{"type": "flatten"}, {"type": "linear", "out_features": 10}]}
        run_dir = os.path.join(self.work, name)
        shutil.rmtree(run_dir, ignore_errors=True)
        environment = e2e.child_environment()
        del environment["OMP_NUM_THREADS"]  # the default thread count is what is checked

        def join_groups():
            for group in self.groups:
                with open(os.path.join(group, "cgroup.procs"), "w") as file:
                    file.write(str(os.getpid()))

        completed = subprocess.run(
            [e2e.PHALANX, "train", e2e.write_config(os.path.join(self.work, name + ".yaml"), config),
             "--run-dir", run_dir],
            capture_output=True, text=True, timeout=120, env=environment,
            preexec_fn=join_groups if in_groups else None)
        self.assertEqual(completed.returncode, 0, completed.stdout + completed.stderr)
        threads = int(re.search(r"rank 0, host .*?\), threads (\d+)\b", completed.stdout).group(1))
        budget = float(re.search(r"budget ([0-9.]+) MB per node", completed.stdout).group(1))
        return threads, budget

    def test_threads_and_cache_budget_follow_the_group(self):
        threads, budget = self.train("in-group", True)
        self.assertEqual(threads, 1, "a quota of one core")
        self.assertAlmostEqual(budget, LIMIT_BYTES / 2 / 1e6, places=1)
        threads_outside, budget_outside = self.train("outside", False)
        self.assertGreater(threads_outside, 1, "outside the group: the cores the affinity allows")
        self.assertGreater(budget_outside, budget)


if __name__ == "__main__":
    e2e.main()
