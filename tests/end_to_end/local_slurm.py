"""A real single-node Slurm cluster for tests: munged, slurmctld and slurmd from Debian's slurm-wlm,
started in a scratch folder with their own key, socket, ports and slurm.conf (nothing under /etc
is read or changed), and stopped again by close(). Commands run with SLURM_CONF pointing at it.
Optionally a second node name for this machine, in a partition `cpu`, for heterogeneous jobs, and
with the first node in a partition `both`, for jobs on two nodes; kill_node() makes either node
die (its slurmd and every process of the job steps it started) and restart_node() brings it back."""

import os
import shutil
import signal
import socket
import subprocess
import time
import unittest

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel")


def require_slurm():
    missing = [name for name in DAEMONS if not shutil.which(name) and not os.path.exists(f"/usr/sbin/{name}")]
    if missing:
        raise unittest.SkipTest(f"Slurm/munge not installed ({', '.join(missing)}; Debian: slurm-wlm munge)")
    if os.geteuid() != 0:
        raise unittest.SkipTest("the local Slurm cluster runs its daemons as root (slurmd starts jobs as any user)")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _binary(name):
    return shutil.which(name) or f"/usr/sbin/{name}"


class LocalSlurm:
    def __init__(self, folder, gpus=0, extra_config="", cpu_node=False):
        """cpu_node: a second node, `<host>cpu` in partition `cpu`, served by a second slurmd on
        this machine (`slurmd -N`): a heterogeneous job needs its components on different nodes,
        because the backfill scheduler, the only one that starts such jobs, plans whole nodes."""
        self.processes = []
        try:
            self._start_cluster(folder, gpus, extra_config, cpu_node)
        except BaseException:
            self.close()  # no daemon outlives a failed start
            raise

    def _start_cluster(self, folder, gpus, extra_config, cpu_node):
        self.folder = os.path.abspath(folder)
        shutil.rmtree(self.folder, ignore_errors=True)
        for sub in ("state", "spool", "log", "munge"):
            os.makedirs(os.path.join(self.folder, sub))
        os.chmod(os.path.join(self.folder, "munge"), 0o700)
        self.host = socket.gethostname().split(".")[0]
        self.cpu_host = self.host + "cpu" if cpu_node else ""
        for host in filter(None, (self.host, self.cpu_host)):
            os.makedirs(os.path.join(self.folder, "spool", host))
        self.cpus = os.cpu_count() or 1
        self.munge_socket = os.path.join(self.folder, "munge", "munge.socket")
        key = os.path.join(self.folder, "munge", "munge.key")
        with open(key, "wb") as stream:
            stream.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self._start([_binary("munged"), "--foreground", "--force", f"--socket={self.munge_socket}",
                     f"--key-file={key}", f"--pid-file={self.folder}/munge/munged.pid",
                     f"--log-file={self.folder}/log/munged.log", f"--seed-file={self.folder}/munge/seed"])
        self._wait_for(lambda: os.path.exists(self.munge_socket), "munged socket")
        self.config = os.path.join(self.folder, "slurm.conf")
        gres = ""
        if gpus:
            # Stand-in GPUs: character devices that exist everywhere, enough for the scheduler to
            # accept --gpus requests (`sbatch --test-only`); nothing may run on them.
            gres = f" Gres=gpu:{gpus}"
            devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"][:gpus]
            with open(os.path.join(self.folder, "gres.conf"), "w") as stream:
                for device in devices:
                    stream.write(f"NodeName={self.host} Name=gpu File={device}\n")
        with open(self.config, "w") as stream:
            stream.write(f"""ClusterName=phalanxtest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={_free_port()}
AuthType=auth/munge
CredType=cred/munge
# A requeued job may start again only when its old credential has expired (cred_expire + 1 s;
# Slurm's default is 120 s): 10 s keeps the requeue test short.
AuthInfo=socket={self.munge_socket},cred_expire=10
SlurmUser=root
SlurmdUser=root
StateSaveLocation={self.folder}/state
SlurmdSpoolDir={self.folder}/spool/%n
SlurmctldPidFile={self.folder}/slurmctld.pid
SlurmdPidFile={self.folder}/slurmd-%n.pid
SlurmctldLogFile={self.folder}/log/slurmctld.log
SlurmdLogFile={self.folder}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
JobRequeue=1
KillWait=30
# Heterogeneous jobs are started only by the backfill scheduler (every bf_interval s, 30 by
# default, planning in steps of bf_resolution s, 60 by default).
SchedulerParameters=sched_interval=1,bf_interval=1,bf_resolution=1,bf_hetjob_immediate
{"GresTypes=gpu" if gpus else ""}
NodeName={self.host} NodeAddr=127.0.0.1 Port={_free_port()} CPUs={self.cpus} State=UNKNOWN{gres}
PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
{f"NodeName={self.cpu_host} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={_free_port()} CPUs={self.cpus} State=UNKNOWN" if cpu_node else ""}
{f"PartitionName=cpu Nodes={self.cpu_host} MaxTime=INFINITE State=UP OverSubscribe=YES" if cpu_node else ""}
{f"PartitionName=both Nodes={self.host},{self.cpu_host} MaxTime=INFINITE State=UP OverSubscribe=YES" if cpu_node else ""}
{extra_config}
""")
        self.environment = dict(os.environ, SLURM_CONF=self.config)
        self._start([_binary("slurmctld"), "-D", "-i", "-f", self.config])
        self._start([_binary("slurmd"), "-D", "-f", self.config, "-N", self.host])
        if cpu_node:
            self._start([_binary("slurmd"), "-D", "-f", self.config, "-N", self.cpu_host], "slurmd-cpu")
        self._wait_for(self._node_ready, "the node to be idle", timeout=60)

    def kill_node(self, node):
        """What a node failure looks like from here: the node's slurmd and every process of the job
        steps it started (slurmstepd and its tasks, found by SLURMD_NODENAME and this cluster's
        SLURM_CONF in their environment: another test cluster on this machine has nodes of the same
        names) stop at once and are then killed, so none of them reports anything on its way out.
        On the node that runs a job's batch script, the tasks include the script and what it
        started there (phalanx-mpirun, mpirun, the srun that started the other nodes' daemons, the
        local ranks). Returns {pid: command name} of the killed task processes."""
        (slurmd,) = [process for process in self.processes if process.args[-1] == node and process.poll() is None]
        marks = {f"SLURMD_NODENAME={node}".encode(), f"SLURM_CONF={self.config}".encode()}
        tasks = {}
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/environ", "rb") as stream:
                    if not marks <= set(stream.read().split(b"\0")):
                        continue
                with open(f"/proc/{entry}/comm") as stream:
                    tasks[int(entry)] = stream.read().strip()
            except (OSError, ValueError):
                continue
        stepds = set()
        for pid in tasks:
            try:
                with open(f"/proc/{pid}/stat") as stream:
                    parent = int(stream.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{parent}/comm") as stream:
                    if stream.read().strip() == "slurmstepd":
                        stepds.add(parent)
            except OSError:
                continue
        victims = [slurmd.pid, *stepds, *tasks]
        for number in (signal.SIGSTOP, signal.SIGKILL):
            for pid in victims:
                try:
                    os.kill(pid, number)
                except ProcessLookupError:
                    pass
        slurmd.wait()
        self.processes.remove(slurmd)  # an exited daemon would fail every later _wait_for
        return tasks

    def restart_node(self, node):
        """A new slurmd for a node that kill_node() took down; it is back in service (ReturnToService=2)
        once it has registered."""
        self._start([_binary("slurmd"), "-D", "-f", self.config, "-N", node], f"slurmd-{node}-again")
        self._wait_for(self._node_ready, f"node {node} back in service", timeout=60)

    def _start(self, command, name=None):
        log = open(os.path.join(self.folder, "log", (name or os.path.basename(command[0])) + ".out"), "w")
        self.processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                               env=dict(os.environ, SLURM_CONF=getattr(self, "config", ""))))
        log.close()

    def _wait_for(self, ready, what, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            for process in self.processes:
                if process.poll() is not None:
                    raise AssertionError(f"{process.args[0]} exited with {process.returncode} while waiting for "
                                         f"{what}\n{self.logs()}")
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}\n{self.logs()}")

    def _node_ready(self):
        result = self.run(["sinfo", "-h", "-o", "%t"], check=False)
        states = result.stdout.split()
        return result.returncode == 0 and states and all(state in ("idle", "mix", "alloc") for state in states)

    def logs(self):
        text = []
        for name in sorted(os.listdir(os.path.join(self.folder, "log"))):
            with open(os.path.join(self.folder, "log", name), errors="replace") as stream:
                text.append(f"--- {name} ---\n" + "\n".join(stream.read().splitlines()[-30:]))
        return "\n".join(text)

    def controller_log(self):
        """slurmctld's whole log (what it decided about jobs and nodes, e.g. a requeue for a node
        failure)."""
        with open(os.path.join(self.folder, "log", "slurmctld.log"), errors="replace") as stream:
            return stream.read()

    def run(self, command, check=True, timeout=60, env=None):
        environment = dict(self.environment, **(env or {}))
        result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"$ {' '.join(command)}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}")
        return result

    def job_field(self, job_id, field):
        """A field of `scontrol show job` (e.g. JobState, Restarts, ExitCode), '' once it is forgotten."""
        result = self.run(["scontrol", "show", "job", str(job_id)], check=False)
        for word in result.stdout.split():
            if word.startswith(field + "="):
                return word.split("=", 1)[1]
        return ""

    def wait_for_state(self, job_id, states, timeout):
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            state = self.job_field(job_id, "JobState")
            if state in states:
                return state
            time.sleep(0.25)
        raise AssertionError(f"job {job_id} still {state!r} after {timeout} s, expected {states}\n{self.logs()}")

    def wait_for_requeued_start(self, job_id, timeout):
        """Waits until a requeued heterogeneous job runs again. Only the backfill scheduler starts
        such jobs, and it skips its cycle when no job, node or partition changed since the last
        one: a job that merely became eligible (its BeginTime passed) changes nothing, so on an
        idle test cluster it would wait for the next node ping (~2 min). Touching the job's
        comment every 2 s is the change a busy cluster makes by itself."""
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            state = self.job_field(job_id, "JobState")
            if state != "PENDING":
                return state
            self.run(["scontrol", "update", f"JobId={job_id}", "Comment=requeued"], check=False)
            time.sleep(2)
        raise AssertionError(f"requeued job {job_id} still PENDING after {timeout} s\n{self.logs()}")

    def close(self):
        if len(self.processes) >= 3 and self.processes[-1].poll() is None:
            self.run(["scancel", "--full", "--state=RUNNING", "--signal=KILL", "-u", "root"], check=False)
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.processes = []
