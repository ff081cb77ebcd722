"""A node lost under launch/slurm/train.sbatch on a real local Slurm (tests/end_to_end/local_slurm.py:
slurmctld and two slurmd, the second node being this machine under a second name): a job on
`--nodes=1-2`, one CPU rank per node (fmnist_cnn, batch 32 per rank, a 4,096-image Fashion-MNIST
subset, 128 steps, a checkpoint every --every-steps steps), loses a node after step --lost-after
(its slurmd and its job steps' processes are killed): the second node (--lose second; the batch
script on the first one requeues the job) or the node of the batch script (--lose batch; the
script, mpirun and rank 0 die with it, and slurmctld requeues the job for NODE_FAIL). Per repetition it prints the
seconds from the kill to the job's requeue, to the job running again, and to the first training
step on the node left, and the steps lost (the last step logged before the kill minus the step of
the checkpoint resumed). Then the cost of the world-size change itself: wall time of
`mpirun -np 1 phalanx train --resume CK --set train.max_steps=<step + 1>` (start, load, one step,
evaluation, checkpoint, summary) from the job's 2-rank checkpoint (elastic: 2 ranks -> 1, global
batch 64 as 2 micro-batches of 32) and from a 1-rank checkpoint of the same step and global batch
(batch 64 in 2 micro-batches: the same work per step), alternated.

  /usr/bin/python3 bench/node_loss.py build/src/phalanx [--repetitions 3] [--stop-grace 10]
      [--slurmd-timeout 5] [--message-timeout 3] [--every-steps 20] [--lost-after 104]
      [--lose second|batch] [--resume-runs 5 (0: no world-size part)]
"""

import os
import re
import statistics
import time

import failure_bench


