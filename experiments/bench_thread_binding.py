"""Whether a process's OpenMP threads are bound to cores changes a small op's time: a one-image 3×3
convolution (3 → 8 channels, 32 × 32) timed in several fresh processes, with the threads free to
move and bound (``OMP_PROC_BIND=true OMP_PLACES=cores``).

    python experiments/bench_thread_binding.py [--threads 2] [--processes 10]

Each process times 100 calls after 20 warm-up calls and prints the median. The processes run in pairs,
one free and one bound, the order alternating from pair to pair (ABBA), so that a slow spell of the
machine falls on both alike: a first version ran all free processes, then all bound ones, and read a slow
spell of this VM (3 of the first 10 processes) as an effect of binding. Each line gives the time of day,
so that slow processes can be seen to cluster in time. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import time
import subprocess
import sys

_CHILD = """
import time, numpy as np, torch
torch.set_num_threads({threads})
x, w = torch.randn(1, 3, 32, 32), torch.randn(8, 3, 3, 3)
with torch.no_grad():
    for _ in range(20):
        torch.conv2d(x, w, None, 1, 1)
    times = []
    for _ in range(100):
        t = time.perf_counter()
        torch.conv2d(x, w, None, 1, 1)
        times.append(time.perf_counter() - t)
print(float(np.median(times)))
"""


def one_process(threads: int, bound: bool) -> float:
    env = dict(os.environ)
    for name in ("OMP_PROC_BIND", "OMP_PLACES"):
        env.pop(name, None)
    if bound:
        env.update(OMP_PROC_BIND="true", OMP_PLACES="cores")
    done = subprocess.run([sys.executable, "-c", _CHILD.format(threads=threads)], capture_output=True, text=True,
                          check=True, env=env)
    return float(done.stdout.split()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--processes", type=int, default=10, help="processes of each kind (default 10)")
    parser.add_argument("--slow-us", type=float, default=20.0,
                        help="a process whose median is above this counts as slow in the summary (default 20)")
    args = parser.parse_args(argv)
    medians = {False: [], True: []}
    for pair in range(args.processes):
        for bound in ((False, True) if pair % 2 == 0 else (True, False)):
            medians[bound].append(one_process(args.threads, bound) * 1e6)
            label = "bound" if bound else "free "
            print(f"{time.strftime('%H:%M:%S')} pair {pair:2d} {label} {medians[bound][-1]:6.1f} µs", flush=True)
    for bound in (False, True):
        label = "bound (OMP_PROC_BIND=true OMP_PLACES=cores)" if bound else "free to move"
        slow = sum(m > args.slow_us for m in medians[bound])
        print(f"{args.threads} threads, {label}: {slow} of {args.processes} above {args.slow_us:g} µs; per-process "
              "median µs: " + " ".join(f"{m:.1f}" for m in medians[bound]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
