"""What-if, before building a term: a sitting's predictions with every "cold" op charged a fixed extra.

    python experiments/whatif_cold_ops.py PROFILE_DIR SITTING.csv [--zoo experiments/zoo]

An op is cold here when the predicted work since the previous op of the same name (in the step's order,
steps back to back) reaches ``T``: the dispatcher's code and tables for it have had that long to leave
the private caches (``bench_wake_kinds.py``: at one thread an op after 100 µs of other work paid 5-9 µs;
``bench_after_conv.py``). Or, the bytes criterion (columns ``B``), when the bytes read and written since then reach a share of the
profile's private caches (half or all of the threads' L2s; ``bench_after_conv.py``'s copies: the trigger
is bytes against those caches). For ``T`` of 30 and 100 µs and an extra ``X`` of 3, 5 and 8 µs it adds
``X`` times the step's cold ops to each prediction of a ``bench_zoo.py --csv`` table (no composition term
refitted: a bound on what such a term could do, not its result) and prints each model's median |error|
before and after, and how many ops each step has and how many are cold. Pure arithmetic on traces (no
timing); the profile must be the sitting's own.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
from pathlib import Path

ZOO = Path(__file__).resolve().parent / "zoo"
GAPS_S = (30e-6, 100e-6)
EXTRAS_S = (3e-6, 5e-6, 8e-6)
#: The bytes criterion: bytes moved since the op's kind last ran, as shares of the profile's private caches
#: (``cache_bytes``: the threads' L2s), and the extras charged (``bench_after_conv_copies``: a 16 KiB ReLU
#: paid 15-31 µs past a core's L2 at one thread, the batch norm 55-71).
CACHE_SHARES = (0.5, 1.0)
BYTE_EXTRAS_S = (5e-6, 10e-6, 20e-6)


def cold_counts(durations: list, gaps_s=GAPS_S) -> dict:
    """``{gap: ops whose previous same-name op ended at least gap earlier}`` for a step's ``(name, s)``
    ops in order (more fields are ignored), steps back to back (an op's first occurrence looks back into
    the step before; pure). :func:`cold_counts_by_bytes` counts by the bytes in between instead."""
    return _cold(durations, gaps_s, 1)


def cold_counts_by_bytes(ops: list, thresholds_bytes) -> dict:
    """``{threshold: ops whose previous same-name op was followed by at least threshold bytes read and
    written by the ops in between}`` for a step's ``(name, s, bytes)`` ops (pure)."""
    return _cold(ops, thresholds_bytes, 2)


def _cold(ops: list, thresholds, field: int) -> dict:
    starts, t = [], 0.0
    for op in ops:
        starts.append(t)
        t += op[field]
    total = t
    counts = {}
    for threshold in thresholds:
        cold = 0
        for i, op in enumerate(ops):
            before = [j for j in range(i) if ops[j][0] == op[0]]
            if before:
                j = before[-1]
                since = starts[i] - (starts[j] + ops[j][field])
            else:
                j = max(k for k in range(len(ops)) if ops[k][0] == op[0])
                since = total - (starts[j] + ops[j][field]) + starts[i]
            cold += since >= threshold
        counts[threshold] = cold
    return counts


def step_ops(profile, model_file: Path, workload: str, batch: int) -> list:
    """``(op name, predicted s, bytes read and written)`` of a zoo model's step, views and metadata ops
    left out."""
    from crossover.measurement.user_module import input_dtype
    from crossover.opcost.module_predict import costed_rows, trace_step
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.trace import op_name

    spec = importlib.util.spec_from_file_location(model_file.stem, model_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dtype = input_dtype(getattr(module, "INPUT_DTYPE", "float32"))
    table, _ = trace_step(module.model(), module.INPUT_SHAPE, batch, workload, dtype=dtype)
    rows = costed_rows(profile, table.to_dict("records") if hasattr(table, "to_dict") else list(table))
    inference = not any(r.get("phase") in ("backward", "optimizer") for r in rows)
    return [(op_name(r.get("op", "")), op_cost(profile, r, inference=inference).host_s,
             float(r.get("bytes_read") or 0) + float(r.get("bytes_written") or 0)) for r in rows
            if r.get("kind") != "view" and int(r.get("launches", 1) or 0)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path, help="the sitting's calibration profile directory")
    parser.add_argument("sitting", type=Path, help="its bench_zoo.py --csv table")
    parser.add_argument("--zoo", type=Path, default=ZOO)
    args = parser.parse_args(argv)
    import pandas as pd

    from crossover.opcost.profiles import load_profile

    warnings.simplefilter("ignore")
    profile = load_profile(args.profile)
    table = pd.read_csv(args.sitting)
    steps, rows = {}, []
    cache = profile.cache_bytes or profile.llc_bytes  # the private caches of the threads the profile ran
    for r in table.itertuples():
        key = (r.model, r.workload, int(r.batch_size))
        if key not in steps:
            ops = step_ops(profile, args.zoo / f"{r.model}.py", r.workload, int(r.batch_size))
            steps[key] = (len(ops), cold_counts(ops),
                          cold_counts_by_bytes(ops, [share * cache for share in CACHE_SHARES]))
        n_ops, cold, cold_bytes = steps[key]
        row = dict(model=r.model, workload=r.workload, ops=n_ops, now=r.predicted_s / r.measured_s - 1)
        for gap in GAPS_S:
            row[f"cold after {gap * 1e6:.0f} µs"] = cold[gap]
            for extra in EXTRAS_S:
                row[f"T {gap * 1e6:.0f} X {extra * 1e6:.0f}"] = (r.predicted_s + cold[gap] * extra) / r.measured_s - 1
        for share in CACHE_SHARES:
            n = cold_bytes[share * cache]
            row[f"cold after {share:g} cache"] = n
            for extra in BYTE_EXTRAS_S:
                row[f"B {share:g} X {extra * 1e6:.0f}"] = (r.predicted_s + n * extra) / r.measured_s - 1
        rows.append(row)
    frame = pd.DataFrame(rows)
    errors = [c for c in frame.columns if c == "now" or c.startswith("T ") or c.startswith("B ")]
    table = frame.groupby(["model", "workload"])[errors].agg(lambda s: s.abs().median()).mul(100).round(1)
    print(f"{args.sitting}: median |error| (%) per model, as predicted and with X µs per op cold after T µs")
    print(table.to_string())
    print("median over models: " + ", ".join(f"{c} {v:.1f}" for c, v in table.median().items()))
    counts = [c for c in frame.columns if c.startswith("cold") or c == "ops"]
    print(frame.groupby(["model", "workload"])[counts].median().to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
