"""Where a product of ``M`` rows starts to pay the shared cache's price for its weights: products of 1 to 128
rows over 256 × 2048 weights (2 MiB), cycling over copies that span 0 to 16 MiB, against the same product on
one copy.

A BLAS packs the weight of a product with many rows into a buffer of its own as it runs, so such a product
touches its weight's bytes twice: its footprint is twice the weights, and it pays the shared level's price
from half the span a one-row product does (:data:`crossover.opcost.reuse.PACKED_MIN_ROWS`). Every (rows,
span) case is visited in a shuffled order in each round: each visit reads every copy once (as a step reads
its weights), then a block of calls cycles over them; the 10th percentile of a case's blocks.

    python experiments/bench_reuse_packing.py --threads 1 [--rounds 30]
    python experiments/bench_reuse_packing.py --threads 1 --encoder

With ``--encoder`` it times the zoo's encoder layer at batch 1 (``nn.TransformerEncoderLayer(256, 4)``, 64
tokens, 5.0 MiB of weights) instead: one layer called again and again, and 2, 4 and 8 copies called in turn
(each layer's weights read back after its copies'), in a shuffled order in each round; the 10th percentile and
median of a call. Where one layer alone costs what the copies in turn do, its weights do not stay in the
shared level between two steps.

Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench_reuse_products import cycled_visit_s

MIB = 2**20
K, N = 256, 2048
ROWS = (1, 16, 32, 64, 128)
SPANS_MIB = (0, 2, 3, 4, 6, 8, 16)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--encoder", action="store_true", help="time the zoo's encoder layer at batch 1, alone and "
                                                               "with 2, 4 and 8 copies in turn, instead")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    if args.encoder:
        return _encoder(args.rounds, args.threads)
    cases = {}
    for span in SPANS_MIB:
        copies = max(1, round(span * MIB / (4 * K * N)))
        pool = torch.randn(copies, N, K)
        for m in ROWS:
            cases[(m, span)] = ([pool[i].t() for i in range(copies)], torch.randn(m, K))
    times = {case: [] for case in cases}
    with torch.no_grad():
        for r in range(args.rounds):
            order = list(cases)
            np.random.default_rng(r).shuffle(order)
            for case in order:
                times[case].append(cycled_visit_s(*cases[case], min_calls=8))
    print(f"{args.threads} thread(s), {args.rounds} rounds, weights {K} x {N}; torch {torch.__version__}; "
          "extra ps a weight byte over one copy, by the span of the copies")
    for m in ROWS:
        alone = float(np.quantile(times[(m, 0)], 0.1))
        extras = [(float(np.quantile(times[(m, s)], 0.1)) - alone) / (4 * K * N) * 1e12 for s in SPANS_MIB[1:]]
        print(f"M={m:4d} alone {alone * 1e6:8.1f} µs  " + "  ".join(f"{s:2d} MiB {e:6.1f}" for s, e in
                                                                   zip(SPANS_MIB[1:], extras)))
    return 0


ENCODER_COPIES = (1, 2, 4, 8)


def _encoder(rounds: int, threads: int) -> int:
    import torch

    from crossover.measurement.allocator import settle_allocator

    torch.manual_seed(0)
    layers = [torch.nn.TransformerEncoderLayer(256, 4, batch_first=True).eval() for _ in range(max(ENCODER_COPIES))]
    x = torch.randn(1, 64, 256)
    settle_allocator()
    times = {k: [] for k in ENCODER_COPIES}
    with torch.no_grad():
        for r in range(rounds):
            order = list(ENCODER_COPIES)
            np.random.default_rng(r).shuffle(order)
            for k in order:
                for i in range(2 * k):  # each copy read once or twice first
                    layers[i % k](x)
                calls = max(8, k)
                start = time.perf_counter()
                for i in range(calls):
                    layers[i % k](x)
                times[k].append((time.perf_counter() - start) / calls)
    weights_mib = sum(p.numel() * 4 for p in layers[0].parameters()) / MIB
    print(f"the encoder layer at batch 1 (64 tokens, {weights_mib:.1f} MiB of weights), {threads} thread(s), "
          f"{rounds} rounds; torch {torch.__version__}")
    for k in ENCODER_COPIES:
        print(f"{k} cop{'y' if k == 1 else 'ies'} in turn ({k * weights_mib:5.1f} MiB of weights): p10 "
              f"{np.quantile(times[k], 0.1) * 1e6:8.1f} µs  median {np.median(times[k]) * 1e6:8.1f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
