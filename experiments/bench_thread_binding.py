"""Whether a process's OpenMP threads are bound to cores changes a small op's time: a one-image 3×3
convolution (3 → 8 channels, 32 × 32) timed in several fresh processes, with the threads free to
move and bound (``OMP_PROC_BIND=true OMP_PLACES=cores``).

    python experiments/bench_thread_binding.py [--threads 2] [--processes 10]

Each process times 100 calls after 20 warm-up calls and prints the median; the process's placement of
its threads is decided when it starts, so the spread is between processes. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--processes", type=int, default=10)
    args = parser.parse_args(argv)
    for bound in (False, True):
        medians = [one_process(args.threads, bound) * 1e6 for _ in range(args.processes)]
        label = "bound (OMP_PROC_BIND=true OMP_PLACES=cores)" if bound else "free to move"
        print(f"{args.threads} threads, {label}: per-process median µs: " + " ".join(f"{m:.1f}" for m in medians))
    return 0


if __name__ == "__main__":
    sys.exit(main())
