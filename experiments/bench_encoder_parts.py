"""Where the zoo's encoder layer spends its batch-1 step: its four products alone, the four in a chain, the
layer whole, and the square products of the calibration's matrix grid, all timed in the same shuffled rounds.

A ``TransformerEncoderLayer(256, 4 heads, 2048)`` in ``eval()`` under ``no_grad`` runs one fused op; the
prediction costs its products on the matrix grid (square ``K = N`` cells at ``M`` = 64 rows, read at the
product's ``K·N``), the rest of its kernels on theirs (:mod:`crossover.opcost.fused_layers`), and its weights
read back from the shared cache (:mod:`crossover.opcost.reuse`). This prints, from one run:

- each product alone against the grid's cells timed beside it (their time per ``K·N`` interpolated in
  ``log K·N``): whether the grid costs the layer's shapes;
- the four products one after the other (5.0 MiB of weights cycled) against their sum alone: what reading the
  weights back costs;
- the layer whole against the chain: what the fused op adds beyond its products.

    python experiments/bench_encoder_parts.py --threads 1 [--rounds 60] [--tokens 64]

Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

GRID_KN = (256, 384, 512, 768, 1024)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--tokens", type=int, default=64, help="the sequence length (the zoo's: 64)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    linear = torch.nn.functional.linear
    layer = torch.nn.TransformerEncoderLayer(256, 4, 2048, dropout=0.0, batch_first=True).eval()
    x3 = torch.randn(1, args.tokens, 256)
    x, hidden = x3[0], torch.randn(args.tokens, 2048)
    attention = layer.self_attn
    products = {"in_proj 256->768": (attention.in_proj_weight, attention.in_proj_bias, x),
                "out_proj 256->256": (attention.out_proj.weight, attention.out_proj.bias, x),
                "linear1 256->2048": (layer.linear1.weight, layer.linear1.bias, x),
                "linear2 2048->256": (layer.linear2.weight, layer.linear2.bias, hidden)}
    cells = {kn: (torch.randn(args.tokens, kn), torch.randn(kn, kn), torch.randn(kn)) for kn in GRID_KN}
    cases = {f"grid cell {kn}x{kn}": (lambda c=c: torch.addmm(c[2], c[0], c[1])) for kn, c in cells.items()}
    cases.update({name: (lambda p=p: linear(p[2], p[0], p[1])) for name, p in products.items()})
    cases["chain of the four"] = lambda: [linear(i, w, b) for w, b, i in products.values()]
    cases["layer whole"] = lambda: layer(x3)
    times = {name: [] for name in cases}
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for call in cases.values():
            for _ in range(5):
                call()
        names = list(cases)
        for _ in range(args.rounds):
            rng.shuffle(names)
            for name in names:
                start = time.perf_counter()
                for _ in range(3):
                    cases[name]()
                times[name].append((time.perf_counter() - start) / 3)
    p10 = {name: float(np.quantile(t, 0.1)) * 1e6 for name, t in times.items()}
    log_kn = np.log([kn * kn for kn in GRID_KN])
    per_kn = [p10[f"grid cell {kn}x{kn}"] / (kn * kn) for kn in GRID_KN]
    print(f"{args.threads} thread(s), {args.rounds} rounds, {args.tokens} tokens; 10th percentiles; torch {torch.__version__}")
    grid_total = 0.0
    for name, (w, _, _) in products.items():
        kn = w.shape[0] * w.shape[1]
        grid = float(np.interp(np.log(kn), log_kn, per_kn)) * kn
        grid_total += grid
        print(f"{name:20s} alone {p10[name]:8.1f} µs  grid {grid:8.1f} µs  alone / grid {p10[name] / grid:.2f}")
    alone = sum(p10[name] for name in products)
    print(f"products alone {alone:.1f} µs (grid {grid_total:.1f}); chain {p10['chain of the four']:.1f} "
          f"({p10['chain of the four'] - alone:+.1f} over alone); layer whole {p10['layer whole']:.1f} "
          f"({p10['layer whole'] - p10['chain of the four']:+.1f} over the chain, {p10['layer whole'] - grid_total:+.1f} over the grid)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
