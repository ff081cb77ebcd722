"""End-to-end on a real Slurm: a single-node cluster (munged, slurmctld, slurmd from slurm-wlm,
configured in a scratch folder) runs the real launch/slurm/train.sbatch with a tiny config. One
job runs through; a second one is told to stop with `scancel --batch --signal=USR1` (what
`--signal=B:USR1@T` does before the time limit): phalanx writes a checkpoint and exits 75, the
script requeues the job, the requeued job resumes from the checkpoint in the run directory named
after the job id, and its final weights equal the first job's bit for bit. A third one runs on two
nodes (`--nodes=1-2`; the second node is this machine under a second name, with its own slurmd):
that node dies mid-run (its slurmd and its job step's processes are killed), the job ends naming
the node and its rank, requeues itself, and the requeued job resumes on the one node left with the
global batch kept, within elastic resume's tolerance of the first job. A fourth one loses the node
of its batch script instead (the script, mpirun and rank 0 die with it): slurmctld ends it with
NODE_FAIL and requeues it, and it finishes the same way on the other node. sweep.sbatch, a
heterogeneous job (GPU and CPU components), is checked with `sbatch --test-only` and then run for
real with a tiny sweep on one rank per component (the GPU component's stand-in GPU trains on the
CPU): stopped with USR1 mid-sweep, it exits 75, requeues itself, and the requeued job finishes the
sweep with --resume, every (trial, rung) run once and each interrupted job continued from its
stop step. sweep-join.sbatch joins a running sweep from a job in the `cpu` partition (the sweep
runs as a one-rank job on the first node); once the joined group trains a trial past a checkpoint,
the join job is cancelled (`scancel`, as a user ends it): it leaves, the sweep requeues that trial,
continues it on its own group from the trial's newest checkpoint, and finishes with every (trial,
rung) once. (A join job killed outright, SIGKILL to its mpirun and ranks, is test_sweep_join.py's.)"""

import os
import re
import sqlite3
import time
import unittest

import cluster_jobs as jobs
import e2e_common as e2e
import local_slurm
import sweep_common

RANKS, BATCH, EPOCHS = 2, 32, 2
TRAIN, TEST = 4096, 256
TOTAL_STEPS = EPOCHS * TRAIN // (RANKS * BATCH)  # 128
# The node-loss job: a checkpoint every 20 steps, the node lost after step 104 (so the one rank
# left trains the last 28 steps from the step-100 checkpoint alone, with the two ranks' global
# batch of 64).
LOST_EVERY_STEPS, LOST_AFTER_STEP = 20, 104
# A dead slurmd is found by a failed ping (MessageTimeout) and declared DOWN after SlurmdTimeout;
# Slurm's defaults (10 s, 300 s) would keep the requeued job waiting for minutes.
CLUSTER_TIMEOUTS = "SlurmdTimeout=5\nMessageTimeout=3"


SWEEP_TEXT = """name: slurm_sweep
seed: 3
config: slurm.yaml
search: random
scheduler: asha
trials: 4
metric: test_accuracy
budget: {unit: epochs, min: 1, max: 3, eta: 3}
space:
  optimizer.learning_rate: {type: loguniform, low: 0.01, high: 0.1}
# Both groups are CPU ranks to phalanx (the "GPU" rank trains on the CPU), so one could join the
# other's trial; the requeue test checks that the redone job starts where the interrupted one ended.
workers: {join_running: false}
"""


def setUpModule():
    global WORK, CONFIG_PATH, SLURM
    local_slurm.require_slurm()
    e2e.require_fashion()
    WORK = e2e.work_dir("slurm")
    data = e2e.make_fashion_subset(WORK, TRAIN, TEST)
    config = e2e.base_config(
        data, name="slurm", seed=13, epochs=EPOCHS, batch_size=BATCH, log_every_steps=2,
        optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9})
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "slurm.yaml"), config)
    SLURM = local_slurm.LocalSlurm(os.path.join(WORK, "cluster"), gpus=2, cpu_node=True,
                                   extra_config=CLUSTER_TIMEOUTS)


def tearDownModule():
    if "SLURM" in globals():
        SLURM.close()


def script(name):
    return os.path.join(e2e.SOURCE_DIR, "launch", "slurm", name)


