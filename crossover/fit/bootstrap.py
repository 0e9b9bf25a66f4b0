"""The bootstrap of a fitted latency model's parameters (see :mod:`crossover.fit.series_fit` for what it
resamples and why): draws of the parameters, one refit per resample."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .latency_models import evaluate, fit_parameters

__all__ = ["bootstrap_draws", "raw_samples"]


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
