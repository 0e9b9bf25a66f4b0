"""A memory-bound op alone against the same op right after another that wrote its input, on this CPU.

    python experiments/bench_stream_context.py --threads 1,2 [--sizes-mib 1,4,16,64]

For each tensor size and thread count (each in a fresh process): a ReLU timed alone (its input and
output the same buffers at every call, as a calibration's lone primitive runs) and after a multiply
that writes its input (``relu(x * 1)`` less ``x * 1``), and the calibration's chain primitive (four
ReLUs in a row, each reading the one before's fresh output; time per ReLU). Past the private caches
and up to the last-level cache, the lone op keeps its bytes in the shared cache while a step's ops
stream part of theirs from DRAM (:mod:`crossover.opcost.streaming`). glibc's allocator thresholds are
fixed for the run (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) so that no output is mapped
and faulted in afresh at each call. Nothing else may run while it times.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from block_timing import block_mean_us

_ENV = {"MALLOC_MMAP_THRESHOLD_": str(2**32), "MALLOC_TRIM_THRESHOLD_": str(2**36), "MALLOC_TOP_PAD_": "0"}


def _child(threads: int, sizes_mib) -> None:
    import torch

    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    for mib in sizes_mib:
        n = int(mib * 2**20) // 4
        x = torch.randn(n)
        calls = max(3, int(64 / mib))

        def chain():
            y = x
            for _ in range(4):
                y = torch.relu(y)
            return y

        alone = block_mean_us(lambda: torch.relu(x), calls)
        after = block_mean_us(lambda: torch.relu(x.mul(1.0)), calls) - block_mean_us(lambda: x.mul(1.0), calls)
        chained = block_mean_us(chain, calls) / 4
        gbs = 2 * mib * 2**20 / 1e3  # bytes moved / 1e9 * 1e6 µs
        print(f"{threads:>7} {mib:>8g} {alone:>9.0f} {gbs / alone:>6.0f} {after:>9.0f} {after / alone:>6.2f} "
              f"{chained:>9.0f} {chained / alone:>6.2f}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    parser.add_argument("--sizes-mib", default="1,4,16,64", help="tensor sizes in MiB (default 1,4,16,64)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes_mib.split(",")]
    if args.child is not None:
        _child(args.child, sizes)
        return 0
    print("threads tensor_MiB  alone_us   GB/s  after_us  ratio  chain_us  ratio")
    for threads in (int(t) for t in args.threads.split(",")):
        subprocess.run([sys.executable, __file__, "--child", str(threads), "--sizes-mib", args.sizes_mib],
                       env={**os.environ, **_ENV}, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
