"""Two runs compared point by point: the ratio of their latencies, its interval, and a verdict.

Before and after a driver or torch upgrade, or one machine against another: for every point both
results hold (same configuration), the ratio ``B / A`` of a latency statistic, a bootstrap interval
of that ratio from the points' raw repeats, a Mann-Whitney U test on the repeats, and a verdict:
``slower`` or ``faster`` when the test rejects equality (p below ``alpha``), the interval excludes 1
and the change exceeds ``threshold``; ``same`` otherwise. As ``pyperf compare_to`` and
pytest-benchmark's compare do, plus a summary (geometric mean of the ratios, counts).

The statistic means what it means in every command (:data:`crossover.results.statistics.STATISTICS`):
``p10`` the 10th percentile of a point's pooled repeats, ``min`` the fastest repeat, ``median`` the
median of its rounds' medians. The interval is ``scipy.stats.bootstrap``'s (percentile method) of the
ratio, each run's sample resampled on its own: the pooled repeats for ``p10`` and ``min``, the rounds'
medians for ``median`` (a point measured in one round: its repeats), so the estimate and its interval
are of the same quantity. Repeats within one run do not see the drift between runs: on a shared
machine, judge a verdict against the machine's noise floor (``crossover noise``). Pure computation on
loaded results.
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


def _sample(row, statistic: str) -> tuple:
    """(the values a point's statistic summarises, the quantile of them it is): the rounds' medians for
    ``median`` where the point has two rounds or more, else its pooled repeats."""
    spec = statistic_named(statistic)
    repeats = np.asarray(row["raw_times_s"], float)
    rounds = row.get("round_raw_s") if hasattr(row, "get") else None
    if statistic == "median" and isinstance(rounds, tuple) and len(rounds) >= 2:
        return np.array([np.median(np.asarray(times, float)) for _, times in rounds]), 0.5
    return repeats, spec.quantile


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
        Bootstrap resamples (``scipy.stats.bootstrap``: each run's sample resampled on its own).
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

    keys = [k for k in POINT_KEYS if k in a and k in b]
    left = a.drop_duplicates(keys).set_index(keys)
    right = b.drop_duplicates(keys).set_index(keys)
    common = left.index.intersection(right.index)
    if not len(common):
        raise CrossoverError("the two results have no point in common (same device, sizes, mode, dtype, ...)")
    rng = np.random.default_rng(seed)
    column = statistic_named(statistic).column
    rows = []
    for point in common:
        times_a = np.asarray(left.at[point, "raw_times_s"], float)
        times_b = np.asarray(right.at[point, "raw_times_s"], float)
        if not (len(times_a) and len(times_b)):
            raise CrossoverError(f"point {dict(zip(keys, point))} has no raw repeats: load with raw=True")
        (sample_a, q_a), (sample_b, q_b) = _sample(left.loc[point], statistic), _sample(right.loc[point], statistic)
        # the estimate is the statistic's own column where the results have it (the combined rounds)
        a_s = float(left.at[point, column]) if column in left and np.isfinite(left.at[point, column]) \
            else float(_quantile(sample_a, q_a))
        b_s = float(right.at[point, column]) if column in right and np.isfinite(right.at[point, column]) \
            else float(_quantile(sample_b, q_b))
        ratio_of = lambda x, y, axis=-1: _quantile(y, q_b, axis=axis) / _quantile(x, q_a, axis=axis)  # noqa: E731
        if len(sample_a) > 1 and len(sample_b) > 1:
            found = stats.bootstrap((sample_a, sample_b), ratio_of, n_resamples=n_boot, confidence_level=level,
                                    method="percentile", vectorized=True, random_state=rng)
            low, high = found.confidence_interval
        else:  # one value a side: nothing to resample
            low = high = b_s / a_s
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
