"""Crossovers from paired rounds: where two series cross in each round, and how much that moves.

A suite that pairs devices measures a point's CPU and GPU back to back in every round, so within a
round the two curves share the machine's state of those seconds. The crossing of one round's two
curves is then a measurement of the crossover in its own right; over the rounds these crossings
form the *empirical crossover distribution*, whose spread is what the machine's drift does to the
answer (set beside the fitted crossover of :func:`crossover.analysis.crossovers.crossover`).

Pure computation on the per-round rows of :func:`crossover.results.store.load_results` with
``combine_rounds=False``; any two series can be compared (a CPU and a GPU, or one CPU at two thread
counts).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping, Optional

import numpy as np
import pandas as pd

from .crossovers import curve_crossings
from ..errors import CrossoverError

__all__ = ["round_crossings", "switch_point", "crossover_distribution", "CrossoverDistribution"]

#: Rows of one round of one run: the pairing unit (a resumed run keeps its rounds' numbers).
ROUND_KEYS = ("results_dir", "machine", "round")


def _select(frame: pd.DataFrame, selection: Mapping) -> pd.DataFrame:
    mask = np.ones(len(frame), bool)
    for name, value in selection.items():
        if name not in frame:
            raise CrossoverError(f"cannot select on {name!r}: no such column")
        mask &= (frame[name] == value).to_numpy()
    return frame[mask]


def round_crossings(rounds: pd.DataFrame, a: Mapping, b: Mapping, *, along: str = "batch_size",
                    fixed: Optional[Mapping] = None, column: str = "median_s") -> pd.DataFrame:
    """The crossing of the two series' curves along ``along`` in each round.

    Parameters
    ----------
    rounds : DataFrame
        Per-round rows (``load_results(..., combine_rounds=False)``). Rows without a ``sequence``
        (results of schema version 1, measured before devices were paired) are left out: their
        "rounds" of two devices may lie minutes apart.
    a, b : mapping
        Column values that pick each series, e.g. ``{"device": "cpu"}`` and ``{"device": "cuda"}``,
        or ``{"threads": 1}`` and ``{"threads": 2}``.
    along : str
        The swept size (``batch_size``, ``d_model`` or ``n_layers``).
    fixed : mapping, optional
        Values both series share (the other sizes, workload, mode, ...), e.g.
        ``{"d_model": 128, "n_layers": 128, "mode": "eager"}``.
    column : str
        The per-round latency to compare (the round's median by default).

    Returns
    -------
    DataFrame
        One row per round in which both series were measured at two or more common values of
        ``along``: the round's keys (:data:`ROUND_KEYS`), ``n_points`` (common values), ``crossing``
        (the round's switch point, :func:`switch_point`, among its crossings interpolated in log-log;
        NaN when the curves do not cross in the measured range), ``n_crossings``, and ``a_wins_below``
        (True when ``a`` is the faster below the switch point; without one, at the smallest value).
    """
    fixed = dict(fixed or {})
    if "sequence" in rounds:  # rows measured before the paired protocol (no sequence) were not paired
        rounds = rounds[rounds["sequence"].notna()]
    series_a = _select(_select(rounds, fixed), a)
    series_b = _select(_select(rounds, fixed), b)
    keys = [k for k in ROUND_KEYS if k in rounds]
    out = []
    groups_b = {key: group for key, group in series_b.groupby(keys, sort=True)}
    for key, group_a in series_a.groupby(keys, sort=True):
        group_b = groups_b.get(key)
        if group_b is None:
            continue
        curve_a = group_a.groupby(along)[column].median()
        curve_b = group_b.groupby(along)[column].median()
        common = curve_a.index.intersection(curve_b.index)
        if len(common) < 2:
            continue
        roots = curve_crossings(curve_a, curve_b)
        sizes = common.to_numpy(float)
        a_faster = (curve_a[common] < curve_b[common]).to_numpy()
        crossing, a_below = switch_point(roots, sizes, a_faster)
        out.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                    "n_points": int(len(common)),
                    "crossing": crossing,
                    "n_crossings": len(roots),
                    "a_wins_below": a_below})
    return pd.DataFrame(out, columns=keys + ["n_points", "crossing", "n_crossings", "a_wins_below"])


def switch_point(roots, sizes: np.ndarray, a_faster: np.ndarray) -> tuple:
    """Of one round's crossings, the switch point: the crossing that splits the round's sizes into one
    device faster below and the other above with the fewest sizes on the wrong side (the first of
    equals), and whether ``a`` is the faster one below it.

    A single slow point makes extra crossings: on the H100's second visit the host CPU's batch-1 point
    of one round read 4.5 ms (1.5 ms at batch 2), slower than the GPU's 3.8 ms, and that round's first
    crossing was batch 1.09 against the other rounds' 56-249. Where the curves cross once this is
    that crossing; without a crossing, NaN and whether ``a`` is faster at the smallest size.

    Parameters
    ----------
    roots : sequence of float
        The curves' crossings (:func:`crossover.analysis.crossovers.curve_crossings`), increasing.
    sizes, a_faster : numpy.ndarray
        The round's common sizes and whether ``a`` was faster at each.
    """
    if not len(roots):
        return np.nan, bool(a_faster[np.argmin(sizes)])
    best = None
    for root in roots:
        below = sizes < root
        a_below = int(np.sum(a_faster & below) + np.sum(~a_faster & ~below))
        b_below = int(np.sum(~a_faster & below) + np.sum(a_faster & ~below))
        agree, a_wins = max((a_below, True), (b_below, False), key=lambda item: item[0])
        if best is None or agree > best[0]:
            best = (agree, float(root), a_wins)
    return best[1], best[2]


@dataclass(frozen=True)
class CrossoverDistribution:
    """The crossings of paired rounds, summarised.

    Attributes
    ----------
    along : str
        The swept size.
    n_rounds : int
        Rounds in which both series were measured.
    n_crossing : int
        Rounds whose curves cross within the measured range.
    median, q25, q75 : float
        Median and quartiles of those rounds' crossings (NaN when none crosses).
    low, high : float
        The smallest and largest crossing.
    never_fraction : float
        Share of rounds whose curves do not cross in the measured range.
    crossings : tuple of float
        Every round's crossing (NaN where none).
    """

    along: str
    n_rounds: int
    n_crossing: int
    median: float
    q25: float
    q75: float
    low: float
    high: float
    never_fraction: float
    crossings: tuple

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        """One line, e.g. ``"crossing at 192 [171, 230] (median, quartiles) in 20 of 20 paired rounds"``."""
        if not self.n_crossing:
            return f"no crossing in any of {self.n_rounds} paired rounds"
        return (f"crossing at {self.median:.3g} [{self.q25:.3g}, {self.q75:.3g}] (median, quartiles; "
                f"range {self.low:.3g}-{self.high:.3g}) in {self.n_crossing} of {self.n_rounds} paired rounds")


def crossover_distribution(rounds: pd.DataFrame, a: Mapping, b: Mapping, *, along: str = "batch_size",
                           fixed: Optional[Mapping] = None, column: str = "median_s") -> CrossoverDistribution:
    """The empirical crossover distribution of two series (see :func:`round_crossings`)."""
    per_round = round_crossings(rounds, a, b, along=along, fixed=fixed, column=column)
    values = per_round["crossing"].to_numpy(float)
    crossed = values[np.isfinite(values)]
    n = len(values)
    if len(crossed):
        q25, median, q75 = (float(v) for v in np.percentile(crossed, [25, 50, 75]))
        low, high = float(crossed.min()), float(crossed.max())
    else:
        q25 = median = q75 = low = high = float("nan")
    return CrossoverDistribution(along=along, n_rounds=n, n_crossing=int(len(crossed)), median=median, q25=q25,
                                 q75=q75, low=low, high=high,
                                 never_fraction=float(1 - len(crossed) / n) if n else float("nan"),
                                 crossings=tuple(float(v) for v in values))
