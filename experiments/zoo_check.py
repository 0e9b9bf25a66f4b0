"""Shipped zoo measurements against predictions from shipped profiles: the own-model check away from
this machine (no measuring; seconds on any laptop).

    python experiments/zoo_check.py ZOO_DIR --profiles CPU_PROFILE GPU_PROFILE [--markdown]

``ZOO_DIR`` holds ``measure-<model>-<workload>-<device>.json`` files (``crossover measure --model
--json``, as ``experiments/gpu_zoo.py`` writes them); every model is traced and predicted with
``crossover.decide`` on the profiles at the measured batch sizes. Prints, per model and device, the
median and worst |error| (latency = the 10th percentile of the pooled repeats on both sides) against the
GPU issue's target (median ≤ 10%, worst ≤ 25%), then per model with both devices measured the measured
and predicted crossover batch (log-interpolated between batch sizes; within ×1.5 holds) and the winner
at every point whose devices differ by more than 10%. Example, the H200's second run:

    python experiments/zoo_check.py experiments/results/nvidia-h200-16c/run2/zoo \\
        --profiles experiments/profiles/nvidia-h200-16c/cpu experiments/profiles/nvidia-h200-16c/cuda
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import pandas as pd

ZOO = Path(__file__).resolve().parent / "zoo"
TARGET_MEDIAN, TARGET_WORST = 0.10, 0.25


def read_measurements(folder: Path) -> pd.DataFrame:
    """One row per measured point: model, workload, device, batch_size, measured_s."""
    rows = []
    for path in sorted(folder.glob("measure-*.json")):
        data = json.loads(path.read_text())
        name = Path(str(data["model"]).split(":")[0]).stem
        for point in data["points"]:
            rows.append(dict(model=name, workload=data["workload"], device=data["device"],
                             batch_size=int(point["batch_size"]), measured_s=float(point["latency_s"]),
                             input_shape=tuple(data["input_shape"])))
    return pd.DataFrame(rows)


def predictions(measured: pd.DataFrame, profiles) -> pd.DataFrame:
    """``measured`` with ``predicted_s`` from each profile of the point's device."""
    import crossover
    from crossover.opcost.profiles import load_profile

    from gpu_zoo import zoo_entries  # beside this script: the zoo's shapes and input dtypes, read once

    dtypes = {name: dtype for name, _, _, dtype in zoo_entries()}
    devices = {load_profile(p).device: str(p) for p in profiles}
    out = []
    for (name, workload), group in measured.groupby(["model", "workload"], sort=False):
        batches = sorted(set(group["batch_size"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            decision = crossover.decide(model=f"{ZOO / name}.py:model", input_shape=group["input_shape"].iloc[0],
                                        batch_size=batches, workload=workload,
                                        profiles=[devices[d] for d in sorted(set(group["device"])) if d in devices],
                                        input_dtype=dtypes[name])
        guess = {(d["device"], d["batch_size"]): d["latency_s"] for d in decision.devices}
        out.append(group.assign(predicted_s=[guess.get((d, b)) for d, b in zip(group["device"], group["batch_size"])]))
    return pd.concat(out, ignore_index=True)


def main(argv=None) -> int:
    from crossover.analysis.zoo_check import crossover_table, error_table

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("zoo", type=Path, help="folder of measure-*.json files")
    parser.add_argument("--profiles", nargs="+", required=True, help="profile folders (one per device)")
    args = parser.parse_args(argv)
    measured = read_measurements(args.zoo)
    if measured.empty:
        parser.error(f"no measure-*.json in {args.zoo}")
    frame = predictions(measured, args.profiles)
    errors = error_table(frame)
    print(f"{args.zoo}: predicted from {', '.join(map(str, args.profiles))}\n")
    print("| model | workload | device | points | median error | worst error | bias | target |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in errors.itertuples():
        ok = row.median_error <= TARGET_MEDIAN and row.worst_error <= TARGET_WORST
        print(f"| {row.model} | {row.workload} | {row.device} | {row.points} | {100 * row.median_error:.1f}% | "
              f"{100 * row.worst_error:.1f}% | {100 * row.bias:+.1f}% | {'met' if ok else 'missed'} |")
    crossings = crossover_table(frame)
    if not crossings.empty:
        print("\n| model | workload | measured crossover | predicted | holds (x1.5) | winner right |")
        print("| --- | --- | --- | --- | --- | --- |")
        text = lambda x, first: f"{x:.0f}" if x is not None and x == x else f"none ({first} faster)"  # noqa: E731
        for row in crossings.itertuples():
            print(f"| {row.model} | {row.workload} | {text(row.measured_crossover, row.measured_first)} | "
                  f"{text(row.predicted_crossover, row.predicted_first)} | {'yes' if row.holds else 'no'} | "
                  f"{row.winner_right} of {row.decided_points} |")
    detail = frame.assign(error_pct=100 * (frame["predicted_s"] / frame["measured_s"] - 1))
    print("\n" + detail[["model", "workload", "device", "batch_size", "measured_s", "predicted_s", "error_pct"]]
          .to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
