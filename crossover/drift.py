"""The drift of a run: its reference readings over time, as a table and as a plot.

A suite measures a drift reference per device (the anchor size) at the start of every round and
every few points (see :func:`crossover.sweep.plan_rounds`); nothing about that point changes within
a run but the machine. Its readings, divided by the run's quiet level (their 10th percentile), show
when the machine was slow and by how much: the rows measured then are flagged ``drifted``
(:func:`crossover.results.attach_references`) and can be left out of fits (``--drop-drifted``).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from .results import DRIFT_LIMIT, REFERENCE_SWEEP

__all__ = ["drift_table", "drift_plot", "drift_summary"]


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
        quiet = float(np.quantile(group["median_s"], 0.10))
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
        rows.append(dict(run=run, readings=len(group), quiet_s=float(np.quantile(group["reference_s"], 0.10)),
                         median_drift=float(group["drift"].median()), worst_drift=float(group["drift"].max()),
                         drifted_fraction=float((group["drift"] > DRIFT_LIMIT).mean())))
    return pd.DataFrame(rows)


def drift_plot(data: pd.DataFrame, *, x: str = "elapsed_min", y: str = "drift", hue: str = "run",
               ax: Optional[object] = None):
    """Each run's reference readings over its run, relative to its quiet level.

    Parameters
    ----------
    data : DataFrame
        As from :func:`drift_table`.
    x, y, hue : str
        Columns: time (minutes since the run's start), the reading over the quiet level, the run.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        One line (with markers) per run, and a dotted line at :data:`DRIFT_LIMIT`: rows measured above
        it are flagged ``drifted``.
    """
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    for run, group in data.groupby(hue, sort=True):
        ax.plot(group[x], group[y], marker="o", markersize=3, linewidth=1, label=str(run))
    ax.axhline(DRIFT_LIMIT, color="0.4", linestyle=":", linewidth=1, label=f"drifted above {DRIFT_LIMIT:g}x")
    ax.axhline(1.0, color="0.7", linewidth=0.8)
    ax.set_xlabel("minutes since the run started")
    ax.set_ylabel("reference reading / run's quiet level")
    ax.legend(fontsize="small")
    return ax
