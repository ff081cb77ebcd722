"""Raw MPI_Allreduce bandwidth, the reference for `phalanx bench allreduce`: the same sizes, the
same timing rule (barrier, one in-place float32 sum, the slowest rank's time, median of the
iterations) through mpi4py, i.e. straight into the MPI library with none of phalanx's code.

    mpirun -np 2 python3 bench/raw_allreduce.py [--min-bytes 4096] [--max-bytes 67108864]
           [--iterations 20] [--warmup 5]

Needs mpi4py (Debian: python3-mpi4py) built against the same MPI as phalanx.
"""

import argparse
import time

import numpy as np
from mpi4py import MPI


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-bytes", type=int, default=4096)
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    arguments = parser.parse_args()
    world = MPI.COMM_WORLD
    ranks = world.Get_size()
    factor = 2 * (ranks - 1) / ranks if ranks > 1 else 0.0
    if world.Get_rank() == 0:
        print(f"# raw MPI_Allreduce (mpi4py), float32 sum in place, {ranks} ranks; busbw = algbw x {factor:.3f}")
        print(f"{'size (B)':>12} {'time (us)':>10} {'algbw GB/s':>11} {'busbw GB/s':>11}")
    size = max(arguments.min_bytes // 4 * 4, 4)
    while size <= arguments.max_bytes:
        buffer = np.ones(size // 4, dtype=np.float32)
        for _ in range(arguments.warmup):
            world.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)
        times = []
        for _ in range(arguments.iterations):
            world.Barrier()
            start = time.perf_counter()
            world.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)
            elapsed = time.perf_counter() - start
            times.append(world.allreduce(elapsed, op=MPI.MAX))
        seconds = sorted(times)[len(times) // 2]
        if world.Get_rank() == 0:
            algbw = size / seconds / 1e9
            print(f"{size:>12} {seconds * 1e6:>10.1f} {algbw:>11.3f} {algbw * factor:>11.3f}")
        size *= 2


if __name__ == "__main__":
    main()
