"""Latency models fitted on measured results, their honest accuracy, crossovers and cost: one import.

A facade: ``from crossover import analysis as A`` gives the analysis API in one namespace, for the
notebook, the experiments and the CLI. Each idea lives in its own module, and the data flow reads
top to bottom:

- :mod:`crossover.results.statistics`: what a point's latency is (median of rounds, 10th percentile,
  fastest repeat) and how a point's rounds combine;
- :mod:`crossover.fit.latency_models`: the model forms (affine, roofline and its refinements), their
  parameters, least squares on one series' points;
- :mod:`crossover.fit.validation`: grouped cross-validation, the held-out error per model and axis;
- :mod:`crossover.fit.series_fit`: one fit per series, the model chosen by CV, bootstrap intervals
  (:class:`SeriesFit`, :func:`fit_series`, :func:`fit_results`);
- :mod:`crossover.analysis.crossovers`: where two fits meet along any path (:func:`crossover`), frontiers,
  cost, and :func:`predict`;
- :mod:`crossover.analysis.decision`: the answer ``crossover predict`` prints (:func:`decide`);
- :mod:`crossover.analysis.advice` and :mod:`crossover.analysis.latency_curves`: the device, batch
  size, replicas and cost that meet a latency target at a request rate (:func:`advise`).

Pure computation on the DataFrame of :func:`crossover.load_results` (``raw=True`` for bootstrap
intervals); no file I/O.
"""

from ..lazy_exports import lazy_exports

#: Public name → the module that defines it (imported on first use: importing one module of this
#: package does not import the rest).
_EXPORTS = {
    "AnalysisError": "crossover.errors",
    "SERIES_KEYS": "crossover.results.columns",
    "AXES": "crossover.fit.latency_models",
    "MODELS": "crossover.fit.latency_models",
    "PARAMS": "crossover.fit.latency_models",
    "STATISTICS": "crossover.results.statistics",
    "DEFAULT_STATISTIC": "crossover.results.statistics",
    "model_parameters": "crossover.fit.latency_models",
    "step_counts": "crossover.fit.latency_models",
    "model_latency_s": "crossover.fit.latency_models",
    "SeriesFit": "crossover.fit.series_fit",
    "Fits": "crossover.fit.series_fit",
    "Crossover": "crossover.analysis.crossovers",
    "fit_series": "crossover.fit.series_fit",
    "fit_results": "crossover.fit.all_series",
    "series_seed": "crossover.fit.series_fit",
    "one_row_per_size": "crossover.fit.series_fit",
    "cv_splits": "crossover.fit.validation",
    "cross_validate": "crossover.fit.validation",
    "crossover": "crossover.analysis.crossovers",
    "crossing": "crossover.analysis.crossovers",
    "fixed_params_crossover": "crossover.analysis.crossovers",
    "empirical_crossover": "crossover.analysis.crossovers",
    "curve_crossings": "crossover.analysis.crossovers",
    "crossover_frontier": "crossover.analysis.crossovers",
    "cost_per_million_samples": "crossover.analysis.crossovers",
    "cost_crossover": "crossover.analysis.crossovers",
    "predict": "crossover.analysis.crossovers",
    "decide": "crossover.analysis.decision",
    "Decision": "crossover.analysis.decision",
    "advise": "crossover.analysis.advice",
    "Advice": "crossover.analysis.advice",
    "LatencyCurve": "crossover.analysis.advice",
    "advise_curves": "crossover.analysis.advice",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
