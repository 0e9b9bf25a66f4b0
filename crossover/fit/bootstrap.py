"""The bootstrap of a fitted latency model's parameters (see :mod:`crossover.fit.series_fit` for what it
resamples and why): draws of the parameters, one refit per resample."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .latency_models import evaluate, fit_parameters

__all__ = ["bootstrap_draws", "raw_samples", "round_draws", "round_latencies", "Refits", "weighted_quantile",
           "resolve_bootstrap", "series_rounds", "BOOTSTRAPS", "DEFAULT_BOOTSTRAP", "MIN_BOOTSTRAP_ROUNDS", "REFIT_TOL"]

#: What a bootstrap resamples: the fit's log residuals, each point's repeats, or whole rounds; ``auto``
#: (the default): whole rounds where the series was measured in at least :data:`MIN_BOOTSTRAP_ROUNDS`
#: rounds, else the residuals (:func:`resolve_bootstrap`).
BOOTSTRAPS = ("auto", "residuals", "repeats", "rounds")
DEFAULT_BOOTSTRAP = "auto"
#: Rounds a series needs for ``auto`` to resample them: 6 rounds give 462 distinct resamples.
MIN_BOOTSTRAP_ROUNDS = 6
#: Where a bootstrap's refits stop (:func:`crossover.fit.latency_models.fit_parameters`' ``tol``; the fit
#: itself stops at 1e-6). A draw is one Monte Carlo sample: on the shipped data 1e-5 moved the crossovers'
#: interval ends by at most 0.1%, another seed moves them by up to 1.5%, and the refits cost a fifth
#: less (the H100 host's weakly identified ones crawl along a flat valley at 1e-6). 1e-4 stopped some of
#: those refits early enough to narrow an interval by 2.2%.
REFIT_TOL = 1e-5


def series_rounds(frame: pd.DataFrame) -> int:
    """How many rounds the points of ``frame`` were measured in (0 without ``round_raw_s``)."""
    if "round_raw_s" not in frame:
        return 0
    return len({r for pairs in frame["round_raw_s"] if isinstance(pairs, tuple) for r, _ in pairs})


def resolve_bootstrap(bootstrap: str, frame: pd.DataFrame) -> str:
    """``bootstrap``, with ``auto`` made ``rounds`` for a series of :data:`MIN_BOOTSTRAP_ROUNDS` rounds
    or more and ``residuals`` otherwise."""
    if bootstrap != "auto":
        return bootstrap
    return "rounds" if series_rounds(frame) >= MIN_BOOTSTRAP_ROUNDS else "residuals"


def raw_samples(frame: pd.DataFrame, quantile: float = 0.5) -> list:
    """Per point, its raw repeats (at least two values, so scipy can resample every point).

    The repeats are rescaled so that their ``quantile`` is the point's fitted latency: a point
    measured in several rounds has ``median_s`` = the median of the rounds' medians, which is not
    the median of its pooled repeats, and the bootstrap must resample around the estimate that was
    fitted.
    """
    raw = frame["raw_times_s"] if "raw_times_s" in frame else [()] * len(frame)
    samples = []
    for values, latency in zip(raw, frame["latency_s"]):
        values = np.asarray(values if len(values) >= 2 else (latency, latency), dtype=float)
        samples.append(values * (latency / np.quantile(values, quantile)))
    return samples


def bootstrap_draws(model, theta, frame, X, t, bootstrap, quantile, *, n_boot, level, rng, loss, f_scale, on_refit,
                    peaks=None):
    """Bootstrap parameter draws (n_boot, n_params) of ``model`` fitted at ``theta`` (see the module
    docstring): resampling the log residuals, or each point's raw repeats at ``quantile``;
    ``on_refit()`` after each refit; ``peaks`` bound the refits as they bound the fit."""
    if bootstrap == "rounds":
        return round_draws(model, theta, frame, X, t, quantile, n_boot=n_boot, rng=rng, loss=loss, f_scale=f_scale,
                           on_refit=on_refit, peaks=peaks)
    if bootstrap == "residuals":
        fitted = evaluate(model, theta, X)
        residuals = np.log(t / fitted)
        residuals = residuals - np.median(residuals)  # the robust fit centres the median, not the mean

        def refit(resampled):
            phi = np.log(fit_parameters(model, X, fitted * np.exp(resampled), [theta], loss, f_scale, peaks, REFIT_TOL))
            on_refit()
            return phi

        data = (residuals,)
    else:
        def refit(*samples):
            latencies = np.array([np.quantile(s, quantile) for s in samples])
            phi = np.log(fit_parameters(model, X, latencies, [theta], loss, f_scale, peaks, REFIT_TOL))
            on_refit()
            return phi

        data = raw_samples(frame, quantile)
    from scipy import stats  # on use: scipy.stats takes ~0.5 s to import, and a cached fit never needs it

    result = stats.bootstrap(data, refit, n_resamples=n_boot, vectorized=False, method="percentile",
                             confidence_level=level, rng=rng)
    return np.exp(np.atleast_2d(result.bootstrap_distribution).T)


def round_draws(model, theta, frame, X, t, quantile, *, n_boot, rng, loss, f_scale, on_refit, peaks=None):
    """Parameter draws (n_boot, n_params) from resampling whole rounds: each resample draws the series'
    rounds with replacement, every point's latency is the ``quantile`` of its repeats in the rounds
    drawn (scaled, like :func:`raw_samples`, so that all its rounds give its fitted latency), and the
    model is refitted. A slow spell of a shared machine moves every point of a round together; the
    residuals' bootstrap treats those moves as independent, and its intervals are too narrow (the
    paper's issue #32: 4 of 6 measured crossings outside their fitted intervals).

    :func:`round_latencies` then :func:`Refits.run`: the resamples' latencies are drawn first, so their
    refits can be made in pieces, in other processes (:func:`crossover.fit.all_series.fit_results`).

    Raises
    ------
    AnalysisError
        The points carry no rounds (``load_results(..., raw=True)`` keeps ``round_raw_s``), or the
        series has fewer than two rounds.
    """
    latencies = round_latencies(frame, t, quantile, n_boot=n_boot, rng=rng)
    return Refits(model, theta, X, latencies, loss, f_scale, peaks).run(on_refit=on_refit)


def round_latencies(frame, t, quantile, *, n_boot, rng) -> np.ndarray:
    """Each resample's latencies (n_boot, n_points) of :func:`round_draws`: the rounds every resample
    draws, and every point's ``quantile`` of its repeats in them.

    Raises
    ------
    AnalysisError
        As :func:`round_draws`.
    """
    from ..errors import AnalysisError

    if "round_raw_s" not in frame:
        raise AnalysisError("the rounds bootstrap needs each point's rounds (load the results with raw=True)")
    rounds_of = [dict(pairs) if isinstance(pairs, tuple) else {} for pairs in frame["round_raw_s"]]
    ids = sorted(set().union(*rounds_of))
    if len(ids) < 2:
        raise AnalysisError(f"the rounds bootstrap needs two or more rounds; this series has {len(ids)}")
    position = {r: i for i, r in enumerate(ids)}
    # Every resample's rounds first (the generator's stream as when each was drawn before its refit):
    # counts[k, i] is how often resample k drew round ids[i].
    counts = np.zeros((n_boot, len(ids)), dtype=np.int64)
    for k in range(n_boot):
        for r in rng.choice(ids, size=len(ids), replace=True).tolist():
            counts[k, position[r]] += 1
    latencies = np.empty((n_boot, len(t)))
    for j, (rounds, latency) in enumerate(zip(rounds_of, t)):
        pooled = [v for times in rounds.values() for v in times]
        factor = latency / np.quantile(pooled, quantile) if pooled else 1.0
        values = np.asarray(pooled, dtype=float)
        owner = np.asarray([position[r] for r, times in rounds.items() for _ in times], dtype=np.intp)
        order = np.argsort(values, kind="stable")
        drawn = weighted_quantile(values[order], counts[:, owner[order]], quantile)
        latencies[:, j] = np.where(np.isnan(drawn), latency, factor * drawn)
    return latencies


@dataclass
class Refits:
    """The refits of a bootstrap whose resamples are drawn: ``model`` refitted from ``theta`` on the
    points ``X`` once per row of ``latencies`` (see :func:`crossover.fit.latency_models.fit_parameters`).
    Each refit depends on its row alone, so the rows can be refitted in pieces (:meth:`pieces`), in any
    process, and give the same draws."""

    model: str
    theta: np.ndarray
    X: object
    latencies: np.ndarray  # (n_boot, n_points)
    loss: str
    f_scale: float
    peaks: object = None

    def run(self, on_refit=None) -> np.ndarray:
        """The draws (n_rows, n_params): one refit per row; ``on_refit()`` after each."""
        draws = []
        for row in self.latencies:
            draws.append(fit_parameters(self.model, self.X, row, [self.theta], self.loss, self.f_scale, self.peaks,
                                        REFIT_TOL))
            if on_refit is not None:
                on_refit()
        return np.asarray(draws).reshape(len(self.latencies), len(self.theta))

    def pieces(self, rows_each: int) -> list:
        """The same refits as :class:`Refits` of ``rows_each`` rows each (the last may hold fewer), in order:
        their :meth:`run` draws stacked are this one's."""
        return [replace(self, latencies=self.latencies[i:i + rows_each])
                for i in range(0, len(self.latencies), rows_each)]


