"""Two runs compared point by point: the ratio of their latencies, its interval, and a verdict.

Before and after a driver or torch upgrade, or one machine against another: for every point both
results hold (same configuration), the ratio ``B / A`` of a latency statistic, a bootstrap interval
of that ratio from the points' raw repeats, a Mann-Whitney U test on the repeats, and a verdict:
``slower`` or ``faster`` when the test rejects equality (p below ``alpha``), the interval excludes 1
and the change exceeds ``threshold``; ``same`` otherwise. As ``pyperf compare_to`` and
pytest-benchmark's compare do, plus a summary (geometric mean of the ratios, counts).

The statistic is taken from the pooled repeats of each point (its quantile: 0.1 for ``p10``, 0.5 for
``median``, the minimum for ``min``), so the estimate and its interval are of the same quantity.
Repeats within one run do not see the drift between runs: on a shared machine, judge a verdict
against the machine's noise floor (``crossover noise``). Pure computation on loaded results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import CrossoverError
from .columns import POINT_KEYS
from .statistics import statistic_named

__all__ = ["POINT_KEYS", "compare_results", "CompareSummary", "summarise"]

#: What makes two rows the same point in two runs (the machine may differ: that can be the question).



def _quantile(values: np.ndarray, q: float, axis=None):
    return np.min(values, axis=axis) if q == 0 else np.quantile(values, q, axis=axis)


def compare_results(a: pd.DataFrame, b: pd.DataFrame, *, statistic: str = "p10", threshold: float = 0.02,
                    alpha: float = 0.01, level: float = 0.95, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Compare every point that ``a`` and ``b`` both measured.

    Parameters
    ----------
    a, b : DataFrame
        Results with raw repeats (``load_results(..., raw=True)``): the baseline and the new run.
    statistic : {"p10", "median", "min"}
        The latency compared, as a quantile of each point's pooled repeats.
    threshold : float
        Smallest relative change called a change (0.02: 2%).
    alpha : float
        Significance level of the Mann-Whitney U test on the two points' repeats.
    level : float
        Confidence level of the bootstrap interval of the ratio.
    n_boot : int
        Bootstrap resamples (each point's repeats resampled with replacement, independently).
    seed : int
        Seeds the bootstrap.

    Returns
    -------
    DataFrame
        One row per common point: :data:`POINT_KEYS`, ``a_s``, ``b_s``, ``ratio`` (b / a), ``low``,
        ``high``, ``p_value``, ``verdict`` (``slower``, ``faster`` or ``same``).

    Raises
    ------
    CrossoverError
        No point in common, or a point without raw repeats.
    """
    from scipy import stats

    quantile = statistic_named(statistic).quantile
    keys = [k for k in POINT_KEYS if k in a and k in b]
    left = a.drop_duplicates(keys).set_index(keys)
    right = b.drop_duplicates(keys).set_index(keys)
    common = left.index.intersection(right.index)
    if not len(common):
        raise CrossoverError("the two results have no point in common (same device, sizes, mode, dtype, ...)")
    rng = np.random.default_rng(seed)
    tail = 50 * (1 - level)
    rows = []
    for point in common:
        times_a = np.asarray(left.at[point, "raw_times_s"], float)
        times_b = np.asarray(right.at[point, "raw_times_s"], float)
        if not (len(times_a) and len(times_b)):
            raise CrossoverError(f"point {dict(zip(keys, point))} has no raw repeats: load with raw=True")
        a_s, b_s = float(_quantile(times_a, quantile)), float(_quantile(times_b, quantile))
        draws_a = _quantile(rng.choice(times_a, (n_boot, len(times_a))), quantile, axis=1)
        draws_b = _quantile(rng.choice(times_b, (n_boot, len(times_b))), quantile, axis=1)
        low, high = np.percentile(draws_b / draws_a, [tail, 100 - tail])
        p_value = float(stats.mannwhitneyu(times_a, times_b, alternative="two-sided").pvalue)
        ratio = b_s / a_s
        changed = p_value < alpha and not (low <= 1 <= high) and abs(ratio - 1) > threshold
        verdict = ("slower" if ratio > 1 else "faster") if changed else "same"
        rows.append({**dict(zip(keys, point)), "a_s": a_s, "b_s": b_s, "ratio": ratio, "low": float(low),
                     "high": float(high), "p_value": p_value, "verdict": verdict})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class CompareSummary:
    """The comparison in a few numbers: points, the geometric mean of the ratios and the verdicts."""

    points: int
    geometric_mean_ratio: float
    slower: int
    faster: int
    same: int
    worst_slowdown: float  # largest significant ratio - 1 (0 when nothing is slower)

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def describe(self) -> str:
        change = self.geometric_mean_ratio - 1
        return (f"{self.points} points: B is {abs(change):.1%} {'slower' if change > 0 else 'faster'} than A "
                f"(geometric mean of B/A); {self.slower} slower, {self.faster} faster, {self.same} the same")


def summarise(comparison: pd.DataFrame) -> CompareSummary:
    """The :class:`CompareSummary` of :func:`compare_results`' table."""
    verdicts = comparison["verdict"].value_counts()
    slower = comparison[comparison["verdict"] == "slower"]
    return CompareSummary(points=len(comparison),
                          geometric_mean_ratio=float(np.exp(np.log(comparison["ratio"]).mean())),
                          slower=int(verdicts.get("slower", 0)), faster=int(verdicts.get("faster", 0)),
                          same=int(verdicts.get("same", 0)),
                          worst_slowdown=float(slower["ratio"].max() - 1) if len(slower) else 0.0)
