"""How warm a large primitive is when a calibration visit times it: its timed calls right after other
primitives, against the same primitive visited again and again (#27, the 1-D CNN's batch-512 step).

    python experiments/bench_visit_warmth.py [--threads 1] [--family adaptive_pool] [--shape 512x32x256]

Builds every step of the quick plan on this CPU (as ``crossover calibrate --quick`` does, the cold
weight pools included), then times the chosen primitive with the calibration's own visit
(``time_step`` with the plan's options: one warm-up call, then repeats of at least 2 ms up to 8 ms):
``--visits`` visits back to back, and ``--visits`` visits each after ``--others`` other primitives drawn at
random (each visited as the calibration visits it). Prints each visit's timed calls in ms. A primitive
whose input outgrows the caches the other primitives leave it may not reach its steady state within a
visit: then the calibration's curve there is slower than the op runs where its input was just written
or read. Run it on a quiet machine (about a minute at one thread).
"""

from __future__ import annotations

import argparse
import random
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--family", default="adaptive_pool", help="the primitive's family (default adaptive_pool)")
    parser.add_argument("--shape", default="512x32x256", help="the primitive's shape, as its key writes it")
    parser.add_argument("--visits", type=int, default=4)
    parser.add_argument("--others", type=int, default=20, help="other primitives visited before each visit")
    args = parser.parse_args(argv)
    import torch

    from crossover.measurement.environment import llc_bytes
    from crossover.measurement.timer import time_step
    from crossover.opcost.calibration_plan import PLANS, make_step, points

    torch.set_num_threads(args.threads)
    plan = PLANS["quick"]
    shape = tuple(int(v) for v in args.shape.split("x"))
    every = [p for p in points(plan, "cpu", args.threads) if p.family not in ("model", "reference")]
    chosen = [p for p in every if p.family == args.family and tuple(p.shape) == shape]
    if not chosen:
        parser.error(f"the quick plan has no {args.family} primitive of shape {args.shape}")
    pools: dict = {}
    steps = {p.key: make_step(p, "cpu", llc=llc_bytes(), pool_factor=plan.cold_pool_factor, cache=pools) for p in every}
    target = steps[chosen[0].key]

    def visit() -> str:
        timing = time_step(target, plan.options, synchronous=True)
        return "[" + ", ".join(f"{t * 1e3:.2f}" for t in timing.raw_times_s) + "]"

    print(f"{torch.__version__}, {args.threads} thread(s): {chosen[0].key}, visited as the quick plan visits "
          f"({len(every)} primitives built); ms per timed call")
    print("back to back:        " + " ".join(visit() for _ in range(args.visits)))
    rng = random.Random(0)
    others = [step for key, step in steps.items() if key != chosen[0].key]
    after = []
    for _ in range(args.visits):
        for step in rng.sample(others, args.others):
            time_step(step, plan.options, synchronous=True)
        after.append(visit())
    print(f"after {args.others} others: " + " ".join(after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