def main():
    parser = failure_bench.argument_parser()
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--stop-grace", type=int, default=10, help="PHALANX_STOP_GRACE (phalanx-mpirun --stop-grace)")
    parser.add_argument("--slurmd-timeout", type=int, default=5, help="SlurmdTimeout of the local cluster")
    parser.add_argument("--message-timeout", type=int, default=3, help="MessageTimeout of the local cluster")
    parser.add_argument("--every-steps", type=int, default=20, help="checkpoint.every_steps")
    parser.add_argument("--lost-after", type=int, default=104, help="kill the node once this step is logged")
    parser.add_argument("--resume-runs", type=int, default=5,
                        help="runs of each resume in the world-size part (0: skip it)")
    parser.add_argument("--lose", choices=("second", "batch"), default="second",
                        help="the node that dies: the second one, or the one that runs the batch script")
    arguments = parser.parse_args()
    e2e = failure_bench.use_binary(arguments.phalanx)
    import cluster_jobs as jobs
    import local_slurm
    local_slurm.require_slurm()

    work, data = failure_bench.scratch_with_fashion("bench-node-loss", 4096, 256)
    config = e2e.write_config(os.path.join(work, "node-loss.yaml"), e2e.base_config(
        data, name="node-loss", seed=13, epochs=2, batch_size=32, log_every_steps=2, every_steps=arguments.every_steps,
        keep=10, optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9}))
    cluster = local_slurm.LocalSlurm(
        os.path.join(work, "cluster"), cpu_node=True,
        extra_config=f"SlurmdTimeout={arguments.slurmd_timeout}\nMessageTimeout={arguments.message_timeout}")
    environment = ",".join([
        "ALL", f"PHALANX={e2e.PHALANX}", f"PHALANX_MPIRUN={os.path.join(e2e.SOURCE_DIR, 'launch', 'phalanx-mpirun')}",
        f"PHALANX_RUNS={os.path.join(work, 'runs')}", "PHALANX_CPU_RANKS_PER_NODE=1",
        f"PHALANX_STOP_GRACE={arguments.stop_grace}", "OMP_NUM_THREADS=1"])
    # The batch script runs on the first node of the allocation, this machine's own name.
    lost = cluster.host if arguments.lose == "batch" else cluster.cpu_host
    columns = {"requeued": [], "running": [], "training": [], "lost": []}
    checkpoint = None
    try:
        for repetition in range(arguments.repetitions):
            name = f"lost-{repetition}"
            submitted = cluster.run(["sbatch", "--parsable", f"--job-name={name}", "--partition=both", "--nodes=1-2",
                                     "--cpus-per-task=1", "--gpus-per-node=0", "--time=10",
                                     f"--output={os.path.join(work, name)}-%j.out", f"--export={environment}",
                                     os.path.join(e2e.SOURCE_DIR, "launch", "slurm", "train.sbatch"), config],
                                    env=e2e.child_environment())
            job_id = submitted.stdout.strip().split(";")[0]
            run_dir = os.path.join(work, "runs", f"{name}-{job_id}")
            log_path = os.path.join(work, f"{name}-{job_id}.out")
            cluster.wait_for_state(job_id, ("RUNNING",), 120)
            while jobs.last_logged_step(run_dir) < arguments.lost_after:
                time.sleep(0.02)
            lost_step = jobs.last_logged_step(run_dir)
            killed = time.monotonic()
            cluster.kill_node(lost)
            while cluster.job_field(job_id, "Restarts") in ("", "0"):
                time.sleep(0.05)
            requeued = time.monotonic() - killed
            while cluster.job_field(job_id, "JobState") != "RUNNING":
                time.sleep(0.05)
            running = time.monotonic() - killed
            while "resumed from" not in open(log_path).read():
                time.sleep(0.02)
            match = re.search(r"resumed from (\S+/checkpoints/step-(\d+)\.h5)", open(log_path).read())
            resumed_step = int(match.group(2))
            while jobs.last_logged_step(run_dir) <= resumed_step:
                time.sleep(0.02)
            training = time.monotonic() - killed
            state = cluster.wait_for_state(job_id, ("COMPLETED", "FAILED", "CANCELLED"), 300)
            assert state == "COMPLETED", open(log_path).read()
            checkpoint = checkpoint or (match.group(1), resumed_step)
            for key, value in zip(columns, (requeued, running, training, lost_step - resumed_step)):
                columns[key].append(value)
            print(f"run {repetition + 1}: node {lost} lost after step {lost_step}; requeued {requeued:.1f} s, running "
                  f"again {running:.1f} s, training again {training:.1f} s after the kill; resumed from step "
                  f"{resumed_step} ({lost_step - resumed_step} steps lost)", flush=True)
            cluster.restart_node(lost)
    finally:
        cluster.close()
    for key, label in (("requeued", "kill -> job requeued"), ("running", "kill -> job running again"),
                       ("training", "kill -> training again"), ("lost", "steps lost")):
        print(failure_bench.median_line(label, columns[key], 28, 1))

    if arguments.resume_runs == 0:
        return
    # The world-size change at resume: the job's 2-rank checkpoint against a 1-rank one of the same step.
    elastic_checkpoint, step = checkpoint
    single_dir = os.path.join(work, "single-rank")
    if not os.path.exists(os.path.join(single_dir, "summary.json")):
        made = e2e.mpirun(1, "train", config, "--run-dir", single_dir, "--set", "train.batch_size=64",
                          "--set", "train.accumulation_steps=2", "--set", f"train.max_steps={step}", timeout=600)
        assert made.returncode == 0, made.describe()
    same_checkpoint = os.path.join(single_dir, "checkpoints", f"step-{step}.h5")
    times = {"2 ranks -> 1 rank": [], "1 rank -> 1 rank": []}
    for run in range(arguments.resume_runs):
        for label, resume, extra in (("2 ranks -> 1 rank", elastic_checkpoint, []),
                                     ("1 rank -> 1 rank", same_checkpoint,
                                      ["--set", "train.batch_size=64", "--set", "train.accumulation_steps=2"])):
            run_dir = os.path.join(work, f"resume-{label[0]}-{run}")
            result = e2e.mpirun(1, "train", config, "--run-dir", run_dir, "--resume", resume,
                                "--set", f"train.max_steps={step + 1}", *extra, timeout=300)
            assert result.returncode == 0, result.describe()
            times[label].append(result.seconds)
    for label, values in times.items():
        print(f"resume {label:18s} " + ", ".join(f"{value:.2f}" for value in values) +
              f"  median {statistics.median(values):.2f} s")


if __name__ == "__main__":
    main()
