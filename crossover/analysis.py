"""Latency models fitted on measured results, their honest accuracy, crossovers and cost: one import.

A facade: ``from crossover import analysis as A`` gives the analysis API in one namespace, for the
notebook, the experiments and the CLI. Each idea lives in its own module, and the data flow reads
top to bottom:

- :mod:`crossover.statistics`: what a point's latency is (median of rounds, 10th percentile,
  fastest repeat) and how a point's rounds combine;
- :mod:`crossover.latency_models`: the model forms (affine, roofline and its refinements), their
  parameters, least squares on one series' points;
- :mod:`crossover.validation`: grouped cross-validation, the held-out error per model and axis;
- :mod:`crossover.fitting`: one fit per series, the model chosen by CV, bootstrap intervals
  (:class:`SeriesFit`, :func:`fit_series`, :func:`fit_results`);
- :mod:`crossover.crossovers`: where two fits meet along any path (:func:`crossover`), frontiers,
  cost, and :func:`predict`.

Pure computation on the DataFrame of :func:`crossover.load_results` (``raw=True`` for bootstrap
intervals); no file I/O.
"""

from __future__ import annotations

from .crossovers import (Crossover, cost_crossover, cost_per_million_samples, crossing, crossover,
                         crossover_frontier, curve_crossings, empirical_crossover, fixed_params_crossover,
                         predict)
from .errors import AnalysisError
from .fitting import Fits, SeriesFit, fit_results, fit_series, one_row_per_size, series_seed
from .latency_models import AXES, MODELS, PARAMS, model_latency_s, model_parameters, step_counts
from .statistics import DEFAULT_STATISTIC, STATISTICS
from .validation import SERIES_KEYS, cross_validate, cv_splits

__all__ = [
    "AnalysisError", "SERIES_KEYS", "AXES", "MODELS", "PARAMS", "STATISTICS", "DEFAULT_STATISTIC",
    "model_parameters", "step_counts", "model_latency_s",
    "SeriesFit", "Fits", "Crossover",
    "fit_series", "fit_results", "series_seed", "one_row_per_size", "cv_splits", "cross_validate",
    "crossover", "crossing", "fixed_params_crossover", "empirical_crossover", "curve_crossings",
    "crossover_frontier", "cost_per_million_samples", "cost_crossover", "predict",
]
