"""The drift of a run: its reference readings over time, as a table (the plot is
:func:`crossover.plots_checks.drift_plot`, re-exported here and by :mod:`crossover.plots`).

A suite measures a drift reference per device (the anchor size) at the start of every round and
every few points (see :func:`crossover.sweep.plan_rounds`); nothing about that point changes within
a run but the machine. Its readings, divided by the run's quiet level (their 10th percentile), show
when the machine was slow and by how much: the rows measured then are flagged ``drifted``
(:func:`crossover.results.attach_references`) and can be left out of fits (``--drop-drifted``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .plots_checks import drift_plot
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
