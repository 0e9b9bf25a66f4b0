"""The bootstrap of a fitted latency model's parameters (see :mod:`crossover.fit.series_fit` for what it
resamples and why): draws of the parameters, one refit per resample."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .latency_models import evaluate, fit_parameters

__all__ = ["bootstrap_draws", "raw_samples", "round_draws", "resolve_bootstrap", "series_rounds", "BOOTSTRAPS",
           "DEFAULT_BOOTSTRAP", "MIN_BOOTSTRAP_ROUNDS"]

#: What a bootstrap resamples: the fit's log residuals, each point's repeats, or whole rounds; ``auto``
#: (the default): whole rounds where the series was measured in at least :data:`MIN_BOOTSTRAP_ROUNDS`
#: rounds, else the residuals (:func:`resolve_bootstrap`).
BOOTSTRAPS = ("auto", "residuals", "repeats", "rounds")
DEFAULT_BOOTSTRAP = "auto"
#: Rounds a series needs for ``auto`` to resample them: 6 rounds give 462 distinct resamples.
MIN_BOOTSTRAP_ROUNDS = 6


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
            phi = np.log(fit_parameters(model, X, fitted * np.exp(resampled), [theta], loss, f_scale, peaks))
            on_refit()
            return phi

        data = (residuals,)
    else:
        def refit(*samples):
            latencies = np.array([np.quantile(s, quantile) for s in samples])
            phi = np.log(fit_parameters(model, X, latencies, [theta], loss, f_scale, peaks))
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

    Raises
    ------
    AnalysisError
        The points carry no rounds (``load_results(..., raw=True)`` keeps ``round_raw_s``), or the
        series has fewer than two rounds.
    """
    from collections import Counter

    from ..errors import AnalysisError

    if "round_raw_s" not in frame:
        raise AnalysisError("the rounds bootstrap needs each point's rounds (load the results with raw=True)")
    rounds_of = [dict(pairs) if isinstance(pairs, tuple) else {} for pairs in frame["round_raw_s"]]
    ids = sorted(set().union(*rounds_of))
    if len(ids) < 2:
        raise AnalysisError(f"the rounds bootstrap needs two or more rounds; this series has {len(ids)}")
    scale = []
    for rounds, latency in zip(rounds_of, t):
        pooled = [v for times in rounds.values() for v in times]
        scale.append(latency / np.quantile(pooled, quantile) if pooled else 1.0)
    draws = []
    for _ in range(n_boot):
        counts = Counter(rng.choice(ids, size=len(ids), replace=True).tolist())
        latencies = []
        for rounds, latency, factor in zip(rounds_of, t, scale):
            drawn = [np.repeat(np.asarray(rounds[r], float), c) for r, c in counts.items() if r in rounds]
            pooled = np.concatenate(drawn) if drawn else np.empty(0)
            latencies.append(factor * np.quantile(pooled, quantile) if len(pooled) else latency)
        draws.append(fit_parameters(model, X, np.asarray(latencies), [theta], loss, f_scale, peaks))
        on_refit()
    return np.asarray(draws)
