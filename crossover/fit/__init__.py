"""Latency models fitted to measured series: forms, fitting, choice by grouped CV, intervals.

================  ====================================================================
module            what it holds
================  ====================================================================
latency_models    the model forms, their parameters, least squares on one series
calibrated_model  the toy's step costed from a calibration: the ``calibrated`` model
validation        grouped cross-validation and prediction-interval errors
series_fit        one fit per series: model choice, parameters, bootstrap (SeriesFit)
bootstrap         the bootstrap draws of a fit's parameters
cache             fits computed once and reused (on disk)
peaks             a device's measured peaks; fitted parameters checked against them
================  ====================================================================
"""

from ..lazy_exports import lazy_exports

#: Public name → the module of this package that defines it (imported on first use).
_EXPORTS = {
    "MODELS": "latency_models",
    "PARAMS": "latency_models",
    "model_parameters": "latency_models",
    "model_latency_s": "latency_models",
    "SeriesFit": "series_fit",
    "Fits": "series_fit",
    "fit_series": "series_fit",
    "fit_results": "all_series",
    "SERIES_KEYS": "crossover.results.columns",
    "cross_validate": "validation",
    "check_parameters": "peaks",
    "read_peaks": "peaks",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
