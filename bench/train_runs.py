"""One training run of phalanx or of its PyTorch peer (bench/torch_cpu_train.py) as a subprocess,
and what it measured, for the side-by-side drivers (fmnist_vs_torch.py, cpu_vs_torch.py).

Both sides report images/s the same way: measured steps x global batch / the slowest rank's sum
of measured step times, warm-up steps and evaluation left out. A run returns a dict with its
exact command and either its measurements or `error` (the head and tail of its output); a
phalanx run that exits 2 (bad input: e.g. a precision this build refuses on a CPU rank) also
carries `refused` with phalanx's own message.
"""

import json
import os
import platform
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STAGES = ["data_wait", "forward", "backward", "allreduce_wait", "optimizer", "sync_wait", "other"]
TORCH_SCRIPT = os.path.join(HERE, "torch_cpu_train.py")


def tail(text, head=6, lines=10):
    """The first and the last lines of a failed run's output (where the cause and the crash are)."""
    all_lines = text.strip().splitlines()
    if len(all_lines) <= head + lines:
        return "\n".join(all_lines)
    return "\n".join(all_lines[:head] + ["..."] + all_lines[-lines:])


def refusal_message(text):
    """phalanx's error line(s) of a run it refused (exit 2), without mpirun's boilerplate."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() and "mpirun" not in line.lower()
              and not line.startswith("-")]
    chosen = errors or lines
    # Every rank prints the same refusal; one copy of each distinct line is enough.
    return "\n".join(dict.fromkeys(chosen[:4])) if chosen else "exit status 2"


def run_phalanx(phalanx, config, sets, ranks, threads, run_dir, mpirun="mpirun", timeout=1800):
    """`phalanx train config --set k=v ... --run-dir run_dir`, under `mpirun -np ranks` when ranks > 1
    (each rank pinned to `threads` cores, as the pairings compare)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = [phalanx, "train", config]
    for key, value in sets.items():
        command += ["--set", f"{key}={value}"]
    command += ["--run-dir", run_dir]
    if ranks > 1:
        command = [mpirun, "-np", str(ranks), "--map-by", f"slot:PE={threads}",
                   "-x", f"OMP_NUM_THREADS={threads}"] + command
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"command": " ".join(command), "error": f"timed out after {timeout} s"}
    result = {"command": " ".join(command), "returncode": proc.returncode}
    summary_path = os.path.join(run_dir, "summary.json")
    if proc.returncode != 0 or not os.path.exists(summary_path):
        output = proc.stdout + "\n" + proc.stderr
        result["error"] = tail(output)
        if proc.returncode == 2:
            result["refused"] = refusal_message(proc.stderr or proc.stdout)
        return result
    with open(summary_path) as f:
        summary = json.load(f)
    result["images_per_sec"] = summary["images_per_sec"]
    result["time_breakdown"] = summary.get("time_breakdown", {})
    result["rank_breakdowns"] = [r.get("time_breakdown", {}) for r in summary.get("ranks", [])]
    result["test_accuracy"] = summary.get("test_accuracy")
    result["train_loss"] = summary.get("train_loss")
    result["steps"] = summary.get("steps")
    result["global_batch"] = summary.get("global_batch")
    result["world_size"] = summary.get("world_size")
    breakdown = result["time_breakdown"]
    result["step_ms_mean"] = breakdown.get("step_ms") or sum(
        breakdown.get(s, {}).get("ms_per_step", 0.0) for s in STAGES)
    return result


def run_torch(python, options, ranks, threads, bind=True, timeout=1800):
    """bench/torch_cpu_train.py under `python` with `options` (a list of its arguments besides
    --threads and --ddp): one process, or DDP over gloo with `ranks` ranks (pinned when `bind`)."""
    command = [python, TORCH_SCRIPT] + [str(o) for o in options] + ["--threads", str(threads)]
    if ranks > 1:
        command += ["--ddp", str(ranks)]
        if bind:
            command += ["--bind"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"command": " ".join(command), "error": f"timed out after {timeout} s"}
    result = {"command": " ".join(command), "returncode": proc.returncode}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        result["error"] = tail(proc.stdout + "\n" + proc.stderr)
        return result
    result.update(json.loads(lines[-1]))
    return result


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


TORCH_INFO = r"""
import json, re, torch
config = torch.__config__.show()
def find(pattern):
    match = re.search(pattern, config)
    return match.group(1).strip() if match else None
try:
    capability = torch.backends.cpu.get_cpu_capability()
except AttributeError:
    capability = None
print(json.dumps({"version": torch.__version__, "blas": find(r"BLAS_INFO=([^,]+)"),
                  "onednn": find(r"(?:oneDNN|MKL-DNN) (v[0-9.]+)"), "cpu_capability": capability}))
"""


def torch_info(python):
    """`python`'s PyTorch: version, BLAS, oneDNN version and the CPU kernels it picks; None without torch."""
    try:
        proc = subprocess.run([python, "-c", TORCH_INFO], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if proc.returncode == 0 and lines else None


def torch_version(python):
    """`torch.__version__` under `python`, or None when it has no torch."""
    info = torch_info(python)
    return info["version"] if info else None


def machine_info(mpirun="mpirun"):
    info = {"nproc": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    info["cpu_bf16"] = sorted(flags & {"avx512_bf16", "amx_bf16", "amx_tile", "avx512_fp16"})
                    break
    except OSError:
        pass
    try:
        info["mpirun"] = subprocess.run([mpirun, "--version"], capture_output=True, text=True,
                                        timeout=60).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        info["mpirun"] = None
    try:
        info["git_head"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                          capture_output=True, text=True, timeout=30).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        info["git_head"] = None
    return info