def submit_training(name):
    environment = ",".join([
        "ALL", f"PHALANX={e2e.PHALANX}", f"PHALANX_MPIRUN={os.path.join(e2e.SOURCE_DIR, 'launch', 'phalanx-mpirun')}",
        f"PHALANX_RUNS={os.path.join(WORK, 'runs')}", f"PHALANX_CPU_RANKS_PER_NODE={RANKS}", "OMP_NUM_THREADS=1"])
    result = SLURM.run(["sbatch", "--parsable", f"--job-name={name}", "--nodes=1", f"--ntasks-per-node={RANKS}",
                        "--cpus-per-task=1", "--gpus-per-node=0", "--time=10",
                        f"--output={os.path.join(WORK, name)}-%j.out", f"--export={environment}",
                        script("train.sbatch"), CONFIG_PATH], env=e2e.child_environment())
    job_id = result.stdout.strip().split(";")[0]
    return job_id, os.path.join(WORK, "runs", f"{name}-{job_id}"), os.path.join(WORK, f"{name}-{job_id}.out")


# The two node names are one machine with one network address. Open MPI 5's TCP transport finds no
# route from an address to the same address on another node ("Unable to find reachable pairing
# between local and remote interfaces"); over the loopback the ranks of the two names reach each
# other on Open MPI 4 and 5 alike. Real nodes have addresses of their own.
ONE_MACHINE_TCP = "OMPI_MCA_btl_tcp_if_include=lo"


def submit_on_two_nodes(name):
    """train.sbatch on one or two nodes of partition `both` (`--nodes=1-2`), one CPU rank per
    node, a checkpoint every LOST_EVERY_STEPS steps; mpirun's teardown waits 2 x 1 s."""
    environment = ",".join([
        "ALL", ONE_MACHINE_TCP, f"PHALANX={e2e.PHALANX}", f"PHALANX_MPIRUN={os.path.join(e2e.SOURCE_DIR, 'launch', 'phalanx-mpirun')}",
        f"PHALANX_RUNS={os.path.join(WORK, 'runs')}", "PHALANX_CPU_RANKS_PER_NODE=1", "PHALANX_STOP_GRACE=1",
        "OMP_NUM_THREADS=1"])
    result = SLURM.run(["sbatch", "--parsable", f"--job-name={name}", "--partition=both", "--nodes=1-2",
                        "--cpus-per-task=1", "--gpus-per-node=0", "--time=10",
                        f"--output={os.path.join(WORK, name)}-%j.out", f"--export={environment}",
                        script("train.sbatch"), CONFIG_PATH, "--set", f"checkpoint.every_steps={LOST_EVERY_STEPS}"],
                       env=e2e.child_environment())
    job_id = result.stdout.strip().split(";")[0]
    return job_id, os.path.join(WORK, "runs", f"{name}-{job_id}"), os.path.join(WORK, f"{name}-{job_id}.out")


def submit_sweep(name, sweep_file):
    """sweep.sbatch as a heterogeneous job: a component with one (stand-in) GPU rank in the default
    partition and a component with one CPU rank on the `cpu` partition's node. That node is this
    machine under a second name, which Open MPI cannot reach by itself: it takes the hosts from
    --host rather than from Slurm (whose allocation it reads only for the first component) and
    starts the daemon for the second name through a local rsh agent, under that name (a UTS
    namespace: Open MPI 5 names a node by the host name its daemon reports). Open MPI 4 reads these
    settings as OMPI_MCA_ variables, Open MPI 5's runtime (PRRTE) as PRTE_MCA_ ones."""
    agent = os.path.join(WORK, "local-agent")
    with open(agent, "w") as stream:
        stream.write("#!/bin/sh\n# rsh agent for Open MPI: AGENT HOST COMMAND... runs COMMAND here, named HOST\n"
                     "host=$1; shift\nexec unshare --uts /bin/sh -c \"hostname $host; $*\"\n")
    os.chmod(agent, 0o755)
    environment = ",".join(["OMPI_MCA_ras=^slurm", "OMPI_MCA_plm=rsh", f"OMPI_MCA_plm_rsh_agent={agent}",
        "PRTE_MCA_ras=^slurm", "PRTE_MCA_plm=ssh", f"PRTE_MCA_plm_ssh_agent={agent}", ONE_MACHINE_TCP,
        "ALL", f"PHALANX={e2e.PHALANX}", f"PHALANX_MPIRUN={os.path.join(e2e.SOURCE_DIR, 'launch', 'phalanx-mpirun')}",
        f"PHALANX_RUNS={os.path.join(WORK, 'runs')}", "OMP_NUM_THREADS=1"])
    result = SLURM.run(["sbatch", "--parsable", f"--job-name={name}", "--time=10",
                        f"--output={os.path.join(WORK, name)}-%j.out", f"--export={environment}",
                        "--nodes=1", "--gpus-per-node=1", "--ntasks-per-node=1", "--cpus-per-task=1", ":",
                        "--partition=cpu", "--nodes=1", "--ntasks-per-node=1", "--cpus-per-task=1",
                        script("sweep.sbatch"), sweep_file], env=e2e.child_environment())
    job_id = result.stdout.strip().split(";")[0].split("+")[0]
    return job_id, os.path.join(WORK, "runs", f"{name}-{job_id}"), os.path.join(WORK, f"{name}-{job_id}.out")


