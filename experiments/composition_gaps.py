"""What the calibration's reference steps take beyond their primitives, beside the features the composition
terms scale (the evidence behind "no per-op term fits the reference kinds' training steps", #27).

For each calibration directory (``DIR/calibration.csv.gz``, as ``crossover calibrate`` or
``experiments/bench_zoo.py --out`` write it) the profile is rebuilt with this code, and every reference
step (:data:`crossover.opcost.reference_models.REFERENCE_MODELS`) is listed with its measured time, the
sum the primitives cost it at (``bare``: no composition term), the gap between them, and the features
:mod:`crossover.opcost.composition` fits its terms on (a training step's autograd and optimizer host
work as the primitives cost it, host events, forward convolutions' and backward kernels' time beyond
their floors), with its parameters' KiB. Several directories of one thread count: the median of each
over them, and the quartiles of the gap.

With ``--leave-one-kind-out``, each reference kind is then predicted by terms fitted (non-negative least
squares of the relative gaps, as :mod:`crossover.opcost.composition` fits them) on the other three kinds
of its calibration, with the composition's features (``current``), with the training step's autograd
scale replaced by a constant per training step (``per-step``), with one term scaling a training step's
autograd work and backward kernels together (``one-train``), and with no training term (``events+conv``):
the error a kind the terms never saw would read, the median over the calibrations.

    python experiments/composition_gaps.py /tmp/sittings/zoo_t1 /tmp/sittings/zoo_unseen_t1 ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def reference_gaps(directory: Path) -> list:
    """One dict per reference step of the calibration in ``directory``, the profile rebuilt with this
    code: ``model``, ``workload``, ``batch_size``, ``threads``, ``measured_s``, ``bare_s``, the composition's
    features (:data:`crossover.opcost.composition.FEATURES`) and ``param_kib``."""
    import crossover.opcost.calibrate as calibrate
    from crossover.opcost.reference_models import reference_model

    meta = json.loads((directory / "profile.json").read_text())
    profile = calibrate.build_profile(calibrate.read_calibration(directory), device=meta["device"],
                                      machine=meta.get("machine", "m"), threads=meta.get("threads", 0),
                                      llc=meta.get("llc_bytes", 32 * 2**20), cache_bytes=meta.get("cache_bytes", 0))
    out = []
    for line in profile.meta.get("reference_models", []):
        kib = sum(p.numel() * p.element_size() for p in reference_model(line["model"]).parameters()) / 1024
        out.append(dict(model=line["model"], workload=line["workload"], batch_size=line["batch_size"],
                        threads=profile.threads, measured_s=line["measured_s"], bare_s=line["uncorrected_s"],
                        **line["features"], param_kib=kib))
    return out


#: Feature sets of the leave-one-kind-out comparison: the composition's, a constant per training step in place
#: of the autograd scale, one term for a training step's autograd work and backward kernels together, and
#: no training term.
FEATURE_SETS = {"current": ("autograd_s", "host_events", "conv_forward_s", "backward_kernels_s"),
                "per-step": ("train_step", "host_events", "conv_forward_s", "backward_kernels_s"),
                "one-train": ("train_total_s", "host_events", "conv_forward_s"),
                "events+conv": ("host_events", "conv_forward_s")}


def leave_one_kind_out(rows, features) -> dict:
    """``{(model, workload, batch_size): median relative error}`` of each reference step predicted by the
    terms fitted on the other kinds of its calibration (``rows``: :func:`reference_gaps` rows with
    ``calibration`` and ``train_step`` columns)."""
    from scipy.optimize import nnls

    errors = {}
    for _, calibration in rows.groupby("calibration"):
        for kind in calibration.model.unique():
            fit = calibration[calibration.model != kind]
            design = fit[list(features)].to_numpy() / fit.measured_s.to_numpy()[:, None]
            coef = nnls(design, ((fit.measured_s - fit.bare_s) / fit.measured_s).to_numpy())[0]
            held = calibration[calibration.model == kind]
            predicted = held.bare_s.to_numpy() + held[list(features)].to_numpy() @ coef
            for (_, row), p in zip(held.iterrows(), predicted):
                errors.setdefault((row.model, row.workload, row.batch_size), []).append(p / row.measured_s - 1)
    return {key: float(np.median(values)) for key, values in errors.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="calibration directories (calibration.csv.gz, profile.json)")
    parser.add_argument("--leave-one-kind-out", action="store_true",
                        help="also predict each kind from terms fitted on the others (two feature sets)")
    args = parser.parse_args(argv)

    import pandas as pd

    missing = [d for d in args.dirs if not (d / "calibration.csv.gz").exists()]
    if missing:
        parser.error(f"no calibration.csv.gz in {', '.join(map(str, missing))}")
    rows = pd.DataFrame([dict(row, calibration=str(d)) for d in args.dirs for row in reference_gaps(d)])
    rows["gap_s"] = rows.measured_s - rows.bare_s
    us = 1e6
    print(f"{len(args.dirs)} calibrations; medians over them (gap: its quartiles); µs")
    print(f"{'threads':>7s} {'model':9s} {'workload':8s} {'batch':>5s} {'measured':>9s} {'bare':>8s} {'gap':>7s} "
          f"{'[q1, q3]':>15s} {'autograd':>9s} {'events':>6s} {'backward':>9s} {'conv':>7s} {'KiB':>6s}")
    for key, group in rows.groupby(["threads", "model", "workload", "batch_size"]):
        med = group.median(numeric_only=True)
        q1, q3 = np.percentile(group.gap_s, [25, 75]) * us
        print(f"{key[0]:7d} {key[1]:9s} {key[2]:8s} {key[3]:5d} {med.measured_s * us:9.1f} {med.bare_s * us:8.1f} "
              f"{med.gap_s * us:7.1f} [{q1:6.1f}, {q3:6.1f}] {med.autograd_s * us:9.1f} {med.host_events:6.0f} "
              f"{med.backward_kernels_s * us:9.1f} {med.conv_forward_s * us:7.1f} {med.param_kib:6.0f}")
    if args.leave_one_kind_out:
        rows["train_step"] = (rows.workload == "train").astype(float)
        rows["train_total_s"] = rows.autograd_s + rows.backward_kernels_s  # one term for the training step's extras
        print("\neach kind predicted by terms fitted on the other kinds of its calibration: median error")
        results = {name: leave_one_kind_out(rows, features) for name, features in FEATURE_SETS.items()}
        print(f"{'threads':>7s} {'model':9s} {'workload':8s} {'batch':>5s} " + " ".join(f"{n:>9s}" for n in results))
        for key, group in rows.groupby(["threads", "model", "workload", "batch_size"]):
            print(f"{key[0]:7d} {key[1]:9s} {key[2]:8s} {key[3]:5d} "
                  + " ".join(f"{results[n][key[1:]]:+9.1%}" for n in results))
        for name, errors in results.items():
            values = np.abs(list(errors.values()))
            print(f"{name}: |error| median {np.median(values):.1%}, 80th percentile {np.quantile(values, 0.8):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
