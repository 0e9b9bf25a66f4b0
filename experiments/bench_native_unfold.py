"""Single-image convolutions that PyTorch runs natively (im2col + GEMM), timed alone against what a
calibration costs them: with the native grid indexed by ``K·(N + unfold_macs)`` (the unfolding counted,
``crossover.opcost.conv_primitives.native_kn``) and by ``K·N`` alone (as before it), both built from the
same ``calibration.csv.gz``.

    python experiments/bench_native_unfold.py --profile DIR [--rounds 3]

The shapes are none of the calibration's cells: few output channels against many input ones (a U-Net's
last layer), more input than output channels, and the cells' kin at other channel counts; each is a
single image of at most 20480 elements with a 3×3 kernel, which PyTorch runs natively (checked here by
``conv_backend``). Each is called alone back to back (random operands, the profile's threads; the
second-quickest of 9 blocks, ``block_timing``), in ``--rounds`` rounds in shuffled order, and the median
over rounds is printed beside both costs. Run it on a quiet machine (about 20 s).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path
from unittest import mock

from block_timing import block_mean_us

#: (C_in, C_out, image side): single images, 3×3 kernels, padding 1.
SHAPES = ((16, 1, 32), (16, 2, 32), (16, 4, 32), (8, 1, 32), (20, 4, 32), (12, 24, 32), (4, 32, 32),
          (32, 8, 16), (64, 8, 16), (48, 16, 16), (80, 4, 16), (24, 48, 16), (8, 64, 16), (2, 16, 32))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", type=Path, required=True, help="calibration directory (its calibration.csv.gz)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not (args.profile / "calibration.csv.gz").exists():
        parser.error(f"{args.profile}: no calibration.csv.gz")

    import torch
    from torch import nn

    import crossover.opcost.calibrate as calibrate
    from crossover.opcost.conv_primitives import NATIVE_UNFOLD
    from crossover.opcost.op_costs import conv_backend, op_cost
    from crossover.opcost.profiles import load_profile
    from crossover.opcost.trace import trace_module

    saved = load_profile(args.profile)
    rows = calibrate.read_calibration(args.profile)

    def build():
        return calibrate.build_profile(rows, device="cpu", machine=saved.machine, threads=saved.threads,
                                       llc=saved.llc_bytes, cache_bytes=saved.cache_bytes)

    unfolded = build()
    with mock.patch.object(calibrate, "fit_native_unfold", lambda families: None):
        plain = build()
    torch.set_num_threads(saved.threads or torch.get_num_threads())
    print(f"profile {args.profile} ({saved.threads} threads); unfold_macs "
          f"{unfolded.overheads.get(NATIVE_UNFOLD, float('nan')):.1f}; median of {args.rounds} rounds", file=sys.stderr)

    cases = []
    for c_in, c_out, side in SHAPES:
        conv = nn.Conv2d(c_in, c_out, 3, padding=1)
        [row] = [r for r in trace_module(conv, torch.empty(1, c_in, side, side, device="meta"), "forward")
                 .to_dict("records") if r["kind"] == "conv"]
        if conv_backend(row, saved.threads) != "native":
            continue
        x = torch.randn(1, c_in, side, side)
        cases.append(((c_in, c_out, side), lambda conv=conv, x=x: conv(x), row))
    measured = {key: [] for key, _, _ in cases}
    with torch.no_grad():
        for r in range(args.rounds):
            order = list(cases)
            random.Random(r).shuffle(order)
            for key, call, _ in order:
                measured[key].append(block_mean_us(call, 30))
    print(f"{'C_in -> C_out @ side':>22s} {'measured µs':>12s} {'unfolded':>9s} {'error':>7s} {'K·N only':>9s} {'error':>7s}")
    errors = {"unfolded": [], "plain": []}
    for key, _, row in cases:
        m = statistics.median(measured[key])
        u = op_cost(unfolded, row, inference=True).host_s * 1e6
        p = op_cost(plain, row, inference=True).host_s * 1e6
        errors["unfolded"].append(u / m - 1)
        errors["plain"].append(p / m - 1)
        print(f"{key[0]:>9d} -> {key[1]:>3d} @ {key[2]:<3d} {m:12.1f} {u:9.1f} {u / m - 1:+7.1%} {p:9.1f} {p / m - 1:+7.1%}")
    for name, errs in errors.items():
        absolute = [abs(e) for e in errs]
        print(f"{name:>9s}: |error| median {statistics.median(absolute):.1%}, worst {max(absolute):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
