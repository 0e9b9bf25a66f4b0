"""What a memory-bound op costs right after another op wrote its input, against alone, at sizes within
the private caches (a lead for the depthwise CNN's ReLUs and batch norms, 2-3 times their lone cost in
its step on the Intel VM; the calibration's ReLU chain read 1.01-1.08 there).

For each tensor size, in shuffled rounds (the same process, the allocator settled), the median per call of:
``relu`` alone on a kept tensor; ``mul`` alone; ``mul`` then ``relu``; ``mul`` then ``relu_`` (in place:
no fresh output); the calibration's chain (four ReLUs, each on the one before's fresh output, per ReLU).
Prints the ReLU's extra after the multiply, out of place and in place, over its lone time.

    python experiments/bench_after_producer.py [--threads 1] [--rounds 15]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200, help="calls per visit (default 200)")
    args = parser.parse_args(argv)

    import torch

    from crossover.measurement.allocator import settle_allocator

    torch.set_num_threads(args.threads)
    settle_allocator()
    sizes_kib = (128, 256, 512, 1024, 2048)  # one tensor's bytes
    steps = {}
    for kib in sizes_kib:
        x = torch.randn(kib * 256)
        steps[(kib, "relu")] = lambda x=x: torch.relu(x)
        steps[(kib, "mul")] = lambda x=x: x * 1.5
        steps[(kib, "mul+relu")] = lambda x=x: torch.relu(x * 1.5)
        steps[(kib, "mul+relu_")] = lambda x=x: torch.relu_(x * 1.5)

        def chain(x=x):
            y = x
            for _ in range(4):
                y = torch.relu(y)
            return y

        steps[(kib, "chain/4")] = chain
    seconds = {key: [] for key in steps}
    rng = random.Random(0)
    for round_ in range(args.rounds):
        keys = list(steps)
        rng.shuffle(keys)
        for key in keys:
            step = steps[key]
            for _ in range(10):
                step()
            start = time.perf_counter()
            for _ in range(args.calls):
                step()
            seconds[key].append((time.perf_counter() - start) / args.calls / (4 if key[1] == "chain/4" else 1))
        print(f"round {round_ + 1}/{args.rounds}", file=sys.stderr)
    print(f"{args.threads} thread(s), {args.rounds} rounds of {args.calls} calls; median µs per call")
    print(f"{'tensor':>8s} {'relu':>7s} {'mul':>7s} {'mul+relu':>9s} {'mul+relu_':>10s} {'chain/4':>8s}  "
          f"{'relu after mul / alone':>22s} {'in place':>9s}")
    for kib in sizes_kib:
        m = {name: statistics.median(seconds[(kib, name)]) * 1e6 for name in ("relu", "mul", "mul+relu", "mul+relu_",
                                                                            "chain/4")}
        after, in_place = (m["mul+relu"] - m["mul"]) / m["relu"], (m["mul+relu_"] - m["mul"]) / m["relu"]
        print(f"{kib:>5d} KiB {m['relu']:7.1f} {m['mul']:7.1f} {m['mul+relu']:9.1f} {m['mul+relu_']:10.1f} "
              f"{m['chain/4']:8.1f}  {after:22.2f} {in_place:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
