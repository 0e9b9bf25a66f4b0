"""What a CPU step pays when its weights and gradients outgrow the private caches (crossover.opcost.reuse).

Two parts, at the thread count given:

1. **Probes**: a one-row product over a 256 × 256 weight, an SGD update of a 256 × 256 parameter and a
   batch-1 weight gradient written into its buffer, each cycling over copies that span 0.25 to 16 MiB,
   against the same op on one copy (the calibration's ``reuse`` primitives time the first).
2. **Whole steps**: three-layer MLPs ``d → d/2 → d/2 → 10`` from d = 128 to 1024 (51 KiB to 3 MiB of
   weights), forward and training step at batch 1, in shuffled interleaved rounds, against their cost on
   a profile with and without the reuse term (``--profile``: a calibration of this machine at these
   threads, measured just before; without: rebuilt from its calibration less the reuse primitives, so the
   composition terms are fitted without the term too), and beside the cost of their ops' primitives
   alone (no composition terms, no reuse: the gap is what the step takes beyond them).

    python experiments/bench_reuse.py --threads 1 --profile DIR
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

from block_timing import call_p10_us

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MIB = 2**20
SPANS_MIB = (0.25, 0.5, 1, 2, 3, 4, 8, 16)
WIDTHS = (128, 256, 384, 512, 640, 768, 1024)


def _p10_us(fn, calls: int) -> float:
    return call_p10_us(fn, calls, warmup=min(calls, 100))


def _probe(kind: str, span_bytes: int):
    import torch

    kn = 256
    weight_bytes = 4 * kn * kn
    copies = max(span_bytes // (weight_bytes * (2 if kind == "sgd update" else 1)), 1)
    x, grad = torch.randn(1, kn), torch.randn(1, kn).t()
    if kind == "sgd update":
        pairs = itertools.cycle([(torch.randn(kn * kn), torch.randn(kn * kn)) for _ in range(copies)])
        return lambda: (lambda p, g: p.add_(g, alpha=-1e-3))(*next(pairs))
    if kind == "weight gradient":
        outs = itertools.cycle([torch.empty(kn, kn) for _ in range(copies)])
        return lambda: torch.mm(grad, x, out=next(outs))
    weights = itertools.cycle([torch.randn(kn, kn) for _ in range(copies)])
    return lambda: torch.mm(x, next(weights))


def probes(calls: int) -> None:
    print("op (256 x 256)      " + " ".join(f"{s:>6g}" for s in SPANS_MIB) + "   MiB of copies; µs a call (p10)")
    for kind in ("product", "sgd update", "weight gradient"):
        alone = _p10_us(_probe(kind, 0), calls)
        spans = [_p10_us(_probe(kind, int(s * MIB)), calls) for s in SPANS_MIB]
        extra_ps = (spans[-1] - alone) / (4 * 256 * 256) * 1e6
        print(f"{kind:18s}  " + " ".join(f"{t:6.1f}" for t in spans) + f"   alone {alone:.1f}; {extra_ps:.0f} ps/B at 16 MiB")


def _mlp(d: int):
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(d, d // 2), nn.ReLU(), nn.Linear(d // 2, d // 2), nn.ReLU(), nn.Linear(d // 2, 10))


def profile_without_reuse(profile_dir: str):
    """The profile rebuilt from its calibration without the reuse primitives: no reuse term, and the
    composition fitted without it (what predicting without the term means, not the same terms less it)."""
    from crossover.opcost.calibrate import build_profile, read_calibration
    from crossover.opcost.profiles import load_profile
    from crossover.opcost.reuse import REUSE

    old = load_profile(profile_dir)
    rows = [row for row in read_calibration(profile_dir) if row["family"] != REUSE]
    return build_profile(rows, device=old.device, machine=old.machine, threads=old.threads, llc=old.llc_bytes,
                         cache_bytes=old.cache_bytes, meta=dict(old.meta))


def steps(profile_dir: str, rounds: int, calls: int) -> None:
    import numpy as np

    from crossover.measurement.module_rounds import make_module_step, example_input
    from crossover.opcost.composition import COMPOSITION_TERMS, _with_terms
    from crossover.opcost.module_predict import step_prediction, trace_step
    from crossover.opcost.profiles import load_profile
    profile = load_profile(profile_dir)
    without = profile_without_reuse(profile_dir)
    bare = _with_terms(without, (0.0,) * len(COMPOSITION_TERMS))  # the ops' primitives alone
    cases = [(d, w) for d in WIDTHS for w in ("forward", "train")]
    fns = {(d, w): make_module_step(_mlp(d), example_input((d,), 1), w) for d, w in cases}
    times = {case: [] for case in cases}
    for _ in range(rounds):
        order = list(cases)
        random.shuffle(order)
        for case in order:
            times[case].append(_p10_us(fns[case], calls))
    print(f"\nwhole steps at batch 1, {rounds} rounds of {calls} calls; profile {profile_dir} "
          f"(cache {profile.cache_bytes / MIB:g} MiB, {profile.threads} threads)")
    print("   d  weights KiB  workload  measured µs  costed µs (error)  without reuse (error)  reuse µs  footprint MiB"
          "  primitives alone µs (gap)")
    for d, workload in cases:
        model = _mlp(d)
        table, calls_ = trace_step(model, (d,), 1, workload)
        params = list(model.parameters())
        sizes = dict(module_calls=calls_, n_params=len(params), param_bytes=sum(4 * p.numel() for p in params))
        rows = table.to_dict("records")
        with_it, plain, alone = (step_prediction(p, rows, **sizes) for p in (profile, without, bare))
        measured = float(np.median(times[(d, workload)]))
        print(f"{d:5d} {sizes['param_bytes'] / 1024:11.0f}  {workload:8s} {measured:11.1f}  "
              f"{with_it['latency_s'] * 1e6:9.1f} ({with_it['latency_s'] * 1e6 / measured - 1:+6.1%})  "
              f"{plain['latency_s'] * 1e6:13.1f} ({plain['latency_s'] * 1e6 / measured - 1:+6.1%})  "
              f"{with_it['reuse_s'] * 1e6:8.1f}  {with_it['footprint_bytes'] / MIB:13.2f}  "
              f"{alone['latency_s'] * 1e6:19.1f} ({measured - alone['latency_s'] * 1e6:+.0f})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", help="a calibration of this machine at these threads (the whole-step part)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=400, help="timed calls per probe or step visit")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    probes(args.calls)
    if args.profile:
        steps(args.profile, args.rounds, args.calls // 4)
    return 0


if __name__ == "__main__":
    sys.exit(main())
