"""The nodes of a fleet on one scale: every node measures the suite's anchor, and its rows are scaled
by how fast it measured it; nodes of one kind compared with each other beyond their noise.

A fleet job (``crossover fleet``) writes its results into its own directory, ``DIR/<machine>/<job>/``,
with a ``job.json`` beside them (:data:`JOB_FILE`): one results directory per node (per job), so a
row knows its node by the directory it was read from (and its run's ``hostname`` and ``hardware`` in
``metadata.json``). Every node measures the suite's drift reference (its default point, on each
device) at the start of every round, whatever shard of the suite it measures: the *anchor*.

Shards measure different points, so nothing but the anchor says whether one node ran faster than
another. :func:`anchor_factors` takes each node's anchor level (the quiet level of its reference
readings, :func:`crossover.results.statistics.quiet_level`, the same as its drift) and the kind's
level (the median over the kind's nodes), and :func:`put_on_anchor_scale` multiplies every time of a
node's rows by ``kind level / node level``: the pooled series then holds each shard's points as if the
kind's typical node had measured them. Only fleet job directories are scaled (results measured one
machine at a time are left as they are), and each row keeps its factor in ``anchor_scale``.

:func:`compare_nodes` compares each node of a kind with the kind's first node, point by point
(:func:`crossover.results.compare.compare_results`) on the anchor and on any point both measured,
with a node pair's threshold set to their noise floor: a verdict other than ``same`` says the two
nodes differ beyond it. Pure computation on loaded results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from .columns import REFERENCE_SWEEP
from .statistics import quiet_level

__all__ = ["JOB_FILE", "JOB_SCHEMA", "TIME_COLUMNS", "is_fleet_job_dir", "anchor_levels", "anchor_factors",
           "put_on_anchor_scale", "node_notes", "compare_nodes"]

#: The record a fleet job keeps beside its results (``crossover.measurement.fleet_job``).
JOB_FILE = "job.json"
#: Its ``schema`` field.
JOB_SCHEMA = "crossover-fleet-job"
#: Columns holding a time of the step (scaled with the node); ``compile_s`` and ``setup_s`` are not.
TIME_COLUMNS = ("median_s", "iqr_s", "q1_s", "q3_s", "mean_s", "min_s", "median_ci_low_s", "median_ci_high_s",
                "device_median_s", "device_busy_s", "reference_s")
_NODE = ["results_dir", "machine", "device"]


def is_fleet_job_dir(directory) -> bool:
    """Whether ``directory`` holds a fleet job's results (a ``job.json`` of :data:`JOB_SCHEMA`)."""
    try:
        data = json.loads((Path(directory) / JOB_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and data.get("schema") == JOB_SCHEMA


def anchor_levels(frame: pd.DataFrame) -> pd.DataFrame:
    """Each node's anchor level: the quiet level of its drift-reference readings, per device.

    Parameters
    ----------
    frame : DataFrame
        Per-round rows with the reference rows (``sweep == "reference"``) and ``results_dir``.

    Returns
    -------
    DataFrame
        One row per (``results_dir``, ``machine``, ``device``) with reference readings: the anchor's
        sizes (``d_model``, ``n_layers``, ``batch_size``), ``readings`` and ``anchor_s``.
    """
    columns = _NODE + ["d_model", "n_layers", "batch_size", "readings", "anchor_s"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    refs = frame[(frame["sweep"] == REFERENCE_SWEEP) & (frame["status"] == "ok")]
    rows = []
    for (results_dir, machine, device), group in refs.groupby(_NODE, sort=True):
        first = group.iloc[0]
        rows.append(dict(results_dir=results_dir, machine=machine, device=device, d_model=int(first["d_model"]),
                         n_layers=int(first["n_layers"]), batch_size=int(first["batch_size"]),
                         readings=len(group), anchor_s=quiet_level(group["median_s"])))
    return pd.DataFrame(rows, columns=columns)


def anchor_factors(frame: pd.DataFrame, fleet_dirs: Optional[set] = None) -> pd.DataFrame:
    """The factor that puts each fleet node's times on its kind's scale.

    Parameters
    ----------
    frame : DataFrame
        Per-round rows with the reference rows and ``results_dir`` (as :func:`anchor_levels`).
    fleet_dirs : set of str, optional
        The results directories that are fleet jobs (default: those of ``frame`` for which
        :func:`is_fleet_job_dir` holds). Other directories get no factor.

    Returns
    -------
    DataFrame
        :func:`anchor_levels` of the fleet nodes, plus ``nodes`` (how many nodes of the kind measured
        that anchor), ``kind_anchor_s`` (their median level) and ``factor`` (``kind_anchor_s /
        anchor_s``: 1 for a kind of one node). Nodes of a kind that measured different anchors (other
        suites' defaults) are scaled only among those sharing theirs.
    """
    levels = anchor_levels(frame)
    if fleet_dirs is None:
        fleet_dirs = {d for d in levels["results_dir"].unique() if is_fleet_job_dir(d)}
    levels = levels[levels["results_dir"].isin(fleet_dirs)].copy()
    kind = ["machine", "device", "d_model", "n_layers", "batch_size"]
    grouped = levels.groupby(kind)["anchor_s"]
    levels["nodes"] = grouped.transform("size").astype(int)
    levels["kind_anchor_s"] = grouped.transform("median")
    levels["factor"] = levels["kind_anchor_s"] / levels["anchor_s"]
    return levels.reset_index(drop=True)


def put_on_anchor_scale(frame: pd.DataFrame, factors: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every time of a fleet node's rows multiplied by its :func:`anchor_factors` factor.

    The :data:`TIME_COLUMNS` and the raw repeats (``raw_times_s``, when they are tuples) are scaled;
    ``anchor_scale`` holds the factor applied (NaN for rows of other results directories).
    """
    frame = frame.copy()
    frame["anchor_scale"] = np.nan
    if frame.empty or factors.empty:
        return frame
    table = factors.drop_duplicates(_NODE).set_index(_NODE)["factor"]
    index = pd.MultiIndex.from_frame(frame[_NODE].astype(object))
    factor = table.reindex(index).to_numpy(float)
    scaled = np.isfinite(factor)
    if not scaled.any():
        return frame
    frame["anchor_scale"] = factor
    for column in TIME_COLUMNS:
        if column in frame:
            frame.loc[scaled, column] = frame.loc[scaled, column].to_numpy(float) * factor[scaled]
    if "raw_times_s" in frame:
        frame["raw_times_s"] = [tuple(v * f for v in times) if ok and isinstance(times, tuple) else times
                                for times, f, ok in zip(frame["raw_times_s"], factor, scaled)]
    return frame


def node_notes(frame: pd.DataFrame) -> list:
    """One sentence per series pooling fleet nodes: how many, which, and the factor each was scaled by
    (``frame``: loaded results, with ``anchor_scale``)."""
    if "anchor_scale" not in frame.columns or frame.empty:
        return []
    nodes = frame.dropna(subset=["anchor_scale"]).drop_duplicates(["machine", "device", "results_dir"])
    lines = []
    for (machine, device), rows in nodes.groupby(["machine", "device"], sort=True):
        rows = rows.sort_values("results_dir")
        parts = ", ".join(f"{Path(r.results_dir).name} x{r.anchor_scale:.3f}" for r in rows.itertuples())
        lines.append(f"{machine}/{device} pools {len(rows)} fleet node{'s' if len(rows) != 1 else ''} ({parts}: "
                     "each put on the kind's scale by the anchor it measured)")
    return lines


def compare_nodes(frame: pd.DataFrame, thresholds: Optional[dict] = None, *, statistic: str = "p10",
                  default_threshold: float = 0.02, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Each node of a machine kind against the kind's first node, on the anchor and the shared points.

    Parameters
    ----------
    frame : DataFrame
        Rows of several nodes with raw repeats and the reference rows, unscaled:
        ``load_results(..., raw=True, include_reference=True, anchor_scale=False)``.
    thresholds : dict, optional
        ``results_dir -> fraction``: each node's noise floor (how far one run's estimate lies from
        another's on that machine); a pair is judged against the larger of its two. Missing:
        ``default_threshold``.
    statistic, n_boot, seed
        As :func:`crossover.results.compare.compare_results`.

    Returns
    -------
    DataFrame
        One row per compared point: ``machine``, ``node_a`` and ``node_b`` (results directories),
        ``anchor`` (True for the drift reference), ``threshold`` and the columns of
        :func:`crossover.results.compare.compare_results` (``ratio`` = node b over node a, interval,
        ``verdict``). Empty when no kind has two nodes.
    """
    from ..errors import CrossoverError
    from .compare import compare_results

    thresholds = thresholds or {}
    out = []
    for machine, rows in frame.groupby("machine", sort=True):
        nodes = sorted(rows["results_dir"].unique())
        first = nodes[0]
        for other in nodes[1:]:
            threshold = max(thresholds.get(first, default_threshold), thresholds.get(other, default_threshold))
            a, b = rows[rows["results_dir"] == first], rows[rows["results_dir"] == other]
            for anchor in (True, False):
                pick_a = a[(a["sweep"] == REFERENCE_SWEEP) == anchor]
                pick_b = b[(b["sweep"] == REFERENCE_SWEEP) == anchor]
                if pick_a.empty or pick_b.empty:
                    continue
                try:
                    table = compare_results(pick_a, pick_b, statistic=statistic, threshold=threshold,
                                            n_boot=n_boot, seed=seed)
                except CrossoverError:  # no point in common (shards of one suite share only the anchor)
                    continue
                out.append(table.assign(machine=machine, node_a=first, node_b=other, anchor=anchor,
                                        threshold=threshold))
    if not out:
        return pd.DataFrame(columns=["machine", "node_a", "node_b", "anchor", "threshold", "ratio", "verdict"])
    table = pd.concat(out, ignore_index=True)
    leading = ["machine", "node_a", "node_b", "anchor", "threshold"]
    return table[leading + [c for c in table.columns if c not in leading]]
