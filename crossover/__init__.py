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
    "AnalysisError": "analysis",
    "MODELS": "analysis",
    "model_parameters": "analysis",
    "SeriesFit": "analysis",
    "Fits": "analysis",
    "Crossover": "analysis",
    "fit_series": "analysis",
    "fit_results": "analysis",
    "cv_splits": "analysis",
    "cross_validate": "analysis",
    "model_latency_s": "analysis",
    "crossover": "analysis",
    "empirical_crossover": "analysis",
    "crossover_frontier": "analysis",
    "cost_per_million_samples": "analysis",
    "cost_crossover": "analysis",
    "predict": "analysis",
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
