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

With ``--intervals``, one line per calibration instead: the reference steps' |error| (a fitted kind's
leave-one-out error, a held-out kind's as it is) at the interval's coverage over the forward steps and
over the training steps, the held-out kinds' median, the half-widths the profile gives a forward pass
and a training step, and the fitted terms; then the median of each column. Run with ``PYTHONPATH`` at
another checkout, it compares two compositions on the same measurements.

    python experiments/composition_gaps.py /tmp/sittings/zoo_t1 /tmp/sittings/zoo_unseen_t1 ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def rebuilt(directory: Path):
    """The profile of the calibration in ``directory`` rebuilt with this code (nothing written)."""
    import crossover.opcost.calibrate as calibrate

    meta = json.loads((directory / "profile.json").read_text())
    return calibrate.build_profile(calibrate.read_calibration(directory), device=meta["device"],
                                   machine=meta.get("machine", "m"), threads=meta.get("threads", 0),
                                   llc=meta.get("llc_bytes", 32 * 2**20), cache_bytes=meta.get("cache_bytes", 0))


#: The columns of ``--intervals``.
INTERVAL_COLUMNS = ("forward q", "train q", "held-out median", "forward interval", "train interval")


def interval_summary(profile) -> dict:
    """The :data:`INTERVAL_COLUMNS` of one rebuilt profile (pure)."""
    from crossover.opcost.composition import INTERVAL_COVERAGE

    refs = profile.meta["reference_models"]

    def error(r):
        return abs(r["error"] if r.get("held_out") else r.get("leave_one_out_error", r["error"]))

    forward = [error(r) for r in refs if r["workload"] == "forward"]
    train = [error(r) for r in refs if r["workload"] != "forward"]
    held = [abs(r["error"]) for r in refs if r.get("held_out")]
    # a checkout from before the split interval has no interval_for: one width for both
    interval_for = getattr(profile, "interval_for", lambda train: profile.interval_rel or profile.model_error_rel)
    return {"forward q": float(np.quantile(forward, INTERVAL_COVERAGE)),
            "train q": float(np.quantile(train, INTERVAL_COVERAGE)),
            "held-out median": float(np.median(held)) if held else float("nan"),
            "forward interval": interval_for(False), "train interval": interval_for(True)}


def print_intervals(dirs) -> None:
    """``--intervals``: a line per calibration, then the medians."""
    from crossover.opcost.composition import INTERVAL_COVERAGE

    print(f"quantile {INTERVAL_COVERAGE:.0%}; " + ", ".join(INTERVAL_COLUMNS) + "; terms")
    rows = []
    for folder in dirs:
        profile = rebuilt(folder)
        line = interval_summary(profile)
        rows.append([line[c] for c in INTERVAL_COLUMNS])
        terms = ", ".join(f"{k} {v:.3g}" for k, v in profile.meta["composition_fit"].items())
        print(f"{str(folder):28s} " + "  ".join(f"{line[c]:6.1%}" for c in INTERVAL_COLUMNS) + f"   {terms}",
              flush=True)
    print(f"{'median of ' + str(len(rows)):28s} " + "  ".join(f"{v:6.1%}" for v in np.median(rows, axis=0)))


def reference_gaps(directory: Path) -> list:
    """One dict per reference step of the calibration in ``directory``, the profile rebuilt with this
    code: ``model``, ``workload``, ``batch_size``, ``threads``, ``measured_s``, ``bare_s``, the composition's
    features (:data:`crossover.opcost.composition.FEATURES`) and ``param_kib``."""
    from crossover.opcost.reference_models import reference_model

    profile = rebuilt(directory)
    out = []
    for line in profile.meta.get("reference_models", []):
        model = reference_model(line["model"])
        kib = sum(p.numel() * p.element_size() for p in model.parameters()) / 1024
        out.append(dict(model=line["model"], workload=line["workload"], batch_size=line["batch_size"],
                        threads=profile.threads, measured_s=line["measured_s"], bare_s=line["uncorrected_s"],
                        **line["features"], param_kib=kib, norm_layers=float(norm_layers(model))))
    return out


def norm_layers(model) -> int:
    """The normalisation layers (``LayerNorm``, ``BatchNorm*``, ``GroupNorm``, ``InstanceNorm*``) of ``model``:
    the kinds whose steps pay about three times the others' gap a host event (``composition_gaps_1130_t1.log``)."""
    from torch import nn

    kinds = (nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)
    return sum(isinstance(m, kinds) for m in model.modules())


#: Feature sets of the leave-one-kind-out comparison: the composition's, a constant per training step in place
#: of the autograd scale, one term for a training step's autograd work and backward kernels together, no
#: training term, and the composition's with a price per normalisation layer (:func:`norm_layers`: fitted
#: where the batch-norm CNN is among the kinds fitted, it prices the normalised MLP's layer norm unseen).
FEATURE_SETS = {"current": ("autograd_s", "host_events", "conv_forward_s", "backward_kernels_s"),
                "per-step": ("train_step", "host_events", "conv_forward_s", "backward_kernels_s"),
                "one-train": ("train_total_s", "host_events", "conv_forward_s"),
                "events+conv": ("host_events", "conv_forward_s"),
                "norm-layers": ("autograd_s", "host_events", "conv_forward_s", "backward_kernels_s", "norm_layers")}


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
    parser.add_argument("--intervals", action="store_true",
                        help="a line per calibration: the reference steps' errors at the interval's coverage, "
                             "forward and training steps apart, and the profile's intervals")
    args = parser.parse_args(argv)

    import pandas as pd

    missing = [d for d in args.dirs if not (d / "calibration.csv.gz").exists()]
    if missing:
        parser.error(f"no calibration.csv.gz in {', '.join(map(str, missing))}")
    if args.intervals:
        print_intervals(args.dirs)
        return 0
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