def local_agent_environment():
    """The settings that let mpirun start ranks on the `cpu` node (this machine under a second
    name): see submit_sweep."""
    agent = os.path.join(WORK, "local-agent")
    with open(agent, "w") as stream:
        stream.write("#!/bin/sh\n# rsh agent for Open MPI: AGENT HOST COMMAND... runs COMMAND here, named HOST\n"
                     "host=$1; shift\nexec unshare --uts /bin/sh -c \"hostname $host; $*\"\n")
    os.chmod(agent, 0o755)
    return ["OMPI_MCA_ras=^slurm", "OMPI_MCA_plm=rsh", f"OMPI_MCA_plm_rsh_agent={agent}", "PRTE_MCA_ras=^slurm",
            "PRTE_MCA_plm=ssh", f"PRTE_MCA_plm_ssh_agent={agent}", ONE_MACHINE_TCP]


def submit_sweep_and_join(sweep_file):
    """A one-rank sweep as a plain job on the first node, and sweep-join.sbatch on the `cpu`
    partition's node with one CPU rank, once the sweep's join.json is there. Returns the two job
    ids, the sweep directory and the two logs."""
    launcher = os.path.join(e2e.SOURCE_DIR, "launch", "phalanx-mpirun")
    sweep_dir = os.path.join(WORK, "runs", "joined-sweep")
    sweep_log = os.path.join(WORK, "joined-sweep.out")
    environment = ",".join(["ALL", f"PHALANX={e2e.PHALANX}", f"PHALANX_MPIRUN={launcher}", "OMP_NUM_THREADS=1"])
    result = SLURM.run(["sbatch", "--parsable", "--job-name=joined-sweep", "--nodes=1", "--ntasks-per-node=1",
                        "--cpus-per-task=1", "--gpus-per-node=0", "--time=10", f"--output={sweep_log}",
                        f"--export={environment}",
                        f"--wrap={launcher} --gpus-per-node 0 --cpu-ranks-per-node 1 --threads 1 -- "
                        f"{e2e.PHALANX} sweep {sweep_file} --sweep-dir {sweep_dir}"], env=e2e.child_environment())
    sweep_id = result.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(sweep_dir, "join.json")):
        self_log = read(sweep_log) if os.path.exists(sweep_log) else "no log"
        if time.monotonic() > deadline:
            raise AssertionError("the sweep wrote no join.json\n" + self_log + SLURM.logs())
        time.sleep(0.2)
    environment = ",".join(local_agent_environment() + [
        "ALL", f"PHALANX={e2e.PHALANX}", f"PHALANX_MPIRUN={launcher}", "OMP_NUM_THREADS=1"])
    result = SLURM.run(["sbatch", "--parsable", "--job-name=join", "--partition=cpu", "--nodes=1",
                        "--ntasks-per-node=1", "--cpus-per-task=1", "--time=10",
                        f"--output={os.path.join(WORK, 'join')}-%j.out", f"--export={environment}",
                        script("sweep-join.sbatch"), sweep_file, sweep_dir], env=e2e.child_environment())
    join_id = result.stdout.strip().split(";")[0]
    return sweep_id, join_id, sweep_dir, sweep_log, os.path.join(WORK, f"join-{join_id}.out")


