"""Batch norm, mean and pointwise convolutions alone against their predicted cost (the depthwise-separable
CNN's misses on the Intel VM, #27).

For each op at the depthwise CNN's shapes (and a few beside them), in shuffled rounds at ``--threads``
(the allocator settled as the measurement does), the median over rounds of each visit's 10th-percentile
call, the op called as a model calls it (an eval-mode ``nn.BatchNorm2d`` module, whose forward does
python work of its own before ``F.batch_norm``; ``torch.mean``; ``F.conv2d``), against:

- ``predicted``: what :func:`crossover.opcost.op_costs.op_cost` costs the trace rows at on ``--profile``
  (batch norm: its kernel's row on the ``batch_norm`` curves, the ``empty`` row beside it and the
  profile's ``module_call_s``);
- ``before``: as it was costed before 27 Nov: batch norm on the reduction curve, a mean as the sum
  alone; a 1 × 1 convolution is costed on the convolution grids, then and now;
- ``products``: for a 1 × 1 convolution, the products and oneDNN reorders it runs (one product of the
  batch's pixels and a copy of each blocked buffer read and written; on the native path one product
  per image), the costing tried in 5d51fc1 and taken back (:func:`products_and_reorders_s`).

A profile calibrated before the batch-norm primitives has no ``before``/``predicted`` difference for
batch norm. Run it on a quiet machine.

    python experiments/bench_layer_costs.py --profile DIR [--threads 1] [--rounds 11]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
from pathlib import Path

#: (what, shape, output channels of a 1 × 1 convolution)
CASES = (("batch_norm", (1, 16, 16, 16), 0), ("batch_norm", (8, 16, 16, 16), 0), ("batch_norm", (8, 64, 8, 8), 0),
         ("batch_norm", (64, 32, 16, 16), 0), ("batch_norm", (8, 16, 32, 32), 0),
         ("mean", (1, 64, 8, 8), 0), ("mean", (8, 64, 8, 8), 0), ("mean", (64, 64, 8, 8), 0),
         ("pointwise", (8, 16, 16, 16), 32), ("pointwise", (8, 64, 8, 8), 64), ("pointwise", (64, 16, 16, 16), 32),
         ("pointwise", (64, 32, 8, 8), 64), ("pointwise", (64, 64, 8, 8), 64), ("pointwise", (1, 64, 8, 8), 64))


def _call(what: str, shape: tuple, c_out: int):
    import torch
    import torch.nn.functional as F

    x = torch.randn(shape)
    if what == "batch_norm":
        c = shape[1]
        norm = torch.nn.BatchNorm2d(c).eval()
        norm.running_mean.normal_(), norm.running_var.uniform_(0.5, 1.5)
        return lambda: norm(x)
    if what == "mean":
        return lambda: torch.mean(x, (2, 3))
    weight = torch.randn(c_out, shape[1], 1, 1)
    return lambda: F.conv2d(x, weight)


def _rows(what: str, shape: tuple, c_out: int) -> list:
    from torch import nn

    from crossover.opcost.module_predict import trace_step

    class Mean(nn.Module):
        def forward(self, x):
            return x.mean(dim=(2, 3))

    module = {"batch_norm": lambda: nn.BatchNorm2d(shape[1]).eval(), "mean": Mean,
              "pointwise": lambda: nn.Conv2d(shape[1], c_out, 1, bias=False)}[what]()
    return trace_step(module, shape[1:], shape[0])[0].to_dict("records")


def _before_s(profile, what: str, rows: list) -> float:
    from crossover.opcost.op_costs import op_cost

    if what == "batch_norm":
        curves = {k: v for k, v in profile.curves.items() if not k.startswith("batch_norm")}
        profile = dataclasses.replace(profile, curves=curves)
    if what == "mean":
        rows = [dict(r, op="aten.sum.dim_IntList") if "mean" in r["op"] else r for r in rows]
    return sum(op_cost(profile, r, inference=True).host_s for r in rows)


def products_and_reorders_s(profile, row: dict) -> float:
    """A 1 × 1 convolution row (stride 1, one group) as the products and copies it runs on a CPU: on
    oneDNN one product of the batch's pixels by ``C_in`` by ``C_out`` on the matrix grid, and a copy of
    each blocked buffer (:func:`crossover.opcost.op_costs.onednn_copies`) read and written; on the native
    path one product per image, the dispatch paid once."""
    import math

    from crossover.opcost.op_costs import conv_backend, onednn_copies

    (n, c_in, h, w), (c_out, *_) = (tuple(s) for s in row["input_shapes"][:2])
    grid = profile.grids["matmul"]
    if conv_backend(row, profile.threads) == "native":
        per_image = grid(h * w, float(c_in * c_out))
        return per_image + (n - 1) * max(per_image - profile.overhead("dispatch_s"), 0.5 * per_image)
    copies = onednn_copies((n, c_in, h, w), c_in, (n, c_out, h, w))
    return grid(n * h * w, float(c_in * c_out)) + sum(profile.curves["copy"](8.0 * math.prod(c)) for c in copies)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", type=Path, required=True, help="a CPU calibration profile directory")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=60, help="calls per visit (default 60)")
    args = parser.parse_args(argv)

    import torch

    from crossover.measurement.allocator import settle_allocator
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import load_profile

    profile = load_profile(args.profile)
    if profile.device != "cpu":
        parser.error(f"{args.profile} is a {profile.device} profile; this compares CPU ops")
    torch.set_num_threads(args.threads)
    settle_allocator()
    calls = {case: _call(*case) for case in CASES}
    visits = {case: [] for case in CASES}
    rng = random.Random(0)
    with torch.no_grad():
        for round_ in range(args.rounds):
            order = list(CASES)
            rng.shuffle(order)
            for case in order:
                step, times = calls[case], []
                for _ in range(5):
                    step()
                for _ in range(args.calls):
                    start = time.perf_counter()
                    step()
                    times.append(time.perf_counter() - start)
                visits[case].append(sorted(times)[len(times) // 10])
            print(f"round {round_ + 1}/{args.rounds}", file=sys.stderr)
    print(f"profile {args.profile} ({profile.machine}, {profile.threads} threads); measured at {args.threads} "
          f"threads, median over {args.rounds} rounds of each visit's 10th percentile")
    print(f"{'op':11s} {'shape':18s} {'c_out':>5s} {'measured µs':>12s} {'predicted µs':>13s} {'before µs':>10s} "
          f"{'products µs':>12s}")
    for case in CASES:
        what, shape, c_out = case
        rows = _rows(*case)
        measured = statistics.median(visits[case])
        module = profile.overhead("module_call_s") if what == "batch_norm" else 0.0
        predicted = sum(op_cost(profile, r, inference=True).host_s for r in rows) + module
        conv = next((r for r in rows if r["kind"] == "conv"), None)
        products = f"{products_and_reorders_s(profile, conv) * 1e6:12.1f}" if conv is not None else ""
        print(f"{what:11s} {'x'.join(map(str, shape)):18s} {c_out or '':>5} {measured * 1e6:12.1f} "
              f"{predicted * 1e6:13.1f} {(_before_s(profile, what, rows) + module) * 1e6:10.1f} {products}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
