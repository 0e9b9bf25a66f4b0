"""Which latency statistic repeats from run to run on this machine: median or 10th percentile?

    python experiments/bench_statistic.py [--runs 4] [--rounds 5] [--device cpu]

Measures the same configurations in several independent runs, each made as a sweep makes one (every
configuration in ``--rounds`` shuffled passes, ``crossover.measurement.toy_step.measure`` per pass), and
computes each configuration's latency per run as

- ``median``: the median of its rounds' medians (what ``median_s`` holds after combining rounds);
- ``p10``: the 10th percentile of its repeats pooled over the rounds (``p10_s``);
- ``min``: the fastest repeat.

It prints, per statistic, how far one run's value lies from the median over runs (mean and max of
``|value / median over runs - 1|`` over configurations) and the mean ratio between the statistics.
On a shared host, slow spells that last seconds lengthen whole rounds: a statistic that follows them
differs from run to run, and no latency model of the sizes can be more accurate than that.
"""

from __future__ import annotations

import argparse
import random
import sys

import numpy as np

from crossover.measurement.toy_step import Config, measure
from crossover.results.statistics import QUIET_QUANTILE
from crossover.measurement.timer import TimerOptions

CONFIGS = [  # (d_model, n_layers, batch_size): launch-, memory- and compute-bound steps
    (128, 128, 1), (128, 16, 1), (64, 32, 16), (256, 32, 16),
    (512, 32, 1), (512, 8, 128), (1024, 4, 256), (64, 8, 128),
]


def one_run(configs, rounds, device, options, rng) -> dict:
    """Per config, the raw repeats of each round, from ``rounds`` shuffled passes."""
    raw = {c: [] for c in configs}
    for _ in range(rounds):
        order = list(configs)
        rng.shuffle(order)
        for c in order:
            raw[c].append(np.asarray(measure(Config(*c, device=device), options).timing.raw_times_s))
    return raw


def statistics(raw_rounds: list) -> dict:
    """The three statistics of one config in one run (seconds)."""
    pooled = np.concatenate(raw_rounds)
    return {"median": float(np.median([np.median(r) for r in raw_rounds])),
            "p10": float(np.quantile(pooled, QUIET_QUANTILE)), "min": float(pooled.min())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4, help="independent runs (default 4)")
    parser.add_argument("--rounds", type=int, default=5, help="shuffled rounds per run (default 5, as the quick suite)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.runs < 2 or args.rounds < 1:
        parser.error("--runs must be 2 or more and --rounds 1 or more")
    options = TimerOptions(warmup_s=0.02, min_run_time_s=0.05, max_run_time_s=0.15)  # the quick suite's
    rng = random.Random(args.seed)
    values = {name: np.empty((args.runs, len(CONFIGS))) for name in ("median", "p10", "min")}
    for run in range(args.runs):
        raw = one_run(CONFIGS, args.rounds, args.device, options, rng)
        for j, c in enumerate(CONFIGS):
            for name, value in statistics(raw[c]).items():
                values[name][run, j] = value
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    print(f"{len(CONFIGS)} configs on {args.device}, {args.runs} runs of {args.rounds} shuffled rounds each")
    print(f"{'statistic':<10s} {'mean |run / median of runs - 1|':>32s} {'max':>8s} {'vs median':>10s}")
    for name, table in values.items():
        deviation = np.abs(table / np.median(table, axis=0) - 1)
        ratio = float(np.exp(np.mean(np.log(table / values["median"]))))
        print(f"{name:<10s} {100 * deviation.mean():>31.1f}% {100 * deviation.max():>7.1f}% {ratio:>10.3f}")
    print("per config (ms), median over runs of each statistic:")
    for j, c in enumerate(CONFIGS):
        cells = "  ".join(f"{name} {1e3 * np.median(table[:, j]):8.4f}" for name, table in values.items())
        print(f"  d_model={c[0]:<5d} n_layers={c[1]:<4d} batch={c[2]:<4d} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
