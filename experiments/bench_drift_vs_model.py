"""How much of a fit's error is drift between the blocks of a run, and how much is the model.

    python experiments/bench_drift_vs_model.py [--results experiments/results] [--statistic median]

Results measured before the paired protocol (schema 1, the shipped H100 run) measured one sweep after
another: a sweep's points share the machine's state of those minutes, another sweep's points another
state. For each baseline series (Vm, Host, Cuda of :mod:`crossover.analysis.reference_study`) this fits the model that
cross-validation chooses twice: as is, and with a free multiplicative offset per sweep (the first
sweep's fixed at 1; sizes measured by several sweeps, such as the anchor, tie them together). The
drop of the median |residual| from the first to the second is what per-sweep drift explains; what
is left is the model's misfit (and the noise within a sweep). It then refits the Host and Cuda
series with the offsets, sets every point on the batch sweep's level, and finds the crossover along
the batch size at d_model=128, n_layers=128 with a bootstrap of the residuals, beside the one the
plain fits give and the crossing of the measured points.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
from scipy import optimize

from crossover.analysis.crossovers import curve_crossings, empirical_crossover
from crossover.fit.series_fit import fit_series, one_row_per_size
from crossover.fit.latency_models import PARAMS, evaluate, model_parameters
from crossover.results.store import load_results
from crossover.analysis.reference_study import assign_roles, baseline_rows, main_runs
from crossover.fit.validation import check_frame, frame_features

ANCHOR = dict(d_model=128, n_layers=128)
BATCHES = np.geomspace(1, 4096, 400)


def rows_by_sweep(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (sweep, size): a size measured by two sweeps stays twice, once per sweep."""
    return pd.concat([one_row_per_size(g) for _, g in frame.groupby("sweep", sort=True)], ignore_index=True)


def fit_with_offsets(model: str, frame: pd.DataFrame, theta0):
    """Parameters of ``model`` and one log-offset per sweep (the first 0) fitted together."""
    sweeps = sorted(frame["sweep"].unique())
    group = frame["sweep"].map({s: i for i, s in enumerate(sweeps)}).to_numpy()
    X, log_t = frame_features(frame), np.log(frame["latency_s"].to_numpy())
    names = model_parameters(model)
    lo = np.r_[np.log([PARAMS[n].lo for n in names]), -np.ones(len(sweeps) - 1)]
    hi = np.r_[np.log([PARAMS[n].hi for n in names]), np.ones(len(sweeps) - 1)]

    def residuals(z):
        offsets = np.r_[0.0, z[len(names):]]
        return np.log(evaluate(model, np.exp(z[:len(names)]), X)) + offsets[group] - log_t

    x0 = np.clip(np.r_[np.log(theta0), np.zeros(len(sweeps) - 1)], lo + 1e-6, hi - 1e-6)
    result = optimize.least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, max_nfev=4000)
    offsets = dict(zip(sweeps, np.exp(np.r_[0.0, result.x[len(names):]])))
    return np.exp(result.x[:len(names)]), offsets, residuals(result.x)


def crossing(cpu_s: np.ndarray, gpu_s: np.ndarray) -> float:
    """The first batch where the two curves over :data:`BATCHES` cross (NaN if they never do)."""
    roots = curve_crossings(pd.Series(cpu_s, index=BATCHES), pd.Series(gpu_s, index=BATCHES))
    return roots[0] if roots else np.nan


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default="experiments/results")
    parser.add_argument("--statistic", default="median", help="each point's latency (default: the paper's median)")
    parser.add_argument("--n-boot", type=int, default=100)
    args = parser.parse_args(argv)
    frame = baseline_rows(main_runs(load_results(args.results, raw=True)))
    roles = assign_roles(frame)
    print(f"statistic {args.statistic}; per series: model chosen by grouped CV, median |residual| as is and "
          "with one offset per sweep\n")
    table, refits = [], {}
    for role, (machine, device) in sorted(roles.items()):
        rows = check_frame(frame[(frame["machine"] == machine) & (frame["device"] == device)], args.statistic)
        fit = fit_series(rows, n_boot=0, statistic=args.statistic)
        by_sweep = rows_by_sweep(rows)
        plain = np.log(by_sweep["latency_s"] / fit.latency_s(by_sweep["d_model"], by_sweep["n_layers"],
                                                              by_sweep["batch_size"]))
        theta, offsets, res = fit_with_offsets(fit.model, by_sweep, fit.params)
        refits[role] = (fit, theta, offsets, by_sweep, res)
        plain_pct, offset_pct = 100 * np.median(np.abs(plain)), 100 * np.median(np.abs(res))
        table.append(dict(role=role, series=f"{machine}/{device}", model=fit.model, points=len(by_sweep),
                          sweeps=len(offsets), cv_mape_pct=fit.cv_score(),
                          cv_interior_pct=float(fit.cv.loc[fit.cv["model"] == fit.model, "interior_mape_pct"].mean()),
                          cv_within_10_pct=float(fit.cv.loc[fit.cv["model"] == fit.model, "within_10_pct"].mean()),
                          residual_pct=plain_pct,
                          with_offsets_pct=offset_pct, drift_share_pct=100 * (1 - offset_pct / plain_pct),
                          offsets=" ".join(f"{s}={o:.2f}" for s, o in offsets.items())))
    print(pd.DataFrame(table).to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    if not {"Host", "Cuda"} <= set(refits):
        return 0
    rng = np.random.default_rng(0)
    curves = {}
    for role in ("Host", "Cuda"):
        fit, theta, offsets, by_sweep, res = refits[role]
        level = offsets.get("batch_size", 1.0)
        d, L = np.full_like(BATCHES, ANCHOR["d_model"]), np.full_like(BATCHES, ANCHOR["n_layers"])
        X = frame_features(pd.DataFrame(dict(d_model=d, n_layers=L, batch_size=BATCHES,
                                             workload=by_sweep["workload"].iloc[0], dtype=by_sweep["dtype"].iloc[0])))
        draws = []
        centred = res - np.median(res)
        fitted_t = by_sweep["latency_s"].to_numpy() * np.exp(-res)
        for _ in range(args.n_boot):
            resampled = by_sweep.assign(latency_s=fitted_t * np.exp(rng.choice(centred, len(centred))))
            t2, o2, _ = fit_with_offsets(fit.model, resampled, theta)
            draws.append(evaluate(fit.model, t2, X) / o2.get("batch_size", 1.0))
        curves[role] = (evaluate(fit.model, theta, X) / level, np.array(draws),
                        fit.latency_s(d, L, BATCHES))
    at = crossing(curves["Host"][0], curves["Cuda"][0])
    boot = np.array([crossing(c, g) for c, g in zip(curves["Host"][1], curves["Cuda"][1])])
    plain = crossing(curves["Host"][2], curves["Cuda"][2])
    low, high = np.nanpercentile(boot, [2.5, 97.5])
    host_rows, cuda_rows = refits["Host"][3], refits["Cuda"][3]
    measured = empirical_crossover(host_rows, cuda_rows, "batch_size", column="latency_s", **ANCHOR)
    print(f"\ncrossover along batch at d_model=128, n_layers=128 (Host CPU vs its GPU, eager):")
    print(f"  plain fits (no offsets):           {plain:.0f}")
    print(f"  fits with per-sweep offsets:       {at:.0f} [{low:.0f}, {high:.0f}] (95% bootstrap, "
          f"{np.mean(np.isnan(boot)):.0%} of resamples never cross)")
    print(f"  measured points cross at:          {', '.join(f'{m:.0f}' for m in measured) or 'nowhere'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
