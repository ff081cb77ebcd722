"""End-to-end: launch/phalanx-mpirun. The printed plan and mpirun command for homogeneous and
heterogeneous node groups (--dry-run starts nothing), errors for bad options (exit 2), and a real
2-rank job started by it: SIGTERM to the wrapper becomes a stop request for every rank (mpirun
would otherwise kill them), the job exits 75 with the stop step's checkpoint written."""

import os
import re
import signal
import subprocess
import time
import unittest

import cluster_jobs as jobs
import e2e_common as e2e

WRAPPER = os.path.join(e2e.SOURCE_DIR, "launch", "phalanx-mpirun")


def wrapper(*args, env=None, timeout=60, unset=()):
    environment = dict(e2e.child_environment(), **(env or {}))
    for name in unset:
        environment.pop(name, None)
    return subprocess.run([WRAPPER, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=environment)


class PlanTest(unittest.TestCase):
    def test_gpu_nodes_get_one_rank_per_gpu_and_bound_cores(self):
        result = wrapper("--hosts", "n1,n2", "--gpus-per-node", 4, "--dry-run", "--", "phalanx", "train", "c.yaml",
                         env={"SLURM_CPUS_ON_NODE": "32", "NCCL_DEBUG": "INFO", "PHALANX_THREADS_PER_CORE": "1"},
                         unset=("OMP_NUM_THREADS",))
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertIn("8 ranks on 2 node(s)", lines[0])
        plan = [re.split(r"\s+", line.strip()) for line in lines[1:9]]
        self.assertEqual([(row[1], row[3], row[7], row[8]) for row in plan],
                         [(str(rank), f"n{rank // 4 + 1}", "GPU", str(rank % 4)) for rank in range(8)])
        command = lines[9]
        self.assertIn("-np 8 --host n1:4,n2:4 --map-by ppr:4:node:PE=8 --bind-to core", command)
        self.assertIn("-x OMP_NUM_THREADS=8", command)
        self.assertIn("-x NCCL_DEBUG=INFO", command, "a variable the user set wins over the default")
        self.assertTrue(command.rstrip().endswith("phalanx train c.yaml"))

    def test_pe_counts_physical_cores_and_threads_every_hardware_thread(self):
        # Open MPI's PE counts cores: 32 CPUs of two threads a core are 16 cores, 8 per rank of 2,
        # each running 16 OpenMP threads. (PE=16 asked twice the cores there are, and mpirun refused.)
        result = wrapper("--hosts", "n1", "--cpu-ranks-per-node", 2, "--dry-run", "--", "phalanx", "train", "c.yaml",
                         env={"SLURM_CPUS_ON_NODE": "32", "PHALANX_THREADS_PER_CORE": "2", "OMP_NUM_THREADS": "3"},
                         unset=())
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("--map-by ppr:2:node:PE=8 --bind-to core", result.stdout)
        self.assertIn("-x OMP_NUM_THREADS=3", result.stdout, "the user's OMP_NUM_THREADS wins")
        result = wrapper("--hosts", "n1", "--cpu-ranks-per-node", 2, "--dry-run", "--", "phalanx", "train", "c.yaml",
                         env={"SLURM_CPUS_ON_NODE": "32", "PHALANX_THREADS_PER_CORE": "2"}, unset=("OMP_NUM_THREADS",))
        self.assertIn("-x OMP_NUM_THREADS=16", result.stdout)
        # This machine's own count: one line, a whole number no larger than its hardware threads.
        counted = subprocess.run([os.path.join(e2e.SOURCE_DIR, "launch", "phalanx-physical-cores")],
                                 capture_output=True, text=True, env=dict(e2e.child_environment(), OMP_NUM_THREADS="1"))
        self.assertEqual(counted.returncode, 0, counted.stderr)
        self.assertTrue(1 <= int(counted.stdout) <= os.cpu_count(), counted.stdout)

    def test_heterogeneous_groups(self):
        result = wrapper("--group", "g1:2:0", "--group", "c1,c2:0:3", "--threads", 2, "--dry-run", "phalanx", "sweep",
                         "s.yaml", env={"SLURM_CPUS_ON_NODE": "8"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("8 ranks on 3 node(s), 2 OpenMP thread(s) per CPU rank", result.stdout)
        devices = re.findall(r"rank (\d+)\s+host (\S+)\s+local rank (\d+)\s+(GPU \d|CPU)", result.stdout)
        self.assertEqual(devices, [("0", "g1", "0", "GPU 0"), ("1", "g1", "1", "GPU 1"),
                                   ("2", "c1", "0", "CPU"), ("3", "c1", "1", "CPU"), ("4", "c1", "2", "CPU"),
                                   ("5", "c2", "0", "CPU"), ("6", "c2", "1", "CPU"), ("7", "c2", "2", "CPU")])
        self.assertIn("--host g1:2,c1:3,c2:3 --map-by slot", result.stdout)

    def test_bad_options(self):
        for args, message in ((["--bogus"], "unknown option '--bogus'"),
                              (["--group", "g1:x:0", "phalanx"], "--group takes HOSTS:GPUS:CPU_RANKS"),
                              (["--gpus-per-node", "-1", "phalanx"], "--gpus-per-node takes a whole number"),
                              (["--dry-run"], "no command to run")):
            result = wrapper(*args)
            self.assertEqual(result.returncode, 2, (args, result.stdout, result.stderr))
            self.assertIn(message, result.stderr)


class SignalTest(unittest.TestCase):
    def test_sigterm_to_the_wrapper_stops_the_job_with_a_checkpoint(self):
        e2e.require_fashion()
        work = e2e.work_dir("phalanx_mpirun")
        data = e2e.make_fashion_subset(work, 8192, 256)
        config = e2e.write_config(os.path.join(work, "wrapper.yaml"),
                                  e2e.base_config(data, name="wrapper", epochs=2, batch_size=32, log_every_steps=2))
        run_dir = os.path.join(work, "run")
        with open(os.path.join(work, "wrapper.out"), "w") as out:
            process = subprocess.Popen([WRAPPER, "--cpu-ranks-per-node", "2", "--threads", "1", "--stop-grace", "1",
                                        "--mpirun-arg", "--oversubscribe", "--", e2e.PHALANX, "train", config,
                                        "--run-dir", run_dir], stdout=out, stderr=subprocess.STDOUT,
                                       env=e2e.child_environment(), start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while jobs.last_logged_step(run_dir) < 10:
                self.assertIsNone(process.poll(), "the job ended early")
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.05)
            process.send_signal(signal.SIGTERM)
            status = process.wait(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        with open(os.path.join(work, "wrapper.out")) as stream:
            output = stream.read()
        self.assertEqual(status, 75, output)
        stops = jobs.events(run_dir, "preempted")
        self.assertEqual(len(stops), 1, output)
        self.assertEqual(stops[0]["signal"], "SIGUSR1", "the wrapper turns SIGTERM into SIGUSR1 for mpirun")
        self.assertTrue(os.path.isfile(os.path.join(run_dir, "checkpoints", f"step-{stops[0]['step']}.h5")))
        # Only the wrapper got SIGTERM: the ranks' SIGUSR1 came through mpirun. Open MPI 4's says so
        # ("mpirun: Forwarding signal 10 to job"); Open MPI 5's forwards it without a word.
        if e2e.open_mpi_major() == 4:
            self.assertIn("mpirun: Forwarding signal 10 to job", output)


if __name__ == "__main__":
    e2e.main()
