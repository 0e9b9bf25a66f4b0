"""Whether the reuse probe's price holds for a step's products: a product of ``M`` rows over a weight,
cycling over weight copies that span 0 to 32 MiB, against the same product on one copy.

The calibration's ``reuse`` primitives (:mod:`crossover.opcost.reuse`) time a one-row product over 256 KiB
weights; a step's products have more rows (an encoder layer's at batch 1: 64 tokens) and larger weights.
This times ``M`` = 1, 16 and 64 rows over 256 × 256 and 256 × 2048 weights, every span in turn in each
round (each visit reads every copy once first, then a block of calls cycles over them; the 10th percentile
of a span's blocks), and prints the extra per weight byte over the one copy.

    python experiments/bench_reuse_products.py --threads 1 [--rounds 30]

Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

MIB = 2**20
SPANS_MIB = (0, 2, 4, 8, 16, 32)
ROWS = (1, 16, 64)
WEIGHTS = ((256, 256), (256, 2048))


def cycled_visit_s(weights, x, min_calls: int) -> float:
    """One visit: ``x @ w`` for every copy ``w`` once (as a step reads its weights), then a block of at least
    ``min_calls`` calls cycling over the copies; the block's seconds a call."""
    import torch

    for w in weights:
        torch.mm(x, w)
    calls = max(min_calls, len(weights))
    start = time.perf_counter()
    for i in range(calls):
        torch.mm(x, weights[i % len(weights)])
    return (time.perf_counter() - start) / calls


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    cases = {}
    for m in ROWS:
        for k, n in WEIGHTS:
            for span in SPANS_MIB:
                copies = max(1, round(span * MIB / (4 * k * n)))
                pool = torch.randn(copies, n, k)
                cases[(m, k, n, span)] = ([pool[i].t() for i in range(copies)], torch.randn(m, k))
    times = {case: [] for case in cases}
    with torch.no_grad():
        for _ in range(args.rounds):
            for case, (weights, x) in cases.items():
                times[case].append(cycled_visit_s(weights, x, min_calls=16))
    print(f"{args.threads} thread(s), {args.rounds} rounds; torch {torch.__version__}")
    alone = {}
    for (m, k, n, span), t in times.items():
        p10 = float(np.quantile(t, 0.1))
        alone.setdefault((m, k, n), p10)
        extra_ps = (p10 - alone[(m, k, n)]) / (4 * k * n) * 1e12
        print(f"M={m:3d} K={k:4d} N={n:5d} span {span:3d} MiB  {p10 * 1e6:9.1f} µs  extra {extra_ps:7.1f} ps a weight byte")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
