"""Hosts on one machine: network namespaces joined by veth pairs to a bridge-free star (host 0 in
the middle for two hosts: one veth pair), each with its own address and host name (a UTS
namespace each: Open MPI 5 names a node by the host name its daemon reports, and two daemons both
called after this machine would be one node). mpirun runs in the first namespace and starts the
other hosts' Open MPI daemons through an rsh agent that runs commands with `ip netns exec`, so the
ranks of different hosts talk over TCP across the veth link (shared memory is switched off for
them). The link can be shaped with a token bucket (`tc qdisc ... tbf`) on both ends, which is
what a slower fabric between nodes looks like to the all-reduce.

Used by the two-node end-to-end test and by the scaling checks (bench/scaling_check.py)."""

import os
import shutil
import subprocess
import unittest

import e2e_common as e2e


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


class NetworkHosts:
    """Two hosts, `namespaces[i]` at `addresses[i]`. create() raises unittest.SkipTest where
    namespaces are not permitted (not root, no iproute2, a container without CAP_NET_ADMIN)."""

    def __init__(self, tag, work_dir, subnet="10.231.7"):
        suffix = f"{tag}-{os.getpid()}"
        self.namespaces = (f"phx-a-{suffix}", f"phx-b-{suffix}")
        self.addresses = (f"{subnet}.1", f"{subnet}.2")
        # Interface names are at most 15 characters.
        self.veths = (f"phxa{os.getpid() % 100000}{tag[:3]}", f"phxb{os.getpid() % 100000}{tag[:3]}")
        self.subnet = f"{subnet}.0/24"
        self.work_dir = work_dir
        self.agent = os.path.join(work_dir, f"netns-agent-{tag}")
        self.created = False

    def create(self):
        if os.geteuid() != 0 or not shutil.which("ip"):
            raise unittest.SkipTest("network namespaces need root and iproute2 (ip)")
        probe = ip("netns", "add", self.namespaces[0], check=False)
        if probe.returncode != 0:
            raise unittest.SkipTest(f"network namespaces are not permitted here: {probe.stderr.strip()}")
        self.created = True
        try:
            ip("netns", "add", self.namespaces[1])
            ip("link", "add", self.veths[0], "type", "veth", "peer", "name", self.veths[1])
            for namespace, device, address in zip(self.namespaces, self.veths, self.addresses):
                ip("link", "set", device, "netns", namespace)
                ip("-n", namespace, "addr", "add", f"{address}/24", "dev", device)
                ip("-n", namespace, "link", "set", device, "up")
                ip("-n", namespace, "link", "set", "lo", "up")
        except subprocess.CalledProcessError as error:
            self.delete()
            raise AssertionError(f"setting up the namespaces failed: {error.stderr}") from None
        with open(self.agent, "w") as stream:
            stream.write("#!/bin/sh\n# rsh agent for Open MPI: AGENT HOST COMMAND... runs COMMAND in HOST's namespace\n"
                         "host=$1; shift\ncase \"$host\" in\n")
            for namespace, address in zip(self.namespaces, self.addresses):
                stream.write(f"  {address}) namespace={namespace} ;;\n")
            stream.write("  *) echo \"netns agent: unknown host $host\" >&2; exit 1 ;;\nesac\n"
                         "exec ip netns exec \"$namespace\" unshare --uts /bin/sh -c \"hostname $namespace; $*\"\n")
        os.chmod(self.agent, 0o755)
        return self

    def shape(self, rate_mbit):
        """A token bucket of `rate_mbit` Mbit/s on both ends of the link (None: unshaped). The
        bucket holds 1 ms at the rate (at least 64 KiB, so full-size TCP segments pass) and queues
        up to 50 ms. netem's added delay is not used: many kernels (containers) lack it."""
        for namespace, device in zip(self.namespaces, self.veths):
            ip("netns", "exec", namespace, "tc", "qdisc", "del", "dev", device, "root", check=False)
            if rate_mbit is None:
                continue
            burst = max(64 * 1024, int(rate_mbit * 1e6 / 8 / 1000))
            result = ip("netns", "exec", namespace, "tc", "qdisc", "add", "dev", device, "root", "tbf", "rate",
                        f"{rate_mbit}mbit", "burst", str(burst), "latency", "50ms", check=False)
            if result.returncode != 0:
                raise unittest.SkipTest(f"tc cannot shape the link here: {result.stderr.strip()}")

    def delete(self):
        for namespace in self.namespaces:  # deleting a namespace also deletes its end of the veth pair
            ip("netns", "delete", namespace, check=False)
        self.created = False

    def launch_command(self, hosts, ranks_per_host=1, threads=1):
        """mpirun in the first namespace, with its host name, `ranks_per_host` ranks on each of
        `hosts` (addresses), all traffic over TCP. The first host goes by its name: Open MPI 5 does
        not know its own node by the veth address. Open MPI's own connections need no interface
        named: a namespace holds only its veth and the loopback, which they leave out (Open MPI
        5.0.7 refuses a subnet in oob_tcp_if_include, "Did not find interface matching this
        subnet", though the veth is in it)."""
        names = [self.namespaces[0] if host == self.addresses[0] else host for host in hosts]
        first = self.namespaces[0]
        return ["ip", "netns", "exec", first, "unshare", "--uts", "sh", "-c", f'hostname {first}; exec "$@"',
                "mpirun-in-namespace", e2e.MPIEXEC, "--allow-run-as-root",
                "--mca", "plm_rsh_agent", self.agent, "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include",
                self.subnet, "--host", ",".join(f"{name}:{ranks_per_host}" for name in names),
                "-np", str(len(hosts) * ranks_per_host), "--bind-to", "none",
                "-x", f"OMP_NUM_THREADS={threads}", "-x", "PATH"]
