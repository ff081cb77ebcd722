"""Failure handling of a real 2-rank training job (mpirun, Fashion-MNIST subset, fmnist_cnn, batch
32 per rank): time from a preemption signal to the checkpoint written and the steps redone after
resuming; time from SIGKILL of a rank to the end of the job; time from SIGSTOP of a rank to the
end of the job with distributed.timeout_s = T. Prints the median and range of R repetitions.

  /usr/bin/python3 bench/cluster_failures.py build/src/phalanx [--repetitions 5] [--timeout 5]
"""

import os
import signal
import time

import failure_bench


def main():
    parser = failure_bench.argument_parser()
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=5.0, help="distributed.timeout_s for the stall")
    arguments = parser.parse_args()
    e2e = failure_bench.use_binary(arguments.phalanx)
    import cluster_jobs as jobs

    work, data = failure_bench.scratch_with_fashion("bench-failures", 8192, 256)

    def config(name, timeout_s=300.0):
        settings = e2e.base_config(data, name=name, seed=3, epochs=2, batch_size=32, log_every_steps=2)
        settings["distributed"] = {"timeout_s": timeout_s}
        return e2e.write_config(os.path.join(work, f"{name}.yaml"), settings)

    def start(name, timeout_s=300.0):
        run_dir = os.path.join(work, name)
        job = jobs.Job(work, name, 2, ["train", config(name, timeout_s), "--run-dir", run_dir, "--resume", "auto"])
        pids = job.rank_pids()
        jobs.wait_for_step(job, run_dir, 20)
        return job, run_dir, pids

    to_checkpoint, redone, to_exit, killed, stalled = [], [], [], [], []
    for repetition in range(arguments.repetitions):
        job, run_dir, pids = start(f"preempt-{repetition}")
        sent = time.monotonic()
        os.kill(job.process.pid, signal.SIGUSR1)
        status = job.wait(120)
        to_exit.append(time.monotonic() - sent)
        stop = jobs.events(run_dir, "preempted")[0]
        assert status == 75, job.output()
        to_checkpoint.append(stop["signal_to_checkpoint_seconds"])
        resumed = e2e.mpirun(2, "train", config(f"preempt-{repetition}"), "--run-dir", run_dir, "--resume", "auto")
        assert resumed.returncode == 0, resumed.describe()
        start_step = int(resumed.stdout.split("resumed from ")[1].split(", step ")[0].split("step-")[1].split(".h5")[0])
        redone.append(stop["step"] - start_step)

        job, _, pids = start(f"kill-{repetition}")
        sent = time.monotonic()
        os.kill(pids[1], signal.SIGKILL)
        job.wait(60)
        killed.append(time.monotonic() - sent)

        job, _, pids = start(f"stall-{repetition}", arguments.timeout)
        sent = time.monotonic()
        os.kill(pids[1], signal.SIGSTOP)
        try:
            job.wait(arguments.timeout + 60)
        finally:
            try:
                os.kill(pids[1], signal.SIGCONT)
            except ProcessLookupError:
                pass
            job.kill()
        stalled.append(time.monotonic() - sent)

    def line(name, values, unit="s"):
        print(failure_bench.median_line(name, values, 52, 3, unit))
    line("signal -> checkpoint written (rank 0)", to_checkpoint)
    line("signal to mpirun -> mpirun exited (75)", to_exit)
    line("steps redone after --resume auto", redone, "steps")
    line("SIGKILL of rank 1 -> job ended", killed)
    line(f"SIGSTOP of rank 1 -> job ended (timeout_s {arguments.timeout:g})", stalled)


if __name__ == "__main__":
    main()
