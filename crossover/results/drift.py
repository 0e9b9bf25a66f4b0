"""The drift of a run: its reference readings over time, as a table (the plot is
:func:`crossover.plots.checks.drift_plot`).

A suite measures a drift reference per device (the anchor size) at the start of every round and
every few points (see :func:`crossover.measurement.sweep.plan_rounds`); nothing about that point changes within
a run but the machine. Its readings, divided by the run's quiet level (their 10th percentile), show
when the machine was slow and by how much: the rows measured then are flagged ``drifted``
(:func:`crossover.results.statistics.attach_references`) and can be left out of fits (``--drop-drifted``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .columns import REFERENCE_SWEEP
from .statistics import is_drifted, quiet_level

__all__ = ["drift_table", "drift_summary", "run_levels", "mixed_speed_warnings", "MIXED_SPEED_PCT"]

#: How far (%) one run of a series may sit from its largest run, on the sizes both measured, before a
#: fit of both is said to mix two speeds: past this machine's run-to-run noise floor (worst 12%).
MIXED_SPEED_PCT = 15.0
_SIZE = ["d_model", "n_layers", "batch_size"]


def drift_table(rounds: pd.DataFrame) -> pd.DataFrame:
    """The reference readings of every run, in measuring order.

    Parameters
    ----------
    rounds : DataFrame
        Per-round rows including the references: ``load_results(..., combine_rounds=False,
        include_reference=True)``.

    Returns
    -------
    DataFrame
        One row per reference reading: ``run`` (``machine/device`` and the results directory's name),
        ``results_dir``, ``machine``, ``device``, ``round``, ``sequence``, ``elapsed_min`` (since the
        run's first row), ``reference_s`` and ``drift`` (the reading over the run's quiet level).
    """
    refs = rounds[(rounds["sweep"] == REFERENCE_SWEEP) & (rounds["status"] == "ok")]
    columns = ["run", "results_dir", "machine", "device", "round", "sequence", "elapsed_min", "reference_s", "drift"]
    if refs.empty:
        return pd.DataFrame(columns=columns)
    starts = pd.to_datetime(rounds["timestamp_utc"]).groupby(rounds["results_dir"]).min()
    out = []
    for (results_dir, machine, device), group in refs.groupby(["results_dir", "machine", "device"], sort=True):
        group = group.sort_values(["timestamp_utc", "sequence"])
        quiet = quiet_level(group["median_s"])
        elapsed = (pd.to_datetime(group["timestamp_utc"]) - starts[results_dir]).dt.total_seconds() / 60
        name = f"{machine}/{device} ({str(results_dir).rstrip('/').split('/')[-1]})"
        out.append(pd.DataFrame({"run": name, "results_dir": results_dir, "machine": machine, "device": device,
                                 "round": group["round"].to_numpy(), "sequence": group["sequence"].to_numpy(),
                                 "elapsed_min": elapsed.to_numpy(), "reference_s": group["median_s"].to_numpy(),
                                 "drift": (group["median_s"] / quiet).to_numpy()}))
    return pd.concat(out, ignore_index=True)[columns]


def drift_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per run: readings, quiet level, median and worst drift, and the share above :data:`DRIFT_LIMIT`."""
    rows = []
    for run, group in table.groupby("run", sort=True):
        rows.append(dict(run=run, readings=len(group), quiet_s=quiet_level(group["reference_s"]),
                         median_drift=float(group["drift"].median()), worst_drift=float(group["drift"].max()),
                         drifted_fraction=float(is_drifted(group["drift"]).mean())))
    return pd.DataFrame(rows)


def run_levels(frame: pd.DataFrame, value: str = "median_s") -> pd.DataFrame:
    """How fast each run of a series measured the sizes it shares with the series' largest run.

    A fit pools the rows of every results directory loaded; a series whose runs were measured on
    different hosts of the same machine kind, or on one host at two speeds, is then one curve fitted
    through two.

    Parameters
    ----------
    frame : DataFrame
        Result rows (``load_results``), with ``results_dir``, the series keys, the sizes and ``value``.
    value : str
        The column compared (seconds per step).

    Returns
    -------
    DataFrame
        One row per run of every series measured in two or more results directories: the series keys,
        ``results_dir``, ``reference`` (the series' largest run), ``n_sizes``, ``n_shared`` (sizes also
        in the largest run) and ``ratio`` (the median over shared sizes of this run's value over the
        largest run's; NaN with none shared).
    """
    from .columns import SERIES_KEYS

    keys = [k for k in SERIES_KEYS if k in frame.columns]
    columns = keys + ["results_dir", "reference", "n_sizes", "n_shared", "ratio"]
    if frame.empty or "results_dir" not in frame.columns:
        return pd.DataFrame(columns=columns)
    ok = frame[frame["status"] == "ok"] if "status" in frame.columns else frame
    out = []
    for series, group in ok.groupby(keys, dropna=False, sort=True):
        runs = {run: rows.groupby(_SIZE)[value].median() for run, rows in group.groupby("results_dir", sort=True)}
        if len(runs) < 2:
            continue
        largest = max(runs, key=lambda run: (len(runs[run]), str(run)))
        for run, values in runs.items():
            shared = values.index.intersection(runs[largest].index)
            ratio = float(np.exp(np.median(np.log(values[shared] / runs[largest][shared])))) if len(shared) else np.nan
            out.append(dict(zip(keys, series), results_dir=run, reference=largest, n_sizes=len(values),
                            n_shared=len(shared), ratio=ratio))
    return pd.DataFrame(out, columns=columns)


def mixed_speed_warnings(frame: pd.DataFrame, tolerance_pct: float = MIXED_SPEED_PCT) -> list:
    """One sentence per series whose runs (:func:`run_levels`) measured the sizes they share more than
    ``tolerance_pct`` apart: fitting them together mixes two speeds; and one per fleet node whose anchor
    lay that far from its kind's level (column ``anchor_scale``, :mod:`crossover.results.anchors`):
    its rows were scaled onto the kind's level, which a fit cannot tell from a slower machine."""
    lines = _scaled_node_warnings(frame, tolerance_pct)
    levels = run_levels(frame)
    apart = levels[np.abs(np.log(levels["ratio"].astype(float))) > np.log1p(tolerance_pct / 100)]
    keys = [k for k in levels.columns if k not in ("results_dir", "reference", "n_sizes", "n_shared", "ratio")]
    for _, rows in apart.groupby(keys, dropna=False, sort=True):
        first = rows.iloc[0]
        parts = [f"{_name(r.results_dir)} at {r.ratio:.2f}x the time of {_name(r.reference)} on the {r.n_shared} "
                 "sizes both measured" for r in rows.itertuples()]
        lines.append(f"{first['machine']}/{first['device']} pools runs measured at different speeds "
                     f"({'; '.join(parts)}): one curve fitted through both; fit one run alone (--results DIR) "
                     "to compare them")
    return lines


def _scaled_node_warnings(frame: pd.DataFrame, tolerance_pct: float) -> list:
    if "anchor_scale" not in frame.columns or frame.empty:
        return []
    scaled = frame.dropna(subset=["anchor_scale"]).drop_duplicates(["results_dir", "machine", "device"])
    far = scaled[np.abs(np.log(scaled["anchor_scale"].astype(float))) > np.log1p(tolerance_pct / 100)]
    return [f"{r.machine}/{r.device}: node {_name(r.results_dir)} measured the anchor at {1 / r.anchor_scale:.2f}x "
            "its kind's level; its rows were put on the kind's scale (crossover fleet compare DIR says whether "
            "the nodes differ beyond their noise)" for r in far.sort_values("results_dir").itertuples()]


def _name(results_dir) -> str:
    return "/".join(str(results_dir).rstrip("/").split("/")[-2:])
