"""The step from batch 1 to batch 2: the per-layer cost the ``gemm`` refinement models.

    python experiments/bench_gemv_gemm.py [--device cpu] [--rounds 7] [--threads N]

A batch of one multiplies each weight matrix by a vector; a larger batch by a matrix, a different
kernel with its own fixed cost per call (on the CPU, MKL's GEMM blocks and packs the weights; a
matrix-vector product just streams them). The roofline has no term for that: from batch 1 to 2 it
adds only the FLOPs of one more sample. This script times the toy model back to back at batch 1, 2,
4, 8 and 16 for a few widths, interleaved in shuffled rounds so that a slow spell of a shared machine
hits every batch alike, and prints the per-layer time (10th percentile of the repeats pooled over the
rounds), the jump from batch 1 to 2, and what the FLOPs alone would add.
"""

from __future__ import annotations

import argparse
import random
import sys

import numpy as np

from crossover.measurement.toy_step import Config, measure
from crossover.measurement.toy_counts import step_flops
from crossover.results.statistics import QUIET_QUANTILE
from crossover.measurement.timer import TimerOptions

WIDTHS = (128, 256, 512)
BATCHES = (1, 2, 4, 8, 16)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=7, help="shuffled rounds (default 7)")
    parser.add_argument("--n-layers", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (default: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.n_layers < 1:
        parser.error("--rounds and --n-layers must be 1 or more")
    options = TimerOptions(warmup_s=0.02, min_run_time_s=0.05, max_run_time_s=0.15)
    configs = [Config(d, args.n_layers, b, device=args.device, threads=args.threads)
               for d in WIDTHS for b in BATCHES]
    raw = {c: [] for c in configs}
    rng = random.Random(args.seed)
    threads = None
    for r in range(args.rounds):
        order = list(configs)
        rng.shuffle(order)
        for c in order:
            result = measure(c, options)
            threads = result.threads_used
            raw[c].extend(result.timing.raw_times_s)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    per_layer_us = {c: 1e6 * float(np.quantile(raw[c], QUIET_QUANTILE)) / args.n_layers for c in configs}
    print(f"{args.device}, {threads} threads, n_layers={args.n_layers}, {args.rounds} rounds; "
          f"per-layer time in µs (10th percentile of the pooled repeats)")
    print(f"{'d_model':>7s} " + " ".join(f"{'B=' + str(b):>8s}" for b in BATCHES)
          + f" {'B1->B2':>8s} {'FLOPs add':>10s}")
    for d in WIDTHS:
        row = [per_layer_us[Config(d, args.n_layers, b, device=args.device, threads=args.threads)] for b in BATCHES]
        jump = row[1] - row[0]
        flops_one_sample = step_flops(d, args.n_layers, 1) / args.n_layers
        rate = step_flops(d, args.n_layers, BATCHES[-1]) / args.n_layers / (row[-1] * 1e-6)  # FLOP/s at B=16
        print(f"{d:>7d} " + " ".join(f"{v:8.2f}" for v in row)
              + f" {jump:+8.2f} {1e6 * flops_one_sample / rate:10.2f}")
    print("B1->B2: measured change of the per-layer time from batch 1 to 2; FLOPs add: the time one "
          "more sample's FLOPs take at the rate reached at batch 16")
    return 0


if __name__ == "__main__":
    sys.exit(main())
