"""Where a 16-thread host's batch-1 step loses its time: the two costs the H100's fifth visit located,
timed at several thread counts in one process.

    python experiments/bench_batch1_host.py [--threads 16,8,4,1] [--rounds 8] [--calls 40]

On the H100's fifth visit (``experiments/results/nvidia-h100-80gb-hbm3-16c/run5/step-profile.log``) at 16
threads, under ``torch.profiler``, the MNIST training step's SGD update (``aten::add_`` on the same four
parameter tensors) took 112 µs a call after a batch-1 step and 7.0 after a batch-8 one, and a LeNet-5-like
6→16-channel 5×5 convolution at batch 1 took 472 µs back to back against 51 at one thread; spinning
threads (``OMP_WAIT_POLICY=ACTIVE``) changed neither. This times, at each thread count, in shuffled rounds:

- ``add_ after b1`` / ``add_ after b8``: ``p.add_(g, alpha=-lr)`` on a 784×128 parameter, its gradient
  ``g`` made just before (not timed) by the product a ``Linear``'s backward runs for a batch of 1 or 8
  (``dy.t() @ x``): whether the update pays for what made its operand (which thread wrote it, how);
- ``conv 1->6``, ``conv 6->16``: LeNet-5's two convolutions at batch 1, back to back;

and prints the median over rounds of each one's per-call median (µs). Where a smaller thread count is
much quicker, an op at batch 1 is better run on fewer threads than the host has, a cost no calibration
cell at the host's thread count shows apart. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time


def cases(lr: float = 0.01) -> dict:
    """Name -> (set-up called untimed before each call, the timed call)."""
    import torch

    torch.manual_seed(0)
    param = torch.randn(128, 784)
    grads = {}

    def producer(batch: int):
        x, dy = torch.randn(batch, 784), torch.randn(batch, 128)

        def make():
            grads["g"] = dy.t() @ x
        return make

    image1, w1, b1 = torch.randn(1, 1, 28, 28), torch.randn(6, 1, 5, 5), torch.randn(6)
    image2, w2, b2 = torch.randn(1, 6, 14, 14), torch.randn(16, 6, 5, 5), torch.randn(16)
    nothing = lambda: None  # noqa: E731
    return {"add_ after b1": (producer(1), lambda: param.add_(grads["g"], alpha=-lr)),
            "add_ after b8": (producer(8), lambda: param.add_(grads["g"], alpha=-lr)),
            "conv 1->6": (nothing, lambda: torch.conv2d(image1, w1, b1, padding=2)),
            "conv 6->16": (nothing, lambda: torch.conv2d(image2, w2, b2))}


def per_call_median_s(setup, call, calls: int) -> float:
    """Median seconds of ``calls`` calls of ``call``, each right after an untimed ``setup()``."""
    times = []
    for _ in range(calls):
        setup()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default=None,
                        help="comma-separated intra-op thread counts (default: the host's, half, 4 and 1)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=40, help="calls a visit (default 40)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import torch

    host = torch.get_num_threads()
    counts = ([int(t) for t in args.threads.split(",")] if args.threads
              else sorted({host, max(host // 2, 1), min(4, host), 1}, reverse=True))
    if any(t < 1 for t in counts):
        parser.error("--threads: counts must be 1 or more")
    steps = cases()
    visits = [(t, name) for t in counts for name in steps]
    medians = {visit: [] for visit in visits}
    rng = random.Random(args.seed)
    with torch.no_grad():
        for _ in range(2):  # warm-up: every kernel and thread pool once
            for t, name in visits:
                torch.set_num_threads(t)
                per_call_median_s(*steps[name], calls=3)
        for r in range(args.rounds):
            rng.shuffle(visits)
            for t, name in visits:
                torch.set_num_threads(t)
                medians[(t, name)].append(per_call_median_s(*steps[name], calls=args.calls))
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    torch.set_num_threads(host)
    print(f"{args.rounds} rounds, per-call median µs (median over rounds); the host's threads: {host}")
    for name in steps:
        cells = "  ".join(f"{t:>2d} threads: {1e6 * statistics.median(medians[(t, name)]):8.1f}" for t in counts)
        print(f"  {name:<14s} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
