"""What a parallel region pays after a serial gap, by who opens it: ATen's elementwise loop, MKL's
matrix-vector product, oneDNN's convolution.

    python experiments/bench_wake_kinds.py [--threads N] [--rounds 15] [--gaps-us 0,10,30,100,300]

The calibration's wake primitive (:mod:`crossover.opcost.thread_wake`) times one kind of region, a ReLU
over 2^16 elements (ATen's ``parallel_for``), after busy waits on the calling thread. A model's batch-1
step opens regions of other kinds between its serial ops: MKL's product for a ``Linear`` of ``K·N`` past
2^14, oneDNN's convolution (LeNet-5's two). This times each after the same gaps, in shuffled rounds in
one process (the allocator settled; median over rounds of the per-call median of 40 calls, each right
after its gap), and prints each one's extra over its back-to-back call (the gap itself is not timed). Run it under ``OMP_WAIT_POLICY=ACTIVE`` too: what the threads' sleeping costs is the
difference. Shapes: LeNet-5's convolutions at batch 1 (1→6 channels on 28×28, padded; 6→16 on 12×12,
5×5 kernels) and its first ``Linear`` (400→120) on one row.

On the 2-core VM (intel-xeon-2c) at two threads each call paid 6-15 µs more after a gap of 100-300 µs
than back to back (the convolutions from 30 µs), under the runtime's default wait and under ``ACTIVE``
alike, and at one thread, with no worker thread to wake, 5-9 µs: there the extra is the calling thread's
own state after other work (its caches, predictors), not sleeping threads, and the calibration's wake
primitive, the ReLU's row, reads that too (logs ``experiments/results/intel-xeon-2c/logs/
bench_wake_kinds_*``). Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time


def region_steps() -> dict:
    """Name -> a call that opens one parallel region of that kind at two threads or more."""
    import torch

    torch.manual_seed(0)
    x = torch.randn(2**16)
    row, weight, bias = torch.randn(1, 400), torch.randn(120, 400), torch.randn(120)
    weight_t = weight.t()
    image1, w1, b1 = torch.randn(1, 1, 28, 28), torch.randn(6, 1, 5, 5), torch.randn(6)
    image2, w2, b2 = torch.randn(1, 6, 12, 12), torch.randn(16, 6, 5, 5), torch.randn(16)
    return {"aten relu 2^16": lambda: torch.relu(x),
            "mkl gemv 400x120": lambda: torch.addmm(bias, row, weight_t),
            "onednn conv 1->6": lambda: torch.conv2d(image1, w1, b1, padding=2),
            "onednn conv 6->16": lambda: torch.conv2d(image2, w2, b2)}


def measure(steps: dict, gaps_s: list, rounds: int, calls: int = 40, seed: int = 0) -> dict:
    """``{(name, gap_s): median over rounds of the per-call median}`` in seconds, each call timed right
    after a busy wait of its gap on the calling thread; (name, gap) visits shuffled in every round."""
    import torch

    clock = time.perf_counter
    rng = random.Random(seed)
    per_round: dict = {}
    with torch.no_grad():
        for _ in range(rounds):
            visits = [(name, gap) for name in steps for gap in gaps_s]
            rng.shuffle(visits)
            for name, gap in visits:
                call, times = steps[name], []
                for _ in range(calls):
                    until = clock() + gap
                    while clock() < until:
                        pass
                    start = clock()
                    call()
                    times.append(clock() - start)
                per_round.setdefault((name, gap), []).append(statistics.median(times))
    return {key: statistics.median(values) for key, values in per_round.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: as the process has)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--gaps-us", default="0,10,30,100,300", help="serial gaps before each call, µs (0 first)")
    args = parser.parse_args(argv)
    gaps_s = [float(g) * 1e-6 for g in args.gaps_us.split(",")]
    if gaps_s[0] != 0.0:
        parser.error("--gaps-us must start with 0 (the back-to-back call the extras are read against)")
    import os

    import torch

    from crossover.measurement.allocator import settle_allocator

    if args.threads:
        torch.set_num_threads(args.threads)
    settle_allocator()
    steps = region_steps()
    result = measure(steps, gaps_s, args.rounds)
    wait = os.environ.get("OMP_WAIT_POLICY", "default")
    print(f"{torch.get_num_threads()} threads, OMP_WAIT_POLICY {wait}, {args.rounds} rounds: per call µs "
          f"(extra over back to back)")
    for name in steps:
        alone = result[(name, 0.0)]
        cells = [f"{alone * 1e6:6.1f}"] + [f"{result[(name, g)] * 1e6:6.1f} ({(result[(name, g)] - alone) * 1e6:+5.1f})"
                                            for g in gaps_s[1:]]
        print(f"  {name:18s} " + "  ".join(f"gap {g * 1e6:4.0f} µs: {c}" for g, c in zip(gaps_s, cells)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
