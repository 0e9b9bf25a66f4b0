"""How well predicted step latencies match measured ones: per model and device, and where the CPU and
the GPU cross (pure computation on tables; ``experiments/zoo_check.py`` reads the files and predicts).

The tables hold one row per (model, workload, device, batch size): ``measured_s`` (the 10th percentile
of the pooled repeats, what ``measure --model --json`` reports as ``latency_s``) and ``predicted_s``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..crossings import crossover_ends, log_crossings

__all__ = ["ZOO_KEYS", "error_table", "interval_table", "crossover_table", "sitting_ratios", "without_sitting", "WINNER_MARGIN", "CROSSOVER_FACTOR",
           "TARGET_MEDIAN", "TARGET_WORST"]

ZOO_KEYS = ("model", "workload")
#: Points whose two devices differ by less than this share are ties: no winner to get right.
WINNER_MARGIN = 0.10
#: A model within target: the median and the worst |error| of its points at most these (#27's targets).
TARGET_MEDIAN, TARGET_WORST = 0.10, 0.25
#: A predicted crossover within this factor of the measured one holds.
CROSSOVER_FACTOR = 1.5


def error_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (model, workload, device): ``points``, ``median_error`` and ``worst_error`` (|predicted /
    measured - 1|) and ``bias`` (the median signed error).

    Parameters
    ----------
    frame : DataFrame
        ``model``, ``workload``, ``device``, ``batch_size``, ``measured_s``, ``predicted_s``.
    """
    rows = []
    for key, group in frame.groupby([*ZOO_KEYS, "device"], sort=False):
        signed = (group["predicted_s"] / group["measured_s"] - 1).dropna()
        rows.append(dict(zip([*ZOO_KEYS, "device"], key), points=len(signed),
                         median_error=float(signed.abs().median()) if len(signed) else math.nan,
                         worst_error=float(signed.abs().max()) if len(signed) else math.nan,
                         bias=float(signed.median()) if len(signed) else math.nan))
    return pd.DataFrame(rows)


