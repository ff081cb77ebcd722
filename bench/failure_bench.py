"""What the failure benchmarks (cluster_failures.py, node_loss.py) share: the end-to-end tests'
helpers (tests/end_to_end: e2e_common, cluster_jobs, local_slurm) pointed at the phalanx binary
named on the command line, a scratch folder (under PHALANX_E2E_WORK, default ./bench-work) with a
Fashion-MNIST subset, and the lines that print a column's median and range.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "end_to_end"))
os.environ.setdefault("PHALANX_E2E_WORK", os.path.join(os.getcwd(), "bench-work"))


def argument_parser():
    """A parser whose first argument is the phalanx binary; the script adds its options."""
    parser = argparse.ArgumentParser()
    parser.add_argument("phalanx")
    return parser


def use_binary(phalanx):
    """Points the end-to-end helpers at `phalanx` (cluster_jobs and local_slurm run
    e2e_common.PHALANX) and returns e2e_common."""
    os.environ["PHALANX_BIN"] = os.path.abspath(phalanx)
    import e2e_common
    e2e_common.PHALANX = os.environ["PHALANX_BIN"]
    return e2e_common


def scratch_with_fashion(name, train_count, test_count):
    """A fresh scratch folder NAME with a Fashion-MNIST subset in it: (folder, data file)."""
    import e2e_common
    work = e2e_common.work_dir(name)
    return work, e2e_common.make_fashion_subset(work, train_count, test_count)


def median_line(label, values, width, digits, unit=""):
    """`LABEL median M UNIT  (min A, max B, n=N)`, the label padded to `width`, numbers with `digits`
    decimals."""
    unit = f" {unit}" if unit else ""
    return (f"{label:<{width}} median {statistics.median(values):{digits + 5}.{digits}f}{unit}  "
            f"(min {min(values):.{digits}f}, max {max(values):.{digits}f}, n={len(values)})")