def weighted_quantile(values: np.ndarray, weights: np.ndarray, quantile: float) -> np.ndarray:
    """``np.quantile(np.repeat(values, w), quantile)`` for each row ``w`` of ``weights``, at once.

    The linear method, computed as numpy computes it (the virtual index ``(n - 1) q``, the two order
    statistics around it, numpy's two-sided interpolation), so each value is the one
    :func:`numpy.quantile` gives bit for bit (``tests/test_bootstrap_rounds.py`` checks it); NaN for
    a row of zero weights.

    Parameters
    ----------
    values : numpy.ndarray
        Sorted values, shape ``(m,)``.
    weights : numpy.ndarray
        Non-negative integer repeats of each value, one row per multiset, shape ``(k, m)``.
    quantile : float
        In [0, 1].

    Returns
    -------
    numpy.ndarray
        Shape ``(k,)``.
    """
    weights = np.atleast_2d(weights)
    if not values.size:
        return np.full(len(weights), np.nan)
    cumulative = np.cumsum(weights, axis=1)
    n = cumulative[:, -1]
    virtual = (n - 1) * quantile
    below = np.floor(virtual)
    above = below + 1
    last = virtual >= n - 1
    below, above = np.where(last, n - 1, below), np.where(last, n - 1, above)
    below, above = np.maximum(below, 0), np.maximum(above, 0)

    def at(index):  # the value at sorted position `index` of each row's multiset
        rank = (cumulative <= index.astype(np.int64)[:, None]).sum(axis=1)
        return values[np.minimum(rank, len(values) - 1)]

    a, b = at(below), at(above)
    gamma = np.where(last, 0.0, virtual - np.floor(virtual))
    diff = b - a
    out = a + diff * gamma
    out = np.where(gamma >= 0.5, b - diff * (1 - gamma), out)
    return np.where(n > 0, out, np.nan)
