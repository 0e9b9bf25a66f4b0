"""crossover: measure, model and predict where the CPU stops beating the GPU.

The public API (imported on first use, so ``crossover --help`` does not wait for torch)::

    from crossover import ResidualMLP, Config, measure, load_suite, run_suite, load_results
"""

from .lazy_exports import lazy_exports

__version__ = "0.1.0"

#: Public name → the module that defines it.
_EXPORTS = {
    "ResidualMLP": "measurement.toy_model",
    "param_count": "measurement.toy_counts",
    "forward_flops": "measurement.toy_counts",
    "train_flops": "measurement.toy_counts",
    "step_flops": "measurement.toy_counts",
    "step_bytes": "measurement.toy_counts",
    "Config": "measurement.toy_step",
    "ConfigError": "errors",
    "Measurement": "measurement.toy_step",
    "measure": "measurement.toy_step",
    "Timing": "measurement.timer",
    "TimerOptions": "measurement.timer",
    "time_step": "measurement.timer",
    "Suite": "measurement.suites",
    "SuiteError": "errors",
    "load_suite": "measurement.suites",
    "run_suite": "measurement.sweep",
    "ResultsError": "errors",
    "load_results": "results.store",
    "environment": "measurement.environment",
    "machine_label": "measurement.environment",
    "AnalysisError": "errors",
    "STATISTICS": "results.statistics",
    "DEFAULT_STATISTIC": "results.statistics",
    "MODELS": "fit.latency_models",
    "model_parameters": "fit.latency_models",
    "model_latency_s": "fit.latency_models",
    "SeriesFit": "fit.series_fit",
    "Fits": "fit.series_fit",
    "fit_series": "fit.series_fit",
    "fit_results": "fit.all_series",
    "series_seed": "fit.series_fit",
    "cv_splits": "fit.validation",
    "cross_validate": "fit.validation",
    "Crossover": "analysis.crossovers",
    "crossover": "analysis.crossovers",
    "fixed_params_crossover": "analysis.crossovers",
    "empirical_crossover": "analysis.crossovers",
    "crossover_frontier": "analysis.crossovers",
    "cost_per_million_samples": "analysis.crossovers",
    "cost_crossover": "analysis.crossovers",
    "predict": "analysis.crossovers",
    "decide": "analysis.decision",
    "Decision": "analysis.decision",
    "advise": "analysis.advice",
    "Advice": "analysis.advice",
    "TraceError": "errors",
    "trace_module": "opcost.trace",
    "trace_batches": "opcost.trace",
    "predict_module": "opcost.module_predict",
    "measure_module": "measurement.module_rounds",
    "Profile": "opcost.profiles",
    "load_profile": "opcost.profiles",
    "synthetic_profile": "opcost.profiles",
    "run_calibration": "opcost.calibrate",
    "load_factory": "measurement.user_module",
}

__all__ = ["__version__", *_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
