"""How far the latency model misses sizes it never saw, measured in the same run as the rest.

    python experiments/bench_heldout.py RUN [RUN ...] [--models M1,M2] [--statistic p10]
    python experiments/bench_heldout.py --measure 2 --out /tmp/heldout   # two fresh quick runs first

Each RUN is a results directory of the quick suite (``experiments/suites/quick.toml``), whose sweep
``heldout`` holds ten odd sizes (small shallow models, deep thin ones, wide ones, batches between the
measured ones) measured in the same shuffled rounds as the rest, so the machine's drift falls on them
as on their neighbours. Each candidate model is fitted on the other rows only (as ``crossover fit``
does) and predicts the held-out sizes: the table gives, per run and model, the median and worst
|error| and the share within ±10%, then per size the error of the model cross-validation chooses.
With two or more runs it also prints the noise floor of the held-out sizes themselves: how far one
run's value of a size lies from another's once the runs' overall offset is removed. A model cannot
be checked more closely than that.

``--measure N`` first runs the quick suite N times (seeds 1..N) into ``--out``/seed<k>; run it on an
otherwise idle machine. With ``--calibrate quick`` (or ``full``) each run is preceded by a calibration
of the CPU written to ``seed<k>/calibration`` (``crossover calibrate``), which makes the ``calibrated``
model (the toy model costed op by op on it, :mod:`crossover.fit.calibrated_model`) a candidate for that run.

Each run also gets its grouped cross-validation (holding out every point of one d_model, n_layers or
batch_size value in turn) per model: MAPE per axis and the mean over axes of the interior folds' MAPE,
the score that chooses the model; then the chosen model's fitted parameters per run.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from crossover.fit.series_fit import fit_series, one_row_per_size
from crossover.fit.calibrated_model import RUN_CALIBRATION_DIR, calibration_for_rows
from crossover.fit.latency_models import default_models
from crossover.results.store import load_results
from crossover.results.statistics import DEFAULT_STATISTIC, STATISTICS
from crossover.fit.validation import check_frame, split_heldout

QUICK_SUITE = Path(__file__).resolve().parent / "suites" / "quick.toml"


def device_rows(run, device: str = "cpu") -> pd.DataFrame:
    """The run's eager forward rows of ``device`` (every sweep, ``heldout`` included)."""
    frame = load_results(run, raw=True)
    frame = frame[(frame["device"] == device) & (frame["workload"] == "forward") & (frame["mode"] == "eager")]
    if "heldout" not in set(frame["sweep"]):
        raise SystemExit(f"{run}: no 'heldout' sweep: measure it with {QUICK_SUITE}")
    return frame


def summary(errors) -> dict:
    errors = np.abs(np.asarray(errors, dtype=float))
    return dict(median_pct=100 * np.median(errors), worst_pct=100 * errors.max(),
                within_10_pct=100 * np.mean(errors <= 0.10))


def heldout_floor(runs, statistic, device: str = "cpu") -> pd.DataFrame:
    """Per pair of runs: |log(one run's held-out value / the other's)| after removing the pair's
    median offset over all shared sizes."""
    values = []
    for run in runs:
        frame = check_frame(device_rows(run, device), statistic)
        fitted, held = split_heldout(frame)
        values.append((one_row_per_size(fitted), one_row_per_size(held)))
    rows = []
    keys = ["d_model", "n_layers", "batch_size"]
    for (a, b), (i, j) in zip(itertools.combinations(values, 2), itertools.combinations(range(len(runs)), 2)):
        both = pd.concat([a[0], a[1]]).merge(pd.concat([b[0], b[1]]), on=keys)
        offset = np.median(np.log(both["latency_s_y"] / both["latency_s_x"]))
        held = a[1].merge(b[1], on=keys)
        deviation = np.abs(np.log(held["latency_s_y"] / held["latency_s_x"]) - offset)
        rows.append(dict(pair=f"{i + 1}-{j + 1}", offset_pct=100 * (np.exp(offset) - 1),
                         median_pct=100 * np.median(deviation), worst_pct=100 * deviation.max()))
    return pd.DataFrame(rows)


def residual_table(frame: pd.DataFrame, fit, statistic: str) -> pd.DataFrame:
    """Every size of ``frame`` (fitted and held out), one row each: its sweep, measured and predicted
    seconds (``fit``'s curve), the error and the measured µs per layer, by layers then width then batch."""
    fitted, held = split_heldout(check_frame(frame, statistic))
    sizes = pd.concat([one_row_per_size(fitted).assign(held_out=False), one_row_per_size(held).assign(held_out=True)])
    sizes["predicted_s"] = [float(fit.latency_s(r.d_model, r.n_layers, r.batch_size)) for r in sizes.itertuples()]
    sizes["error_pct"] = 100 * (sizes["predicted_s"] / sizes["latency_s"] - 1)
    sizes["us_per_layer"] = 1e6 * sizes["latency_s"] / sizes["n_layers"]
    columns = ["sweep", "d_model", "n_layers", "batch_size", "latency_s", "predicted_s", "error_pct", "us_per_layer",
               "held_out"]
    return sizes.sort_values(["n_layers", "d_model", "batch_size"])[columns]


