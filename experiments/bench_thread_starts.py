"""The OpenMP threads each zoo step starts a step, counted on this machine at a shipped zoo's thread count,
beside what that zoo measured on its own host: its latency, the profile's prediction without the starts,
and the fresh pages the step faulted there.

    python experiments/bench_thread_starts.py experiments/results/nvidia-h100-80gb-hbm3-16c/run5/zoo \\
        --profile experiments/results/nvidia-h100-80gb-hbm3-16c/run5/gpu-paired/calibration/cpu

Each CPU ``measure-*.json`` of the folder is predicted from ``--profile`` with its price of a thread start
set to nothing (``crossover.decide``, as ``experiments/zoo_check.py`` does, on a copy of the profile) and
its step run at the file's thread count here to count the threads it starts
(:func:`crossover.opcost.thread_starts.module_thread_starts`). Where it starts some, the host's miss per
start, ``(measured - predicted) / starts``, is printed: what a start cost there if the starts are the
miss. The count is this machine's libraries' (torch, MKL, oneDNN); a host's may size its teams otherwise,
which its faulted pages (a started thread's stack faults in afresh) can show. Counting runs the steps
oversubscribed on a small machine: it times nothing, but run it with nothing else timing.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np


def faulted_kib(folder: Path) -> dict:
    """``{(model, workload, batch): KiB faulted a step}`` of the CPU files of ``folder``."""
    out = {}
    for path in sorted(folder.glob("measure-*-cpu.json")):
        data = json.loads(path.read_text())
        name = Path(str(data["model"]).split(":")[0]).stem
        for p in data["points"]:
            out[(name, data["workload"], int(p["batch_size"]))] = float(p.get("faulted_bytes") or 0.0) / 1024
    return out


def without_starts(profile_dir) -> str:
    """A copy of the profile (in a temporary folder) that prices no thread start, measured or fitted."""
    import dataclasses
    import tempfile

    from crossover.opcost.profiles import load_profile, write_profile

    profile = load_profile(profile_dir)
    unpriced = dataclasses.replace(profile, overheads=dict(profile.overheads, thread_start_s=0.0, thread_starts_pair=0.0))
    out = tempfile.mkdtemp(prefix="unpriced_profile_")
    write_profile(out, unpriced)
    return out


def main(argv=None) -> int:
    from crossover.analysis.zoo_runs import _input_dtype, predict_measurements, read_measurements, zoo_models_dir
    from crossover.measurement.user_module import input_dtype as dtype_named
    from crossover.measurement.user_module import load_factory
    from crossover.opcost.thread_starts import module_thread_starts

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("zoo", type=Path, help="a folder of measure-*.json files")
    parser.add_argument("--profile", required=True, help="the CPU profile of the zoo's visit")
    parser.add_argument("--models", help="comma-separated model names (default: every CPU one)")
    args = parser.parse_args(argv)
    measured = read_measurements(args.zoo)
    measured = measured[measured["device"] == "cpu"]
    if args.models:
        measured = measured[measured["model"].isin(args.models.split(","))]
    if measured.empty:
        print(f"no CPU measurements in {args.zoo}", file=sys.stderr)
        return 2
    frame = predict_measurements(measured, [without_starts(args.profile)])
    faults = faulted_kib(args.zoo)
    print(f"{args.zoo}: predicted from {args.profile}; threads counted here", flush=True)
    print(f"{'model':18s} {'workload':8s} {'batch':>5s} {'threads':>7s} {'measured µs':>11s} {'predicted µs':>12s} "
          f"{'faulted KiB':>11s} {'starts':>6s} {'µs a start':>10s}")
    per_start, faulted_with, faulted_without = [], [], []
    for row in frame.itertuples():
        model_file = zoo_models_dir() / f"{row.model}.py"
        factory, dtype = load_factory(f"{model_file}:model"), dtype_named(_input_dtype(model_file))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            starts = module_thread_starts(factory(), row.input_shape, row.batch_size, row.workload,
                                          int(row.threads or 1), dtype) or 0.0
        kib = faults.get((row.model, row.workload, row.batch_size), 0.0)
        cost = (row.measured_s - row.predicted_s) / starts * 1e6 if starts else float("nan")
        if starts:
            per_start.append(cost)
        (faulted_with if starts else faulted_without).append(kib)
        print(f"{row.model:18s} {row.workload:8s} {row.batch_size:5d} {int(row.threads or 1):7d} "
              f"{row.measured_s * 1e6:11.0f} {row.predicted_s * 1e6:12.0f} {kib:11.0f} {starts:6.1f} "
              f"{cost:10.1f}", flush=True)
    if per_start:
        print(f"steps that start threads: {len(per_start)}; the host's miss per start: median "
              f"{np.median(per_start):.1f} µs, range {min(per_start):.1f} to {max(per_start):.1f}")
    print(f"faulted KiB a step on the host: median {np.median(faulted_with or [0]):.0f} where threads start "
          f"here ({len(faulted_with)} steps), {np.median(faulted_without or [0]):.0f} where none start "
          f"({len(faulted_without)}); over 16 KiB among the latter: "
          f"{sum(k > 16 for k in faulted_without)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
