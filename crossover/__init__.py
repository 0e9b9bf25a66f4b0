"""crossover: measure, model and predict where the CPU stops beating the GPU.

The public API (imported on first use, so ``crossover --help`` does not wait for torch)::

    from crossover import ResidualMLP, Config, measure, load_suite, run_suite, load_results
"""

import importlib

__version__ = "0.1.0"

#: Public name → the module that defines it.
_EXPORTS = {
    "ResidualMLP": "model",
    "param_count": "model",
    "forward_flops": "model",
    "train_flops": "model",
    "step_flops": "model",
    "step_bytes": "model",
    "Config": "measurement",
    "ConfigError": "errors",
    "Measurement": "measurement",
    "measure": "measurement",
    "Timing": "timing",
    "TimerOptions": "timing",
    "time_step": "timing",
    "Suite": "suites",
    "SuiteError": "errors",
    "load_suite": "suites",
    "run_suite": "sweep",
    "ResultsError": "errors",
    "load_results": "results",
    "environment": "env",
    "machine_label": "env",
    "AnalysisError": "errors",
    "STATISTICS": "statistics",
    "DEFAULT_STATISTIC": "statistics",
    "MODELS": "latency_models",
    "model_parameters": "latency_models",
    "model_latency_s": "latency_models",
    "SeriesFit": "fitting",
    "Fits": "fitting",
    "fit_series": "fitting",
    "fit_results": "fitting",
    "series_seed": "fitting",
    "cv_splits": "validation",
    "cross_validate": "validation",
    "Crossover": "crossovers",
    "crossover": "crossovers",
    "fixed_params_crossover": "crossovers",
    "empirical_crossover": "crossovers",
    "crossover_frontier": "crossovers",
    "cost_per_million_samples": "crossovers",
    "cost_crossover": "crossovers",
    "predict": "crossovers",
    "TraceError": "errors",
    "trace_module": "trace",
    "trace_batches": "trace",
    "predict_module": "module_predict",
    "measure_module": "module_measure",
    "Profile": "profiles",
    "load_profile": "profiles",
    "synthetic_profile": "profiles",
    "run_calibration": "calibrate",
    "load_factory": "user_model",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'crossover' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