def query(directory, sql, *parameters):
    """The rows of `sql` on the sweep's database; the running sweep may hold its write lock for a while."""
    return sweep_common.query(directory, sql, *parameters, timeout=10)


def read(path):
    with open(path, errors="replace") as stream:
        return stream.read()


class SlurmTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.straight_id, cls.straight_dir, cls.straight_log = submit_training("straight")
        cls.straight_state = SLURM.wait_for_state(cls.straight_id, ("COMPLETED", "FAILED", "CANCELLED"), 300)

    def test_uninterrupted_job_writes_its_run_directory(self):
        self.assertEqual(self.straight_state, "COMPLETED", read(self.straight_log) + SLURM.logs())
        self.assertEqual(e2e.read_summary(self.straight_dir)["steps"], TOTAL_STEPS)
        self.assertTrue(os.path.isfile(os.path.join(self.straight_dir, "checkpoints", "latest.h5")))
        log = read(self.straight_log)
        self.assertIn(f"phalanx job {self.straight_id} (start 1)", log)
        self.assertIn("phalanx-mpirun: 2 ranks on 1 node(s)", log)
        self.assertIn("finished with status 0", log)

    def test_signalled_job_requeues_and_resumes_bitwise(self):
        job_id, run_dir, log_path = submit_training("preempted")
        SLURM.wait_for_state(job_id, ("RUNNING",), 120)
        deadline = time.monotonic() + 180
        while jobs.last_logged_step(run_dir) < 20:
            self.assertLess(time.monotonic(), deadline, read(log_path) if os.path.exists(log_path) else "no log")
            time.sleep(0.05)
        signalled = time.monotonic()
        SLURM.run(["scancel", "--batch", "--signal=USR1", job_id])
        deadline = time.monotonic() + 240
        while SLURM.job_field(job_id, "Restarts") in ("", "0"):
            self.assertLess(time.monotonic(), deadline, read(log_path) + SLURM.logs())
            time.sleep(0.25)
        requeued = time.monotonic() - signalled
        state = SLURM.wait_for_state(job_id, ("COMPLETED", "FAILED", "CANCELLED"), 300)
        log = read(log_path)
        self.assertEqual(state, "COMPLETED", log + SLURM.logs())
        self.assertIn("stopped with a checkpoint (USR1); requeueing", log)
        self.assertIn(f"phalanx job {job_id} (start 2)", log)
        stops = jobs.events(run_dir, "preempted")
        self.assertEqual(len(stops), 1, log)
        self.assertIn(f"resumed from {run_dir}/checkpoints/step-{stops[0]['step']}.h5", log)
        self.assertEqual(e2e.read_summary(run_dir)["steps"], TOTAL_STEPS)
        differences = jobs.checkpoint_differences(os.path.join(self.straight_dir, "checkpoints", "latest.h5"),
                                                  os.path.join(run_dir, "checkpoints", "latest.h5"))
        self.assertEqual(differences, [], "the requeued job ends with other weights than the uninterrupted one")
        print(f"\nSlurm: USR1 -> stop after step {stops[0]['step']}, checkpoint "
              f"{stops[0]['signal_to_checkpoint_seconds']:.3f} s after the signal, requeued after {requeued:.1f} s")

    def lose_node(self, name, lost, left):
        """A job on both nodes (submit_on_two_nodes, the batch script on SLURM.host) loses node
        `lost` after step LOST_AFTER_STEP (kill_node: its slurmd, its job steps' processes), is
        requeued, and finishes on node `left` alone, from the newest checkpoint, with the global
        batch kept and within elastic resume's tolerance of the straight run. Returns (job id,
        the job's log, {pid: command} of the killed processes); the caller checks who requeued."""
        submitted = time.monotonic()
        job_id, run_dir, log_path = submit_on_two_nodes(name)
        SLURM.wait_for_state(job_id, ("RUNNING",), 120)
        self.assertEqual(SLURM.job_field(job_id, "NodeList"), f"{SLURM.host},{SLURM.cpu_host}",
                         "--nodes=1-2 with both nodes idle should get both")
        self.assertEqual(SLURM.job_field(job_id, "BatchHost"), SLURM.host)
        deadline = time.monotonic() + 180
        while jobs.last_logged_step(run_dir) < LOST_AFTER_STEP:
            self.assertLess(time.monotonic(), deadline, read(log_path) if os.path.exists(log_path) else "no log")
            time.sleep(0.02)
        lost_step = jobs.last_logged_step(run_dir)
        killed = time.monotonic()
        killed_commands = SLURM.kill_node(lost)
        self.assertTrue(killed_commands, f"no process of the job ran on node {lost}")
        restarted = []

        def bring_node_back():  # the other tests need it
            if not restarted:
                restarted.append(SLURM.restart_node(lost))
        self.addCleanup(bring_node_back)

        deadline = time.monotonic() + 120
        while SLURM.job_field(job_id, "Restarts") in ("", "0"):
            self.assertLess(time.monotonic(), deadline, read(log_path) + SLURM.logs())
            time.sleep(0.1)
        requeued = time.monotonic() - killed
        while "resumed from" not in read(log_path):
            self.assertLess(time.monotonic(), deadline, read(log_path) + SLURM.logs())
            time.sleep(0.05)
        resumed_step = int(re.search(r"resumed from \S+/checkpoints/step-(\d+)\.h5", read(log_path)).group(1))
        while jobs.last_logged_step(run_dir) <= resumed_step:
            self.assertLess(time.monotonic(), deadline, read(log_path) + SLURM.logs())
            time.sleep(0.02)
        training_again = time.monotonic() - killed
        bring_node_back()  # while the job trains on the other node: it keeps the nodes it started with
        state = SLURM.wait_for_state(job_id, ("COMPLETED", "FAILED", "CANCELLED"), 120)

        log = read(log_path)
        self.assertEqual(state, "COMPLETED", log + SLURM.logs())
        self.assertIn("2 ranks on 2 node(s)", log)
        self.assertIn(f"phalanx job {job_id} (start 2)", log)
        self.assertIn("1 ranks on 1 node(s)", log)
        self.assertEqual(SLURM.job_field(job_id, "NodeList"), left)
        self.assertEqual(SLURM.job_field(job_id, "BatchHost"), left)
        self.assertIn("elastic resume: the checkpoint's 2 ranks' global batch of 64 continues on 1 ranks", log)
        self.assertLessEqual(lost_step - resumed_step, LOST_EVERY_STEPS, "more than a checkpoint interval lost")
        summary = e2e.read_summary(run_dir)
        self.assertEqual((summary["steps"], summary["world_size"], summary["global_batch"]), (TOTAL_STEPS, 1, 64))
        worst, beyond = jobs.elastic_differences(os.path.join(self.straight_dir, "checkpoints", "latest.h5"),
                                                 os.path.join(run_dir, "checkpoints", "latest.h5"))
        self.assertEqual(beyond, [], f"the job resumed on node {left} ends too far from the straight run")
        print(f"\nSlurm node {lost} lost after step {lost_step}: requeued {requeued:.1f} s later, training again "
              f"on node {left} {training_again:.1f} s after the kill, from step {resumed_step} "
              f"({lost_step - resumed_step} logged steps lost); largest relative difference {worst:.2g}; "
              f"job done {time.monotonic() - submitted:.1f} s after its submission", end=" ")
        return job_id, log, killed_commands

    def test_job_that_loses_a_node_requeues_and_finishes_on_the_node_left(self):
        _, log, _ = self.lose_node("node-lost", SLURM.cpu_host, SLURM.host)
        # The batch script on the node left names the lost node and its rank and requeues the job
        # (or finds that slurmctld, having marked the node DOWN, requeued it first).
        self.assertRegex(log, rf"lost node {SLURM.cpu_host} \(rank 1\): mpirun exited with status \d+; .*requeueing")

    def test_job_that_loses_its_batch_node_is_requeued_by_slurm_and_finishes_on_the_node_left(self):
        job_id, log, killed_commands = self.lose_node("batch-node-lost", SLURM.host, SLURM.cpu_host)
        # The node of the batch script: the script, mpirun and rank 0 die with it, so nothing of
        # the job is left to requeue it; slurmctld marks the node DOWN, ends the job with NODE_FAIL
        # and requeues it (--requeue). The daemon Open MPI started on the other node loses mpirun
        # and ends rank 1 there.
        commands = set(killed_commands.values())
        self.assertLessEqual({"slurm_script", "phalanx"}, commands, killed_commands)
        self.assertTrue({"mpirun", "prterun"} & commands, killed_commands)  # Open MPI 5's mpirun runs as prterun
        self.assertIn(f"requeue job JobId={job_id} due to failure of node {SLURM.host}", SLURM.controller_log())
        self.assertNotIn("requeueing", log, "the batch script died with its node: it cannot have requeued")
        self.assertNotIn("finished with status", log.split(f"phalanx job {job_id} (start 2)")[0])

    def test_sweep_script_is_a_valid_heterogeneous_job(self):
        sweep = os.path.join(e2e.SOURCE_DIR, "configs", "sweeps")
        sweep_file = os.path.join(sweep, sorted(os.listdir(sweep))[0]) if os.path.isdir(sweep) else CONFIG_PATH
        result = SLURM.run(["sbatch", "--test-only", "--time=10", "--gpus-per-node=1", "--ntasks-per-node=1",
                            "--cpus-per-task=1", ":", "--nodes=1", "--ntasks-per-node=2", "--cpus-per-task=1",
                            script("sweep.sbatch"), sweep_file], check=False)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertRegex(result.stderr, r"sbatch: Job \d+ to start at", result.stderr)
        plain = SLURM.run(["sbatch", "--test-only", script("sweep.sbatch"), sweep_file], check=False)
        # unchanged knobs ask for more than this one small node has: Slurm refuses, it does not queue
        self.assertNotEqual(plain.returncode, 0, plain.stderr)

    def test_sweep_script_runs_stops_requeues_and_resumes(self):
        sweep_file = os.path.join(WORK, "slurm_sweep.yaml")
        with open(sweep_file, "w") as stream:
            stream.write(SWEEP_TEXT)
        job_id, sweep_dir, log_path = submit_sweep("sweep", sweep_file)
        SLURM.wait_for_state(job_id, ("RUNNING",), 120)
        # Signal once a rung result is in and a job is in flight past a checkpoint-free start.
        deadline = time.monotonic() + 240
        while True:
            self.assertLess(time.monotonic(), deadline, read(log_path) if os.path.exists(log_path) else "no log")
            time.sleep(0.2)
            try:
                if (query(sweep_dir, "SELECT * FROM rung_results")
                        and query(sweep_dir, "SELECT * FROM jobs WHERE status = 'running'")):
                    break
            except sqlite3.OperationalError:
                continue  # no database yet
        signalled = time.monotonic()
        SLURM.run(["scancel", "--batch", "--signal=USR1", job_id])
        deadline = time.monotonic() + 240
        while SLURM.job_field(job_id, "Restarts") in ("", "0"):
            self.assertLess(time.monotonic(), deadline, read(log_path) + SLURM.logs())
            time.sleep(0.25)
        requeued = time.monotonic() - signalled
        interrupted = query(sweep_dir, "SELECT * FROM jobs WHERE status = 'interrupted' ORDER BY job_id")
        SLURM.wait_for_requeued_start(job_id, 240)
        restarted = time.monotonic() - signalled
        state = SLURM.wait_for_state(job_id, ("COMPLETED", "FAILED", "CANCELLED"), 300)
        log = read(log_path)
        self.assertEqual(state, "COMPLETED", log + SLURM.logs())
        self.assertIn(f"phalanx sweep job {job_id} (start 1)", log)
        self.assertIn("sweep stopped by SIGUSR1", log)
        self.assertIn("stopped with its state saved (USR1); requeueing", log)
        self.assertIn(f"phalanx sweep job {job_id} (start 2)", log)
        self.assertIn(f"{len(interrupted)} interrupted jobs requeued", log)
        self.assertIn("sweep done", log)
        self.assertIn("finished with status 0", log)
        self.assertTrue(interrupted, log)
        # Two worker groups, one per component.
        self.assertEqual([worker["ranks"] for worker in query(sweep_dir, "SELECT * FROM workers ORDER BY worker")],
                         ["0", "1"])
        trials = query(sweep_dir, "SELECT * FROM trials ORDER BY trial_id")
        self.assertEqual([trial["trial_id"] for trial in trials], [0, 1, 2, 3])
        self.assertTrue(all(trial["status"] in ("completed", "stopped") for trial in trials), trials)
        done = query(sweep_dir, "SELECT * FROM jobs WHERE status = 'done'")
        results = query(sweep_dir, "SELECT * FROM rung_results ORDER BY trial_id, rung")
        self.assertEqual(sorted((job["trial_id"], job["rung"]) for job in done),
                         [(result["trial_id"], result["rung"]) for result in results])
        for job in interrupted:
            redo = [other for other in done if (other["trial_id"], other["rung"]) == (job["trial_id"], job["rung"])]
            self.assertEqual(len(redo), 1, job)
            self.assertEqual(redo[0]["start_step"], job["end_step"], (job, redo[0]))
        self.assertTrue(os.path.isfile(os.path.join(sweep_dir, "results.csv")))
        self.assertTrue(os.path.isfile(os.path.join(sweep_dir, "best", "checkpoint.h5")))
        print(f"\nSlurm sweep: USR1 -> {len(interrupted)} job(s) interrupted, requeued after {requeued:.1f} s, "
              f"running again after {restarted:.1f} s, resumed and finished", end=" ")


    def test_sweep_join_script_joins_and_its_cancelled_trial_is_continued(self):
        sweep_file = os.path.join(WORK, "slurm_join_sweep.yaml")
        with open(sweep_file, "w") as stream:
            # A checkpoint every 20 steps, so that the join job is cancelled past one of its trial's.
            stream.write(SWEEP_TEXT.replace("name: slurm_sweep", "name: slurm_join_sweep").replace("trials: 4", "trials: 5")
                         + "set: [checkpoint.every_steps=20]\n")
        sweep_id, join_id, sweep_dir, sweep_log, join_log = submit_sweep_and_join(sweep_file)
        deadline = time.monotonic() + 240
        killed = None
        while killed is None:
            self.assertLess(time.monotonic(), deadline, (read(join_log) if os.path.exists(join_log) else "no join log")
                            + read(sweep_log) + SLURM.logs())
            time.sleep(0.2)
            try:
                running = query(sweep_dir, "SELECT * FROM jobs WHERE worker = 1 AND status = 'running'")
            except sqlite3.OperationalError:
                continue
            for job in running:
                folder = os.path.join(sweep_dir, "trials", f"{job['trial_id']:05d}", "checkpoints")
                if os.path.isdir(folder) and any(name.endswith(".h5") for name in os.listdir(folder)):
                    killed = job
        SLURM.run(["scancel", join_id])
        state = SLURM.wait_for_state(sweep_id, ("COMPLETED", "FAILED", "CANCELLED"), 300)
        log = read(sweep_log)
        self.assertEqual(state, "COMPLETED", log + read(join_log) + SLURM.logs())
        self.assertIn("joined job 1: worker(s) 1 join the sweep", log)
        self.assertIn(f"joined job 1: worker(s) 1 left; trial(s) {killed['trial_id']} requeued", log)
        SLURM.wait_for_state(join_id, ("COMPLETED", "FAILED", "CANCELLED"), 120)
        self.assertIn("joined the sweep in", read(join_log))
        job = query(sweep_dir, "SELECT * FROM jobs WHERE job_id = ?", killed["job_id"])[0]
        self.assertEqual(job["status"], "interrupted", job)
        redo = query(sweep_dir, "SELECT * FROM jobs WHERE trial_id = ? AND rung = ? AND job_id > ? ORDER BY job_id",
                     killed["trial_id"], killed["rung"], killed["job_id"])
        self.assertTrue(redo and redo[0]["worker"] == 0 and redo[0]["status"] == "done", redo)
        self.assertTrue(redo[0]["resumed_from"], redo[0])
        trials = query(sweep_dir, "SELECT * FROM trials ORDER BY trial_id")
        self.assertEqual([trial["trial_id"] for trial in trials], list(range(5)))
        done = query(sweep_dir, "SELECT * FROM jobs WHERE status = 'done'")
        results = query(sweep_dir, "SELECT * FROM rung_results ORDER BY trial_id, rung")
        self.assertEqual(sorted((job["trial_id"], job["rung"]) for job in done),
                         [(result["trial_id"], result["rung"]) for result in results])
        self.assertFalse(os.path.exists(os.path.join(sweep_dir, "join.json")))


if __name__ == "__main__":
    e2e.main()
