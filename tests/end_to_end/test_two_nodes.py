"""End-to-end: two "nodes" on one machine. Two network namespaces joined by a veth pair act as two
hosts with their own addresses and host names (a UTS namespace each: Open MPI 5 names a node by the
host name its daemon reports, and two daemons both called after this machine would be one node);
mpirun runs in the first and starts the second host's Open MPI daemon through an rsh agent that
runs commands with `ip netns exec`, so the two ranks talk over TCP across the veth link (shared
memory is switched off). The 2-node run must give bitwise the
same weights as the same two ranks on one node, and its mid-run checkpoint, resumed on the first
host alone (what a job that lost the second host does), must end within elastic resume's tolerance
of the 2-node run with the global batch kept."""

import os
import unittest

import cluster_jobs as jobs
import e2e_common as e2e
from network_hosts import NetworkHosts

RANKS, BATCH, STEPS = 2, 32, 40
EVERY_STEPS = 20  # the checkpoint the second part resumes on one host
TRAIN, TEST = 2048, 256


def setUpModule():
    global WORK, CONFIG_PATH, HOSTS
    e2e.require_fashion()
    WORK = e2e.work_dir("two_nodes")
    HOSTS = NetworkHosts("two", WORK).create()
    data = e2e.make_fashion_subset(WORK, TRAIN, TEST)
    config = e2e.base_config(data, name="two-nodes", seed=17, epochs=2, batch_size=BATCH, max_steps=STEPS,
                             every_steps=EVERY_STEPS)
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "two-nodes.yaml"), config)


def tearDownModule():
    if "HOSTS" in globals():
        HOSTS.delete()


class TwoNodeTest(unittest.TestCase):
    def test_two_hosts_over_tcp_equal_one_host_and_resume_on_one_host(self):
        two_nodes = os.path.join(WORK, "two-nodes")
        command = HOSTS.launch_command(HOSTS.addresses) + [e2e.PHALANX, "train", CONFIG_PATH, "--run-dir", two_nodes]
        # the same launch, first with a command that says where each rank runs
        where = e2e.run_command(command[:command.index(e2e.PHALANX)] +
                                ["sh", "-c", "echo rank $OMPI_COMM_WORLD_RANK local $OMPI_COMM_WORLD_LOCAL_RANK "
                                 "in $(ip netns identify $$)"], timeout=120)
        self.assertEqual(where.returncode, 0, where.describe())
        self.assertEqual(sorted(where.stdout.split("\n")[:-1]),
                         [f"rank {rank} local 0 in {HOSTS.namespaces[rank]}" for rank in range(RANKS)], where.describe())
        result = e2e.run_command(command, timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        # each rank is local rank 0 of its own host: two nodes as far as MPI is concerned
        summary = e2e.read_summary(two_nodes)
        self.assertEqual(summary["world_size"], RANKS)
        self.assertEqual(summary["steps"], STEPS)
        self.assertIn("rank 1, host", result.stdout)

        one_node = os.path.join(WORK, "one-node")
        single = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", one_node, timeout=300)
        self.assertEqual(single.returncode, 0, single.describe())
        differences = jobs.checkpoint_differences(os.path.join(one_node, "checkpoints", "latest.h5"),
                                                  os.path.join(two_nodes, "checkpoints", "latest.h5"))
        self.assertEqual(differences, [], "two nodes over TCP train other weights than one node")

        # The second host is gone: the first one resumes the 2-host checkpoint alone, keeping the
        # global batch of 64 (its rank trains it as two micro-batches of 32).
        one_host = os.path.join(WORK, "resumed-on-one-host")
        checkpoint = os.path.join(two_nodes, "checkpoints", f"step-{EVERY_STEPS}.h5")
        resumed = e2e.run_command(HOSTS.launch_command(HOSTS.addresses[:1]) + [
            e2e.PHALANX, "train", CONFIG_PATH, "--run-dir", one_host, "--resume", checkpoint], timeout=300)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        self.assertIn(f"elastic resume: the checkpoint's {RANKS} ranks' global batch of {RANKS * BATCH} continues "
                      "on 1 ranks", resumed.stdout)
        summary = e2e.read_summary(one_host)
        self.assertEqual((summary["world_size"], summary["steps"], summary["global_batch"]), (1, STEPS, RANKS * BATCH))
        worst, beyond = jobs.elastic_differences(os.path.join(two_nodes, "checkpoints", "latest.h5"),
                                                 os.path.join(one_host, "checkpoints", "latest.h5"))
        self.assertEqual(beyond, [], "resumed on one host, the run ends too far from the 2-host run")
        _, moved = jobs.elastic_differences(os.path.join(two_nodes, "checkpoints", "latest.h5"), checkpoint)
        self.assertTrue(moved, "the tolerance cannot tell the resume point from the end")
        print(f"\n2 hosts to 1 at step {EVERY_STEPS}: largest relative difference {worst:.2g}; the resume on one "
              f"host took {resumed.seconds:.1f} s", end=" ")


if __name__ == "__main__":
    e2e.main()