def interval_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per device, how the predicted intervals hold the measurements: ``points`` (those with an interval),
    ``inside`` (``predicted_low_s <= measured_s <= predicted_high_s``), ``inside_share`` and
    ``median_half_width`` (half the interval over the prediction, the median over points). Empty where the
    frame has no intervals.

    Parameters
    ----------
    frame : DataFrame
        ``device``, ``measured_s``, ``predicted_s``, ``predicted_low_s``, ``predicted_high_s``.
    """
    columns = ["device", "points", "inside", "inside_share", "median_half_width"]
    if "predicted_low_s" not in frame or "predicted_high_s" not in frame:
        return pd.DataFrame(columns=columns)
    known = frame.dropna(subset=["predicted_s", "predicted_low_s", "predicted_high_s"])
    rows = []
    for device, group in known.groupby("device", sort=True):
        low, high = group["predicted_low_s"].astype(float), group["predicted_high_s"].astype(float)
        inside = (low <= group["measured_s"]) & (group["measured_s"] <= high)
        half = (high - low) / 2 / group["predicted_s"].astype(float)
        rows.append(dict(device=device, points=len(group), inside=int(inside.sum()),
                         inside_share=float(inside.mean()), median_half_width=float(half.median())))
    return pd.DataFrame(rows, columns=columns)


def _first_crossing(batch, a, b) -> tuple:
    """(first crossing or None, which side is faster at the smallest batch: 'cpu'/'cuda'/'tie')."""
    roots = log_crossings(batch, a, b)
    first = "cpu" if a[0] < b[0] else ("cuda" if b[0] < a[0] else "tie")
    return (roots[0] if roots else None), first


def crossover_table(frame: pd.DataFrame, cpu: str = "cpu", gpu: str = "cuda") -> pd.DataFrame:
    """Per (model, workload) with both devices measured: the measured and predicted crossover batch
    (log-interpolated between batch sizes; None where they do not cross in the measured range), which
    device wins at the smallest batch, whether the predicted crossover lies within
    :data:`CROSSOVER_FACTOR` of the measured one (or both do not cross with the same winner), and how
    many points whose devices differ by more than :data:`WINNER_MARGIN` got the winner right. Where the
    frame has the predictions' intervals and the prediction crosses: ``predicted_low``, ``predicted_high``
    (the earliest and latest hand-over they allow, :func:`crossover.crossings.crossover_ends`, at the
    range's edges where open) and ``in_interval``: the measured crossover inside them, or, where the
    measurement does not cross, the open end on the side its winner holds; where neither crosses,
    ``holds``; None without intervals.
    """
    rows = []
    for key, group in frame.groupby(list(ZOO_KEYS), sort=False):
        wide = group.pivot_table(index="batch_size", columns="device", values=["measured_s", "predicted_s"])
        if (("measured_s", cpu) not in wide.columns or ("measured_s", gpu) not in wide.columns
                or ("predicted_s", cpu) not in wide.columns or ("predicted_s", gpu) not in wide.columns):
            continue
        wide = wide.dropna()
        if wide.empty:
            continue
        batch = wide.index.to_numpy(float)
        m_cpu, m_gpu = wide[("measured_s", cpu)].to_numpy(), wide[("measured_s", gpu)].to_numpy()
        p_cpu, p_gpu = wide[("predicted_s", cpu)].to_numpy(), wide[("predicted_s", gpu)].to_numpy()
        measured, measured_first = _first_crossing(batch, m_cpu, m_gpu)
        predicted, predicted_first = _first_crossing(batch, p_cpu, p_gpu)
        if measured is not None and predicted is not None:
            holds = max(predicted / measured, measured / predicted) <= CROSSOVER_FACTOR
        else:
            holds = measured is None and predicted is None and measured_first == predicted_first
        decided = np.abs(m_cpu / m_gpu - 1) > WINNER_MARGIN
        right = (m_cpu < m_gpu) == (p_cpu < p_gpu)
        rows.append(dict(zip(ZOO_KEYS, key), measured_crossover=measured, predicted_crossover=predicted,
                         measured_first=measured_first, predicted_first=predicted_first, holds=bool(holds),
                         decided_points=int(decided.sum()), winner_right=int((decided & right).sum()),
                         **_interval_check(group, batch, cpu, gpu, measured, measured_first, predicted,
                                           predicted_first, bool(holds))))
    return pd.DataFrame(rows)


def _interval_check(group, batch, cpu: str, gpu: str, measured, measured_first: str, predicted,
                    predicted_first: str, holds: bool) -> dict:
    """``predicted_low``, ``predicted_high`` and ``in_interval`` of :func:`crossover_table`'s row."""
    out = dict(predicted_low=None, predicted_high=None, in_interval=None)
    if "predicted_low_s" not in group or "predicted_high_s" not in group:
        return out
    bounds = group.pivot_table(index="batch_size", columns="device", values=["predicted_low_s", "predicted_high_s"])
    if len(bounds.reindex(batch).dropna()) != len(batch):
        return out
    bounds = bounds.reindex(batch)
    if predicted is None:
        return dict(out, in_interval=holds)
    first, other = (cpu, gpu) if predicted_first == "cpu" else (gpu, cpu)
    low, high, low_open, high_open = crossover_ends(
        batch, bounds[("predicted_low_s", first)].to_numpy(), bounds[("predicted_high_s", first)].to_numpy(),
        bounds[("predicted_low_s", other)].to_numpy(), bounds[("predicted_high_s", other)].to_numpy(), predicted)
    if measured is not None:
        inside = low <= measured <= high
    else:  # the measured winner holds the whole range: the predicted hand-over may lie beyond it on its side
        inside = high_open if measured_first == predicted_first else low_open
    return dict(predicted_low=low, predicted_high=high, in_interval=bool(inside))


def sitting_ratios(references: pd.DataFrame) -> dict:
    """Per device, the median of ``measured_s / calibration_s`` over the calibration's reference steps
    measured again in the zoo's sitting (:func:`~crossover.analysis.zoo_runs.read_reference_remeasures`):
    how much slower (above 1) the sitting ran the very steps the profile was fitted to, pooled over the
    reference models, their workloads and batch sizes. A prediction from that profile misses the zoo by
    this share before any modelling error.
    """
    if references.empty:
        return {}
    ratio = references["measured_s"] / references["calibration_s"]
    ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
    return {str(d): float(r.median()) for d, r in ratio.groupby(references.loc[ratio.index, "device"])}


def without_sitting(frame: pd.DataFrame, ratios: dict) -> pd.DataFrame:
    """``frame`` with each device's ``predicted_s`` scaled by its sitting ratio (:func:`sitting_ratios`;
    devices without one unchanged): the errors a model would have made had the calibration run in the
    zoo's sitting. A diagnostic that splits a miss between the sitting and the model, not a prediction
    (it reads the zoo's own process)."""
    scale = frame["device"].map(lambda d: ratios.get(d, 1.0)).astype(float)
    return frame.assign(predicted_s=frame["predicted_s"].astype(float) * scale)