def grouped_cv_lines(index: int, fit) -> list:
    """One line per candidate of ``fit``'s grouped CV: MAPE per axis, worst axis, interior score."""
    from crossover.fit.validation import selection_score

    lines = []
    for model, rows in fit.cv.groupby("model", sort=False):
        line = dict(run=index, model=model + (" *" if model == fit.model else ""))
        line.update({axis: mape for axis, mape in zip(rows["axis"], rows["mape_pct"])})
        line["within_10"] = float((rows["within_10_pct"] * rows["n_points"]).sum() / rows["n_points"].sum())
        line["interior"] = selection_score(fit.cv, model)
        lines.append(line)
    return lines


def measure(n_runs: int, out: Path, calibrate: str = "none") -> list:
    runs = []
    for seed in range(1, n_runs + 1):
        run = out / f"seed{seed}"
        if calibrate != "none" and not (run / RUN_CALIBRATION_DIR / "profile.json").is_file():
            plan = ["--quick"] if calibrate == "quick" else []
            subprocess.run([sys.executable, "-m", "crossover", "calibrate", "--device", "cpu", *plan,
                            "--out", str(run / RUN_CALIBRATION_DIR), "--seed", str(seed), "--quiet"], check=True)
        subprocess.run([sys.executable, "-m", "crossover", "sweep", str(QUICK_SUITE), "--out", str(run),
                        "--seed", str(seed), "--resume", "--quiet"], check=True)
        runs.append(run)
    return runs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", type=Path, help="results directories of the quick suite")
    parser.add_argument("--measure", type=int, default=0, metavar="N", help="first measure N quick runs")
    parser.add_argument("--out", type=Path, default=Path("/tmp/heldout"), help="where --measure writes")
    parser.add_argument("--device", default="cpu",
                        help="the series to check: cpu (default) or cuda (a paired run's GPU; its calibration "
                             "is the run's calibration/cuda or the shipped profile of that machine)")
    parser.add_argument("--models", help="comma-separated candidates (default: crossover's for the device)")
    parser.add_argument("--statistic", choices=tuple(STATISTICS), default=DEFAULT_STATISTIC)
    parser.add_argument("--residuals", action="store_true",
                        help="also print, per run, the chosen fit against every size it was fitted on and the held-out "
                             "ones: measured, predicted, error and µs per layer")
    parser.add_argument("--calibrate", choices=("none", "quick", "full"), default="none",
                        help="with --measure: calibrate the CPU before each run (the calibrated model's profile)")
    args = parser.parse_args(argv)
    runs = list(args.runs) + (measure(args.measure, args.out, args.calibrate) if args.measure else [])
    if not runs:
        parser.error("give results directories, or --measure N")
    print(f"held-out sizes predicted by fits of the other rows; statistic {args.statistic}\n")
    lines, per_size, cv_lines, params = [], [], [], []
    for index, run in enumerate(runs, 1):
        frame = device_rows(run, args.device)
        calibration = calibration_for_rows(frame)
        models = tuple(args.models.split(",")) if args.models else default_models(args.device, calibration is not None)
        print(f"run {index} ({run}): calibration {calibration.path if calibration else 'none'}")
        chosen = fit_series(frame, models, n_boot=0, statistic=args.statistic, cache=False, calibration=calibration)
        cv_lines += grouped_cv_lines(index, chosen)
        params += [dict(run=index, model=chosen.model, param=r.label, value=r.value, unit=r.unit)
                   for r in chosen.parameters().itertuples()]
        for model in models:
            fit = chosen if len(models) == 1 else fit_series(frame, [model], n_boot=0, statistic=args.statistic,
                                                              axes=(), cache=False, calibration=calibration)
            lines.append(dict(run=index, model=model + (" *" if model == chosen.model else ""),
                              **summary(fit.heldout["rel_error"])))
        held = chosen.heldout
        if args.residuals:
            print(residual_table(frame, chosen, args.statistic).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        bounds = [chosen.prediction_interval_s(r.d_model, r.n_layers, r.batch_size) for r in held.itertuples()]
        inside = [lo <= m <= hi for (lo, hi), m in zip(bounds, held["measured_s"])]
        per_size.append(held.assign(run=index, model=chosen.model, in_interval=inside,
                                    interval_width=[hi / lo for lo, hi in bounds]))
    table = pd.DataFrame(lines)
    print("per run and model (* = chosen by grouped cross-validation: the lowest mean MAPE on interior folds):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    sizes = pd.concat(per_size, ignore_index=True)
    sizes["error_pct"] = 100 * sizes["rel_error"]
    print("\nper held-out size, the chosen model:")
    print(sizes[["run", "model", "d_model", "n_layers", "batch_size", "measured_s", "predicted_s", "error_pct",
                 "in_interval"]]
          .to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for index in sorted(sizes["run"].unique()):
        s = summary(sizes.loc[sizes["run"] == index, "rel_error"])
        run = sizes[sizes["run"] == index]
        print(f"run {index}, chosen model: median {s['median_pct']:.1f}%, worst {s['worst_pct']:.1f}%, "
              f"{s['within_10_pct']:.0f}% within ±10%; {100 * run['in_interval'].mean():.0f}% inside the "
              f"{100 * chosen.level:.0f}% prediction interval (median width ×{run['interval_width'].median():.2f})")
    print("\ngrouped cross-validation per run and model: MAPE % per held-out axis; interior = mean over axes "
          "of the interior folds' MAPE (* = chosen)")
    print(pd.DataFrame(cv_lines).to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print("\nthe chosen model's fitted parameters per run:")
    print(pd.DataFrame(params).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if len(runs) > 1:
        floor = heldout_floor(runs, args.statistic, args.device)
        print("\nnoise floor of the held-out sizes between runs (after the runs' overall offset):")
        print(floor.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
