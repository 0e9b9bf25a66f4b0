"""Latency models fitted on measured results, their honest accuracy, crossovers and cost.

Pure computation on the DataFrame of :func:`crossover.load_results` (``raw=True`` for bootstrap
intervals); no file I/O. A *series* is the set of rows sharing ``SERIES_KEYS`` (one machine's device
in one workload/mode/dtype/regime/transfer/thread setting); every series gets its own fit.

Latency models, all fitted on relative error (log space, robust ``soft_l1`` loss, with
log-parameters so every parameter stays positive)::

    affine      t = step + FLOPs / R
    roofline    t = step + L * (layer + smax(F / P, M / BW))

refined by any of (joined with ``+``, e.g. ``roofline+cache+hockney``, see :func:`model_parameters`)::

    hockney     P -> P * B / (B + B_half): matrix-vector runs slower than matrix-matrix
    cache       BW -> from an in-cache to a DRAM bandwidth, logistic in log(weight bytes of the
                whole model) around a cache size
    ramp        BW -> from a small-layer to a large-layer bandwidth, logistic in log(one layer's
                weight bytes)
    split       activations (``7 B d`` per layer) move at their own bandwidth
    overlap     the smooth-max exponent p is fitted (1: compute and memory add up, large: max)
    gemm        layer -> layer + gemm for batch > 1: a batch of one runs a matrix-vector kernel, a
                larger batch a matrix-matrix one with its own fixed cost per call (on the CPU,
                MKL's GEMM set-up and weight packing: ``experiments/bench_gemv_gemm.py``). A step
                at batch 2, so a crossover found between batch 1 and 2 may be that step.

``F`` and ``M`` are the FLOPs and bytes of one layer (``2 B d²`` and ``(d² + 7 B d)·elt`` for a
forward pass), ``L`` the number of layers, and ``smax(c, m) = (c^p + m^p)^(1/p)`` a smooth maximum
(``p = SMOOTH_MAX_P`` unless fitted). ``MODELS`` lists the default candidates; which one a series
uses is chosen by grouped cross-validation (hold out all points sharing one value of ``d_model``,
``n_layers`` or ``batch_size``), not by in-sample fit. ``gemm`` is not among the default candidates:
on the CPU it is real (the step from batch 1 to 2 shows in a back-to-back micro-benchmark) and lowers
the CV error a little, but on the shipped H100 data it wins by absorbing the drift between two runs
(its batch > 1 points were re-measured in a slower run than the batch-1 sweeps), which moves the
fitted crossover away from the measured one. Ask for it with ``models=`` / ``--models``.

Each point's latency is, by default, the 10th percentile of its repeats pooled over rounds
(``statistic="p10"``, :data:`DEFAULT_STATISTIC`: the step on a quiet machine, which repeats best from
run to run; ``p10_s`` of :func:`crossover.results.combine_rounds_of`); ``statistic="median"`` fits
the median of its rounds' medians (the typical step) instead, ``statistic="min"`` the fastest repeat
(``min_s``). On a shared host the low tail comes from the rounds taken
while the machine was quiet, so it often repeats more closely from one run to another, though not
when a slow spell outlasts a whole run; within one run it varies from round to round about as much
as the median. ``experiments/bench_statistic.py`` compares the three over independent runs.

Parameter intervals come from :func:`scipy.stats.bootstrap`, by default over the fit's residuals
(each point's measured time is replaced by the fitted time times a log residual drawn with
replacement from all points' residuals, and the model refitted). The residuals hold everything the
model does not explain: drift between runs and rounds on a shared machine as well as misfit, which
on real machines is far larger than the noise within one measurement. ``bootstrap="repeats"``
resamples each point's raw repeats instead (median retaken, model refitted): intervals that reflect
only the noise within a run, and are much narrower. The cross-validation error remains the honest
measure of how far a prediction for an unmeasured size may be off. A parameter whose estimate sits on
its search bound (``at_bound`` in :meth:`SeriesFit.parameters`) is not identified by the data.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from .errors import CrossoverError
from .results import QUIET_QUANTILE

__all__ = [
    "AnalysisError", "SERIES_KEYS", "AXES", "MODELS", "model_parameters", "step_counts", "model_latency_s",
    "SeriesFit", "Fits", "Crossover",
    "fit_series", "fit_results", "one_row_per_size", "cv_splits", "cross_validate", "crossover", "empirical_crossover", "curve_crossings",
    "crossover_frontier", "cost_per_million_samples", "cost_crossover", "predict",
]

SERIES_KEYS = ("machine", "device", "workload", "mode", "dtype", "regime", "transfer", "threads")
AXES = ("d_model", "n_layers", "batch_size")
BYTES_PER_ELEMENT = {"float32": 4, "tf32": 4, "bfloat16": 2, "float16": 2}
SMOOTH_MAX_P = 3.0  # exponent of the smooth max of compute and memory time
CACHE_WIDTH = 1.0  # width (natural-log units of weight bytes) of the in-cache -> DRAM transition


class AnalysisError(CrossoverError):
    """Results that cannot be fitted or compared (no data, too few points, unknown series)."""


@dataclass(frozen=True)
class _Param:
    label: str
    unit: str
    scale: float  # SI value * scale = value in `unit`
    lo: float  # bounds in SI units
    hi: float


PARAMS = {
    "step_s": _Param("per-step overhead", "µs", 1e6, 1e-9, 10.0),
    "layer_s": _Param("per-layer overhead", "µs", 1e6, 1e-10, 0.1),
    "flops_per_s": _Param("compute rate", "GFLOP/s", 1e-9, 1e6, 1e17),
    "bytes_per_s": _Param("bandwidth", "GB/s", 1e-9, 1e6, 1e15),
    "cache_bytes_per_s": _Param("in-cache bandwidth", "GB/s", 1e-9, 1e6, 1e15),
    "dram_bytes_per_s": _Param("out-of-cache bandwidth", "GB/s", 1e-9, 1e6, 1e15),
    "cache_bytes": _Param("cache size (bandwidth midpoint)", "MB", 1e-6, 1e3, 1e13),
    "small_bytes_per_s": _Param("bandwidth, small layers", "GB/s", 1e-9, 1e6, 1e15),
    "large_bytes_per_s": _Param("bandwidth, large layers", "GB/s", 1e-9, 1e6, 1e15),
    "ramp_bytes": _Param("layer weight size (bandwidth midpoint)", "MB", 1e-6, 1e2, 1e12),
    "act_bytes_per_s": _Param("activation bandwidth", "GB/s", 1e-9, 1e6, 1e15),
    "batch_half": _Param("Hockney n½ (batch for half the compute rate)", "samples", 1.0, 1e-3, 1e6),
    "smooth_p": _Param("overlap exponent p (1: compute + memory, ∞: max)", "", 1.0, 1.0, 16.0),
    "gemm_layer_s": _Param("per-layer matrix-matrix cost (batch > 1)", "µs", 1e6, 1e-10, 0.1),
}
#: Extra parameters of each refinement of the roofline (model names join them with "+").
_COMPONENTS = {
    "hockney": ("batch_half",),
    "cache": ("cache_bytes_per_s", "dram_bytes_per_s", "cache_bytes"),
    "ramp": ("small_bytes_per_s", "large_bytes_per_s", "ramp_bytes"),
    "split": ("act_bytes_per_s",),
    "overlap": ("smooth_p",),
    "gemm": ("gemm_layer_s",),
}


@functools.lru_cache(maxsize=None)
def model_parameters(name: str) -> tuple:
    """Parameter names (SI units, see ``PARAMS``) of latency model ``name``.

    ``name`` is ``"affine"`` or ``"roofline"`` joined with ``+`` to any of the refinements
    ``hockney`` (compute rate grows with batch), ``cache`` (bandwidth depends on whether the model's
    weights fit in cache), ``ramp`` (bandwidth depends on the size of one layer's weights), ``split``
    (activations move at their own bandwidth), ``overlap`` (fitted smooth-max exponent) and ``gemm``
    (a per-layer cost paid only at batch > 1).
    """
    base, *extra = name.split("+")
    if base == "affine" and not extra:
        return ("step_s", "flops_per_s")
    if base != "roofline" or any(e not in _COMPONENTS for e in extra) or len(set(extra)) < len(extra):
        raise AnalysisError(f"unknown model {name!r}")
    names = ["step_s", "layer_s", "flops_per_s"]
    if not {"cache", "ramp"} & set(extra):
        names.append("bytes_per_s")
    for e in extra:
        names.extend(_COMPONENTS[e])
    return tuple(names)


#: Model name -> its parameters (SI units, see ``PARAMS``): the candidates cross-validation chooses from.
MODELS = {name: model_parameters(name) for name in (
    "affine", "roofline", "roofline+hockney", "roofline+cache", "roofline+cache+hockney",
)}
#: What a point's latency is: the column of the results each statistic reads, and the column holding
#: its noise floor (see :func:`crossover.results.combine_rounds_of`).
#: The third item is the quantile of a point's raw repeats that the statistic is (for the bootstrap).
#: The statistic a fit reads unless told otherwise: the 10th percentile of a point's repeats pooled
#: over its rounds. Chosen by evidence: ``experiments/bench_protocol.py`` on the 2-core VM, 3
#: independent windows per protocol, put one window's estimate 11.6% from the mean over windows for
#: the 10th percentile of many short rounds, 18.5% for their median and 20.2% for the median of the
#: old protocol (see the README's "Noisy machines").
DEFAULT_STATISTIC = "p10"
STATISTICS = {"median": ("median_s", "round_deviation", 0.5),
              "p10": ("p10_s", "p10_round_deviation", QUIET_QUANTILE),
              "min": ("min_s", "min_round_deviation", 0.0)}


# ---------------------------------------------------------------------------------- the models
def _counts(d_model, n_layers, batch_size, workload):
    """FLOPs, weight and activation element accesses of one step (floats, vectorised)."""
    d, L, B = (np.asarray(v, dtype=float) for v in (d_model, n_layers, batch_size))
    weights, activations = L * d * d, 7.0 * B * d * L
    if workload == "forward":
        return 2.0 * B * d * d * L, weights, activations
    if workload == "train":
        return 2.0 * B * d * d * (3 * L - 1), 6 * weights, 3 * activations
    raise AnalysisError(f"unknown workload {workload!r}")


def step_counts(d_model, n_layers, batch_size, workload="forward", bytes_per_element=4):
    """FLOPs and bytes of one step as floats (vectorised; same closed forms as :mod:`crossover.model`)."""
    flops, weights, activations = _counts(d_model, n_layers, batch_size, workload)
    return flops, (weights + activations) * bytes_per_element


def _features(d_model, n_layers, batch_size, workload, elt):
    flops, weights, activations = _counts(d_model, n_layers, batch_size, workload)
    L, d = np.asarray(n_layers, dtype=float), np.asarray(d_model, dtype=float)
    return SimpleNamespace(L=L, B=np.asarray(batch_size, dtype=float), flops=flops, F=flops / L,
                           Mw=weights * elt / L, Ma=activations * elt / L, M=(weights + activations) * elt / L,
                           W=L * d * d * elt, Wl=d * d * elt)


def _as_params(model, theta):
    theta = np.asarray(theta, dtype=float)
    if theta.ndim == 2:  # bootstrap draws: one row each, broadcast against the points
        return {name: theta[:, i, None] for i, name in enumerate(model_parameters(model))}
    return dict(zip(model_parameters(model), theta))


def _latency_s(model, theta, X):
    """Predicted seconds per step of ``model`` with parameters ``theta`` (SI) at features ``X``."""
    p = _as_params(model, theta)
    if "layer_s" not in p:
        return p["step_s"] + X.flops / p["flops_per_s"]
    rate = p["flops_per_s"] * (X.B / (X.B + p["batch_half"]) if "batch_half" in p else 1.0)
    if "cache_bytes" in p:  # whole model's weights in cache -> cache bandwidth, else DRAM's
        bandwidth = _log_logistic(X.W, p["cache_bytes"], p["cache_bytes_per_s"], p["dram_bytes_per_s"])
    elif "ramp_bytes" in p:  # small layers stream slower than large ones (e.g. run on fewer threads)
        bandwidth = _log_logistic(X.Wl, p["ramp_bytes"], p["small_bytes_per_s"], p["large_bytes_per_s"])
    else:
        bandwidth = p["bytes_per_s"]
    if "act_bytes_per_s" in p:
        memory = X.Mw / bandwidth + X.Ma / p["act_bytes_per_s"]
    else:
        memory = X.M / bandwidth
    compute, power = X.F / rate, p.get("smooth_p", SMOOTH_MAX_P)
    top = np.maximum(compute, memory)
    smooth = top * ((compute / top) ** power + (memory / top) ** power) ** (1 / power)
    layer = p["layer_s"] + smooth
    if "gemm_layer_s" in p:
        layer = layer + (X.B > 1) * p["gemm_layer_s"]
    return p["step_s"] + X.L * layer


def _log_logistic(size, middle, below, above):
    """``below`` for sizes well under ``middle``, ``above`` well over it; logistic in log size."""
    weight = special.expit((np.log(size) - np.log(middle)) / CACHE_WIDTH)
    return np.exp(np.log(below) + weight * (np.log(above) - np.log(below)))


def model_latency_s(model: str, params: Mapping[str, float], d_model, n_layers, batch_size,
                    workload: str = "forward", bytes_per_element: int = 4) -> np.ndarray:
    """Seconds per step that latency model ``model`` predicts with ``params`` (SI units, by name).

    Examples
    --------
    >>> float(model_latency_s("affine", {"step_s": 1e-3, "flops_per_s": 1e9}, 10, 5, 1))
    0.001001
    """
    theta = [params[name] for name in model_parameters(model)]
    return _latency_s(model, theta, _features(d_model, n_layers, batch_size, workload, bytes_per_element))


def _starts(model, X, t):
    """A few initial guesses (SI) from the data's scale; the best local optimum wins."""
    guess = {
        "step_s": 0.2 * t.min(), "layer_s": 0.3 * np.median(t / X.L),
        "flops_per_s": 2 * np.max(X.flops / t), "bytes_per_s": 2 * np.max(X.M * X.L / t),
    }
    bw = guess["bytes_per_s"]
    guess.update(cache_bytes_per_s=4 * bw, dram_bytes_per_s=bw, small_bytes_per_s=bw / 2, large_bytes_per_s=bw,
                 act_bytes_per_s=4 * bw, smooth_p=SMOOTH_MAX_P, gemm_layer_s=0.2 * guess["layer_s"])
    options = {"cache_bytes": np.quantile(X.W, [0.3, 0.7]), "ramp_bytes": np.quantile(X.Wl, [0.3, 0.7]),
               "batch_half": [1.0, 16.0]}
    starts = [dict(guess)]
    for name, values in options.items():
        if name in model_parameters(model):
            starts = [{**s, name: v} for s in starts for v in values]
    return [np.array([s[name] for name in model_parameters(model)]) for s in starts]


def _fit_theta(model, X, t, starts, loss="soft_l1", f_scale=0.1):
    names = model_parameters(model)
    lo = np.log([PARAMS[n].lo for n in names])
    hi = np.log([PARAMS[n].hi for n in names])
    log_t = np.log(t)

    def residuals(phi):
        return np.log(_latency_s(model, np.exp(phi), X)) - log_t

    best = None
    for start in starts:
        x0 = np.clip(np.log(start), lo + 1e-6, hi - 1e-6)
        result = optimize.least_squares(residuals, x0, bounds=(lo, hi), loss=loss, f_scale=f_scale,
                                        ftol=1e-6, xtol=1e-6, max_nfev=100 * len(names))
        if best is None or result.cost < best.cost:
            best = result
    return np.exp(best.x)


# ------------------------------------------------------------------------------------- data
def _check_frame(frame: pd.DataFrame, statistic: str = DEFAULT_STATISTIC) -> pd.DataFrame:
    frame = _use_statistic(frame, statistic)
    needed = set(SERIES_KEYS) | set(AXES) | {"median_s"}
    missing = sorted(needed - set(frame.columns))
    if missing:
        raise AnalysisError(f"results lack the columns {missing}")
    frame = frame[np.isfinite(frame["median_s"]) & (frame["median_s"] > 0)]
    if frame.empty:
        raise AnalysisError("no measured points to fit")
    return frame.reset_index(drop=True)


def _use_statistic(frame: pd.DataFrame, statistic: str) -> pd.DataFrame:
    """The frame with its ``median_s`` (the latency every fit reads) and ``round_deviation`` (its
    noise floor) taken from ``statistic``'s columns (see :data:`STATISTICS`)."""
    if statistic not in STATISTICS:
        raise AnalysisError(f"unknown statistic {statistic!r}; expected one of {list(STATISTICS)}")
    if statistic == "median":
        return frame
    value, noise, _ = STATISTICS[statistic]
    if value not in frame or not frame[value].notna().any():
        raise AnalysisError(f"results lack {value} (statistic {statistic!r}): load them with "
                            "crossover.load_results, which combines rounds")
    out = frame.assign(median_s=frame[value])
    return out.assign(round_deviation=frame[noise]) if noise in frame else out.drop(columns="round_deviation", errors="ignore")


def one_row_per_size(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (d_model, n_layers, batch_size) of a series: a size measured by two sweeps (the
    anchor in the batch sweep and again in the threads sweep, say) gets the median of their
    ``median_s``, pooled ``raw_times_s`` and the mean ``round_deviation``; other columns from the
    first. Each size then counts once in a fit, its CV folds and the plotted curves."""
    if not frame.duplicated(list(AXES)).any():
        return frame
    rows = []
    for _, group in frame.groupby(list(AXES), sort=False):
        row = group.iloc[0].copy()
        if len(group) > 1:
            row["median_s"] = float(group["median_s"].median())
            if "raw_times_s" in group:
                row["raw_times_s"] = tuple(v for raw in group["raw_times_s"] for v in raw)
            if "round_deviation" in group:
                row["round_deviation"] = float(group["round_deviation"].mean())
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def _series_key(row) -> tuple:
    return tuple(-1 if k == "threads" and pd.isna(row[k]) else row[k] for k in SERIES_KEYS)


def _raw_samples(frame: pd.DataFrame, quantile: float = 0.5) -> list:
    """Per point, its raw repeats (at least two values, so scipy can resample every point).

    The repeats are rescaled so that their ``quantile`` is the point's fitted latency: a point
    measured in several rounds has ``median_s`` = the median of the rounds' medians, which is not
    the median of its pooled repeats, and the bootstrap must resample around the estimate that was
    fitted.
    """
    raw = frame["raw_times_s"] if "raw_times_s" in frame else [()] * len(frame)
    samples = []
    for values, latency in zip(raw, frame["median_s"]):
        values = np.asarray(values if len(values) >= 2 else (latency, latency), dtype=float)
        samples.append(values * (latency / np.quantile(values, quantile)))
    return samples


def cv_splits(frame: pd.DataFrame, axis: str, max_held_out_fraction: float = 0.5) -> list:
    """Grouped cross-validation splits holding out every point that shares one value of ``axis``.

    A value carrying more than ``max_held_out_fraction`` of the points (the anchor of a
    one-axis-at-a-time design, e.g. ``d_model=128`` shared by the batch and depth sweeps) is not held
    out: its fold would test a fit on the remaining few points, not the model.

    Returns
    -------
    list of (held_out_value, train_positions, test_positions)
        Positions are row positions (``iloc``) in ``frame``; no training row has the held-out value.
    """
    if axis not in AXES:
        raise AnalysisError(f"unknown axis {axis!r}; expected one of {AXES}")
    values = frame[axis].to_numpy()
    splits = []
    for v in np.unique(values):
        test = np.flatnonzero(values == v)
        if len(test) <= max_held_out_fraction * len(values):
            splits.append((v.item(), np.flatnonzero(values != v), test))
    return splits


# -------------------------------------------------------------------------------------- fits
@dataclass
class SeriesFit:
    """One series' fitted latency model, its bootstrap draws and its cross-validated accuracy."""

    key: dict
    label: str
    model: str
    params: np.ndarray  # SI units, in the order of model_parameters(model)
    draws: Optional[np.ndarray]  # bootstrap parameter draws, (n_boot, n_params), or None
    level: float
    workload: str
    bytes_per_element: int
    points: pd.DataFrame  # d_model, n_layers, batch_size, median_s of the fitted points
    cv: pd.DataFrame = field(default_factory=pd.DataFrame)  # accuracy per (model, axis)
    cv_log_errors: np.ndarray = field(default_factory=lambda: np.empty(0))  # log(measured / held-out prediction)
    bootstrap: str = "residuals"  # what the draws resampled: "residuals" or "repeats"
    noise_floor_pct: float = np.nan  # mean |one round / median of rounds - 1| (%), points with >= 2 rounds
    noise_floor_points: int = 0  # how many points that mean is over
    statistic: str = DEFAULT_STATISTIC  # what each point's latency is (see STATISTICS)

    def latency_s(self, d_model, n_layers, batch_size, draws: bool = False, theta=None) -> np.ndarray:
        """Predicted seconds per step; with ``draws=True`` one row per bootstrap draw.

        ``theta`` overrides the parameters (SI units, one row per parameter set).
        """
        X = _features(d_model, n_layers, batch_size, self.workload, self.bytes_per_element)
        if draws and self.draws is None:
            raise AnalysisError(f"{self.label}: fitted without bootstrap draws (n_boot=0)")
        if theta is None:
            theta = self.draws if draws else self.params
        return _latency_s(self.model, theta, X)

    def latency_interval_s(self, d_model, n_layers, batch_size) -> tuple:
        """(low, high) percentile interval of the predicted latency at ``level``; NaN without draws."""
        if self.draws is None:
            return np.nan, np.nan
        values = self.latency_s(d_model, n_layers, batch_size, draws=True)
        tail = 50 * (1 - self.level)
        return tuple(float(np.percentile(values, q)) for q in (tail, 100 - tail))

    def prediction_interval_s(self, d_model, n_layers, batch_size) -> tuple:
        """(low, high) where a new measurement may fall: the prediction scaled by the ``level``
        percentiles of the chosen model's held-out errors (NaN without cross-validation)."""
        if not len(self.cv_log_errors):
            return np.nan, np.nan
        tail = 50 * (1 - self.level)
        value = float(self.latency_s(d_model, n_layers, batch_size))
        return tuple(value * float(np.exp(np.percentile(self.cv_log_errors, q))) for q in (tail, 100 - tail))

    def parameters(self) -> pd.DataFrame:
        """Parameters in display units with their bootstrap interval (percentile, ``level``).

        ``at_bound`` is True where the estimate lies within 5% of the bound the fit searches within
        (see ``PARAMS``); ``identified`` is False then, and also where the interval spans more than
        two decades. Such a parameter is not pinned down by the data (e.g. a per-step overhead too
        small to matter next to the rest, or a compute rate of a series whose points are all
        launch-bound), and its value and interval mean nothing physical.
        """
        rows = []
        for i, name in enumerate(model_parameters(self.model)):
            spec = PARAMS[name]
            low = high = np.nan
            if self.draws is not None:
                tail = 50 * (1 - self.level)
                low, high = np.percentile(self.draws[:, i], [tail, 100 - tail]) * spec.scale
            value = self.params[i]
            at_bound = bool(abs(np.log(value / spec.lo)) < 0.05 or abs(np.log(spec.hi / value)) < 0.05)
            wide = bool(np.isfinite(low) and np.isfinite(high) and low > 0 and high / low > 100)
            rows.append(dict(series=self.label, model=self.model, param=name, label=spec.label,
                             unit=spec.unit, value=value * spec.scale, low=low, high=high, at_bound=at_bound,
                             identified=not (at_bound or wide)))
        return pd.DataFrame(rows)

    def cv_score(self) -> float:
        """Mean over held-out axes of the chosen model's CV MAPE (%), NaN if not cross-validated."""
        rows = self.cv[self.cv["model"] == self.model] if len(self.cv) else self.cv
        return float(rows["mape_pct"].mean()) if len(rows) else np.nan

    def in_range(self, **config) -> bool:
        """Whether each given axis value lies within the measured range of this series."""
        return all(self.points[a].min() <= v <= self.points[a].max() for a, v in config.items())


def cross_validate(frame: pd.DataFrame, model: str, axes: Sequence[str] = AXES, *, loss="soft_l1",
                   f_scale=0.1, max_held_out_fraction: float = 0.5) -> pd.DataFrame:
    """Held-out predictions of ``model`` on one series, holding out each value of each axis in turn.

    See :func:`cv_splits`; folds whose training set has fewer than ``n_params + 2`` points are skipped.

    Returns
    -------
    pandas.DataFrame
        One row per held-out prediction: model, axis, held_out, extrapolated (the held-out value lies
        outside the training range), d_model, n_layers, batch_size, measured_s, predicted_s,
        rel_error (predicted / measured - 1).
    """
    frame = _check_frame(frame, "median").reset_index(drop=True)  # its median_s as given (fit_series chose it)
    X, t = _frame_features(frame), frame["median_s"].to_numpy()
    rows = []
    for axis in axes:
        for value, train, test in cv_splits(frame, axis, max_held_out_fraction):
            if len(train) < len(model_parameters(model)) + 2:
                continue
            Xtr = SimpleNamespace(**{k: v[train] for k, v in vars(X).items()})
            theta = _fit_theta(model, Xtr, t[train], _starts(model, Xtr, t[train]), loss, f_scale)
            Xte = SimpleNamespace(**{k: v[test] for k, v in vars(X).items()})
            predicted = _latency_s(model, theta, Xte)
            seen = frame[axis].to_numpy()[train]
            outside = not seen.min() < value < seen.max()
            for j, i in enumerate(test):
                rows.append(dict(model=model, axis=axis, held_out=value, extrapolated=outside,
                                 d_model=frame["d_model"][i],
                                 n_layers=frame["n_layers"][i], batch_size=frame["batch_size"][i],
                                 measured_s=t[i], predicted_s=predicted[j], rel_error=predicted[j] / t[i] - 1))
    return pd.DataFrame(rows)


def _cv_summary(predictions: pd.DataFrame) -> pd.DataFrame:
    """Per (model, axis): MAPE and % within ±10% of every held-out prediction, and the MAPE of the
    interior ones alone (``interior_mape_pct``: held-out values inside the range the fold trained on,
    i.e. interpolation; NaN if none), since holding out an end of an axis tests extrapolation."""
    if predictions.empty:
        return pd.DataFrame(columns=["model", "axis", "mape_pct", "within_10_pct", "interior_mape_pct",
                                     "n_points", "n_folds"])
    err = predictions.assign(abs_err=predictions["rel_error"].abs(),
                             interior_err=predictions["rel_error"].abs().where(~predictions["extrapolated"]))
    return (err.groupby(["model", "axis"], sort=False)
            .agg(mape_pct=("abs_err", lambda e: 100 * e.mean()),
                 within_10_pct=("abs_err", lambda e: 100 * (e <= 0.10).mean()),
                 interior_mape_pct=("interior_err", lambda e: 100 * e.mean()),
                 n_points=("abs_err", "size"), n_folds=("held_out", "nunique"))
            .reset_index())


def _frame_features(frame):
    workload = frame["workload"].iloc[0]
    elt = BYTES_PER_ELEMENT.get(frame["dtype"].iloc[0], 4)
    return _features(frame["d_model"].to_numpy(), frame["n_layers"].to_numpy(),
                     frame["batch_size"].to_numpy(), workload, elt)


def fit_series(frame: pd.DataFrame, models: Sequence[str] = tuple(MODELS), *, axes: Sequence[str] = AXES,
               n_boot: int = 200, level: float = 0.95, seed=0, loss: str = "soft_l1",
               f_scale: float = 0.1, max_held_out_fraction: float = 0.5,
               label: Optional[str] = None, bootstrap: str = "residuals",
               statistic: str = DEFAULT_STATISTIC) -> SeriesFit:
    """Fit one series: cross-validate each model, keep the best, bootstrap its parameters.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of one series (``load_results(..., raw=True)``; without ``raw_times_s`` there is no
        sampling noise to resample and intervals collapse to the point estimate).
    models : sequence of str
        Candidates from :data:`MODELS`; the lowest mean grouped-CV MAPE over ``axes`` wins (with a
        single candidate, CV is still computed for the report; ``axes=()`` skips it).
    n_boot : int
        Bootstrap resamples (0: no intervals).
    bootstrap : {"residuals", "repeats"}
        What is resampled: the fit's log residuals across points (default; covers drift between
        rounds and model misfit) or each point's raw repeats (only the noise within a measurement).
    level : float
        Confidence level of the percentile intervals.
    loss, f_scale
        Robust loss on log residuals, see :func:`scipy.optimize.least_squares`.
    max_held_out_fraction : float
        See :func:`cv_splits`.
    label : str, optional
        Name of the series (default ``machine/device``).
    statistic : {"median", "p10", "min"}
        Each point's latency: the median of its rounds' medians (default), the 10th percentile of
        its pooled repeats or the fastest repeat (the quiet machine; ``p10_s`` and ``min_s`` from
        :func:`crossover.load_results`).
        ``points``, the noise floor and the predictions are then of that statistic.
    """
    frame = _check_frame(frame, statistic)
    keys = {k: v for k, v in zip(SERIES_KEYS, _series_key(frame.iloc[0]))}
    if len({_series_key(row) for _, row in frame.iterrows()}) > 1:
        raise AnalysisError("fit_series needs the rows of one series; use fit_results for several")
    frame = one_row_per_size(frame)
    if not models:
        raise AnalysisError(f"no candidate models; expected some of {list(MODELS)}")
    for m in models:
        model_parameters(m)
    if bootstrap not in ("residuals", "repeats"):
        raise AnalysisError(f"unknown bootstrap {bootstrap!r}; expected 'residuals' or 'repeats'")
    X, t = _frame_features(frame), frame["median_s"].to_numpy()
    deviations = frame["round_deviation"].dropna() if "round_deviation" in frame else pd.Series(dtype=float)
    predictions = [cross_validate(frame, m, axes, loss=loss, f_scale=f_scale,
                                  max_held_out_fraction=max_held_out_fraction) for m in models]
    cv = _cv_summary(pd.concat(predictions + [pd.DataFrame()]))
    scores = {m: cv.loc[cv["model"] == m, "mape_pct"].mean() for m in models}
    scored = [m for m in models if np.isfinite(scores[m])]
    model = min(scored, key=scores.get) if scored else models[0]
    theta = _fit_theta(model, X, t, _starts(model, X, t), loss, f_scale)
    chosen = predictions[list(models).index(model)]
    log_errors = np.log(chosen["measured_s"] / chosen["predicted_s"]).to_numpy() if len(chosen) else np.empty(0)
    draws = None
    if n_boot > 0 and bootstrap == "residuals":
        fitted = _latency_s(model, theta, X)
        residuals = np.log(t / fitted)
        residuals = residuals - np.median(residuals)  # the robust fit centres the median, not the mean

        def refit(resampled):
            return np.log(_fit_theta(model, X, fitted * np.exp(resampled), [theta], loss, f_scale))

        result = stats.bootstrap((residuals,), refit, n_resamples=n_boot, vectorized=False,
                                 method="percentile", confidence_level=level, rng=np.random.default_rng(seed))
        draws = np.exp(np.atleast_2d(result.bootstrap_distribution).T)
    elif n_boot > 0:
        quantile = STATISTICS[statistic][2]

        def refit(*samples):
            latencies = np.array([np.quantile(s, quantile) for s in samples])
            return np.log(_fit_theta(model, X, latencies, [theta], loss, f_scale))

        result = stats.bootstrap(_raw_samples(frame, quantile), refit, n_resamples=n_boot, vectorized=False,
                                 method="percentile", confidence_level=level, rng=np.random.default_rng(seed))
        draws = np.exp(np.atleast_2d(result.bootstrap_distribution).T)
    return SeriesFit(key=keys, label=label or f"{keys['machine']}/{keys['device']}", model=model,
                     params=theta, draws=draws, level=level, workload=keys["workload"],
                     bytes_per_element=BYTES_PER_ELEMENT.get(keys["dtype"], 4), bootstrap=bootstrap,
                     noise_floor_pct=100 * float(deviations.mean()) if len(deviations) else np.nan,
                     noise_floor_points=len(deviations), statistic=statistic,
                     points=frame[list(AXES) + ["median_s"]].reset_index(drop=True), cv=cv,
                     cv_log_errors=log_errors)


class Fits(dict):
    """Fitted series by label (see :func:`fit_results`), with the skipped ones in ``skipped``."""

    skipped: dict

    def parameters(self) -> pd.DataFrame:
        """Every series' parameters with units and intervals."""
        return pd.concat([f.parameters() for f in self.values()], ignore_index=True)

    def accuracy(self) -> pd.DataFrame:
        """Every series' grouped-CV accuracy per (model, held-out axis); ``chosen`` marks the model used."""
        frames = [f.cv.assign(series=f.label, chosen=f.cv["model"] == f.model) for f in self.values()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _labels(keys: list) -> list:
    """``machine/device``, plus the key fields that tell apart series of the same machine and device."""
    labels = []
    for key in keys:
        same = [k for k in keys if k[:2] == key[:2]]
        extra = [f"{name}={value}" for i, (name, value) in enumerate(zip(SERIES_KEYS, key))
                 if i >= 2 and len({k[i] for k in same}) > 1]
        labels.append(f"{key[0]}/{key[1]}" + (f" [{', '.join(extra)}]" if extra else ""))
    return labels


def fit_results(frame: pd.DataFrame, models: Sequence[str] = tuple(MODELS), *, min_points: int = 8,
                progress=None, **options) -> Fits:
    """Fit every series of a results frame (see :func:`fit_series` for ``models`` and ``options``).

    Series with fewer than ``min_points`` points are left out and listed in ``Fits.skipped``.
    ``progress``, if given, wraps the iterable of series (e.g. ``tqdm.tqdm``).
    """
    frame = _check_frame(frame, "median")  # validated here; each fit_series reads its statistic
    keys = [_series_key(row) for _, row in frame[list(SERIES_KEYS)].iterrows()]
    frame = frame.assign(_key=keys)
    unique = list(dict.fromkeys(keys))
    fits, fits.skipped = Fits(), {}
    items = list(zip(unique, _labels(unique)))
    seed = options.pop("seed", 0)
    for i, (key, label) in enumerate(progress(items) if progress else items):
        rows = frame[frame["_key"] == key].drop(columns="_key")
        if len(rows) < min_points:
            fits.skipped[label] = f"{len(rows)} points (< {min_points})"
            continue
        fits[label] = fit_series(rows, models, label=label, seed=(seed, i), **options)
    if not fits:
        raise AnalysisError(f"no series has {min_points} or more points to fit ({fits.skipped})")
    return fits


# --------------------------------------------------------------------------------- crossovers
@dataclass
class Crossover:
    """Where the latency (or cost) of series ``a`` and ``b`` meet along ``axis``.

    ``x`` is None when the fitted curves never cross in ``x_range``; ``winner`` then names the series
    faster everywhere there. ``low``/``high`` are the bootstrap interval of the crossing,
    ``never_fraction`` the share of bootstrap resamples in which the curves do not cross in range.
    ``empirical`` lists crossings between measured points (log-log interpolation), if both series
    were measured at the same values of ``axis`` with the other sizes as in ``fixed``.
    """

    axis: str
    fixed: dict
    a: str
    b: str
    x: Optional[float]
    roots: list
    low: Optional[float]
    high: Optional[float]
    never_fraction: float
    winner_below: Optional[str]
    winner_above: Optional[str]
    winner: Optional[str]
    x_range: tuple
    empirical: list

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(self).items()}


def _log_ratio(fit_a, fit_b, axis, fixed, x, prices, theta_a=None, theta_b=None):
    config = {**fixed, axis: x}
    args = (config["d_model"], config["n_layers"], config["batch_size"])
    return (np.log(fit_a.latency_s(*args, theta=theta_a) * prices[0])
            - np.log(fit_b.latency_s(*args, theta=theta_b) * prices[1]))


def _brackets(values, grid):
    positive = values > 0
    return [(grid[i], grid[i + 1]) for i in np.flatnonzero(positive[:-1] != positive[1:])]


def crossover(fit_a: SeriesFit, fit_b: SeriesFit, axis: str = "batch_size", *, d_model: float = 128,
              n_layers: float = 128, batch_size: float = 1, x_range: Optional[tuple] = None,
              prices: tuple = (1.0, 1.0), n_grid: int = 128) -> Crossover:
    """Solve ``log t_a(x) = log t_b(x)`` along ``axis`` on the fitted models, with a bootstrap interval.

    Parameters
    ----------
    fit_a, fit_b : SeriesFit
        Any two series (e.g. the CPU of one machine and the GPU of another).
    axis : {"batch_size", "d_model", "n_layers"}
        The size that varies (continuously); the other two are fixed by the keyword arguments.
    x_range : (float, float), optional
        Where to look; default: the values of ``axis`` measured in either series.
    prices : (float, float)
        Multipliers of each latency (prices per hour give the cost crossover).
    n_grid : int
        Log-spaced grid scanned for sign changes before :func:`scipy.optimize.brentq` refines a root.
    """
    if axis not in AXES:
        raise AnalysisError(f"unknown axis {axis!r}; expected one of {AXES}")
    if fit_a.statistic != fit_b.statistic:
        raise AnalysisError(f"{fit_a.label} is fitted on the {fit_a.statistic}, {fit_b.label} on the "
                            f"{fit_b.statistic}: fit both on the same statistic to compare them")
    fixed = dict(d_model=d_model, n_layers=n_layers, batch_size=batch_size)
    fixed.pop(axis)
    if x_range is None:
        values = np.concatenate([fit_a.points[axis], fit_b.points[axis]])
        x_range = (float(values.min()), float(values.max()))
    lo, hi = map(float, x_range)
    if not 0 < lo < hi:
        raise AnalysisError(f"x_range must be increasing and positive, got {x_range}")
    grid = np.linspace(np.log(lo), np.log(hi), n_grid)

    def solve(theta_a=None, theta_b=None, values=None):
        def g(u):
            return _log_ratio(fit_a, fit_b, axis, fixed, np.exp(u), prices, theta_a, theta_b)

        values = g(grid) if values is None else values
        return values, [float(np.exp(optimize.brentq(g, u0, u1))) for u0, u1 in _brackets(values, grid)]

    values, roots = solve()
    x = roots[0] if roots else None
    low = high = None
    never = np.nan
    if fit_a.draws is not None and fit_b.draws is not None:
        n = min(len(fit_a.draws), len(fit_b.draws))
        draws_a, draws_b = fit_a.draws[:n], fit_b.draws[:n]
        grids = _log_ratio(fit_a, fit_b, axis, fixed, np.exp(grid), prices, draws_a, draws_b)
        picked = []
        for r in range(n):
            if not _brackets(grids[r], grid):
                continue
            found = solve(draws_a[r], draws_b[r], grids[r])[1]
            picked.append(min(found, key=lambda v: abs(np.log(v / x))) if x else found[0])
        never = 1 - len(picked) / n
        if picked and x is not None:
            tail = 50 * (1 - min(fit_a.level, fit_b.level))
            low, high = (float(v) for v in np.percentile(picked, [tail, 100 - tail]))
    name = lambda v: fit_a.label if v < 0 else fit_b.label  # noqa: E731 - negative log ratio: a is faster
    return Crossover(axis=axis, fixed=fixed, a=fit_a.label, b=fit_b.label, x=x, roots=roots, low=low,
                     high=high, never_fraction=float(never),
                     winner_below=name(values[0]) if roots else None,
                     winner_above=name(values[-1]) if roots else None,
                     winner=None if roots else name(values[0]), x_range=(lo, hi),
                     empirical=empirical_crossover(fit_a.points, fit_b.points, axis, prices=prices, **fixed))


def empirical_crossover(points_a: pd.DataFrame, points_b: pd.DataFrame, axis: str = "batch_size",
                        prices: tuple = (1.0, 1.0), **fixed) -> list:
    """Crossings between measured points: where ``t_a / t_b`` changes sign in log, interpolated
    linearly in log-log between adjacent values of ``axis`` measured in both series.

    ``fixed`` gives the other two sizes (``d_model=128, n_layers=128``, say); returns a list of roots.
    """
    curves = []
    for points, price in zip((points_a, points_b), prices):
        mask = np.ones(len(points), bool)
        for name, value in fixed.items():
            mask &= points[name].to_numpy() == value
        curves.append(points[mask].groupby(axis)["median_s"].median() * price)
    return curve_crossings(*curves)


def curve_crossings(first: pd.Series, second: pd.Series) -> list:
    """Where two measured curves (Series indexed by the swept size) cross: the values of the index
    where ``first / second`` changes sign in log, interpolated linearly in log-log between adjacent
    values both curves hold (an exact tie counts as a crossing)."""
    joined = pd.concat([first, second], axis=1, join="inner").dropna().sort_index()
    u = np.log(joined.index.to_numpy(float))
    r = np.log(joined.iloc[:, 0].to_numpy(float) / joined.iloc[:, 1].to_numpy(float))
    roots = []
    for i in range(len(r) - 1):
        if r[i] == 0:
            roots.append(float(np.exp(u[i])))
        elif r[i] * r[i + 1] < 0:
            roots.append(float(np.exp(u[i] - r[i] * (u[i + 1] - u[i]) / (r[i + 1] - r[i]))))
    if len(r) and r[-1] == 0:
        roots.append(float(np.exp(u[-1])))
    return roots


def crossover_frontier(fit_a: SeriesFit, fit_b: SeriesFit, d_models: Sequence[float], *,
                       n_layers: float = 128, batch_range: Optional[tuple] = None, **options) -> pd.DataFrame:
    """The 2-D frontier: for each ``d_model``, the crossover batch size (with interval).

    Returns a DataFrame with d_model, n_layers, params (``n_layers * d_model**2``), batch_size (None
    where the curves do not cross in ``batch_range``), low, high, never_fraction, winner_below,
    winner_above, winner.
    """
    rows = []
    for d in d_models:
        c = crossover(fit_a, fit_b, "batch_size", d_model=d, n_layers=n_layers, x_range=batch_range, **options)
        rows.append(dict(d_model=d, n_layers=n_layers, params=n_layers * d * d, batch_size=c.x, low=c.low,
                         high=c.high, never_fraction=c.never_fraction, winner_below=c.winner_below,
                         winner_above=c.winner_above, winner=c.winner))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------- cost
def cost_per_million_samples(latency_s, batch_size, price_per_hour):
    """Cost of one million samples: ``latency_s / batch_size * 1e6 * price_per_hour / 3600``."""
    per_sample_s = np.asarray(latency_s, float) / np.asarray(batch_size, float)
    return per_sample_s * 1e6 * np.asarray(price_per_hour, float) / 3600


def cost_crossover(fit_a: SeriesFit, fit_b: SeriesFit, price_a_per_hour: float, price_b_per_hour: float,
                   axis: str = "batch_size", **options) -> Crossover:
    """Where the cost per sample of ``a`` and ``b`` meet (see :func:`crossover` for ``options``)."""
    if not (price_a_per_hour > 0 and price_b_per_hour > 0):
        raise AnalysisError("prices per hour must be positive")
    return crossover(fit_a, fit_b, axis, prices=(price_a_per_hour, price_b_per_hour), **options)


# ------------------------------------------------------------------------------------ predict
def predict(fits: Mapping[str, SeriesFit], d_model: int, n_layers: int, batch_size: int, *,
            workload: str = "forward", mode: str = "eager", dtype: str = "float32",
            regime: str = "latency", transfer: str = "device", batch_range: Optional[tuple] = None,
            axis: str = "batch_size") -> dict:
    """Predicted latency of one configuration on every fitted device, the winner and the crossover.

    Per (machine, device), the matching series with the most points is used.

    Returns
    -------
    dict
        ``devices``: one object per device with ``device``, ``machine``, ``series``, ``model``,
        ``latency_s``, its confidence interval ``latency_low_s``/``latency_high_s`` (bootstrap of the
        fitted curve), a prediction interval ``prediction_low_s``/``prediction_high_s`` (spread of the
        held-out errors: where a new measurement may land), ``cv_mape_pct`` and ``extrapolated``
        (outside the measured range); ``winner`` (series label), ``speedup`` (runner-up latency / winner
        latency), and ``crossover``: the batch size where the winner and the fastest series of the other
        kind of device (CPU against GPU; the runner-up if all are of one kind) swap, with
        interval (``None`` with fewer than two devices). The crossover is along ``axis`` (default
        ``batch_size``; ``d_model`` or ``n_layers`` hold the other two sizes at the given values),
        searched over ``batch_range`` (any axis; default: the measured range); its value is ``at``
        (and ``batch_size`` when that is the axis). ``crossovers`` lists the same for every pair of a
        CPU series and a GPU series (your own CPU from a quick run against a shipped GPU, say).
    """
    for name, value in dict(d_model=d_model, n_layers=n_layers, batch_size=batch_size).items():
        if not value > 0:
            raise AnalysisError(f"{name} must be positive, got {value}")
    wanted = dict(workload=workload, mode=mode, dtype=dtype, regime=regime, transfer=transfer)
    chosen = {}
    for fit in fits.values():
        if all(fit.key[k] == v for k, v in wanted.items()):
            device = (fit.key["machine"], fit.key["device"])
            if device not in chosen or len(fit.points) > len(chosen[device].points):
                chosen[device] = fit
    if not chosen:
        available = sorted({tuple(f.key[k] for k in wanted) for f in fits.values()})
        raise AnalysisError(f"no fitted series for {tuple(wanted.values())}; available: {available}")
    config = dict(d_model=d_model, n_layers=n_layers, batch_size=batch_size)
    devices = []
    for fit in chosen.values():
        low, high = fit.latency_interval_s(d_model, n_layers, batch_size)
        p_low, p_high = fit.prediction_interval_s(d_model, n_layers, batch_size)
        devices.append(dict(device=fit.key["device"], machine=fit.key["machine"], series=fit.label,
                            model=fit.model, latency_s=float(fit.latency_s(d_model, n_layers, batch_size)),
                            latency_low_s=low, latency_high_s=high, prediction_low_s=p_low,
                            prediction_high_s=p_high, cv_mape_pct=fit.cv_score(), statistic=fit.statistic,
                            extrapolated=not fit.in_range(**config)))
    devices.sort(key=lambda item: item["latency_s"])
    result = dict(config, workload=workload, mode=mode, dtype=dtype, regime=regime, devices=devices,
                  winner=devices[0]["series"], speedup=None, crossover=None, crossovers=[])
    if len(devices) > 1:
        result["speedup"] = devices[1]["latency_s"] / devices[0]["latency_s"]
        # The crossover that matters is CPU against GPU: the winner against the fastest series of the
        # other kind of device (the runner-up when every series is of one kind).
        kind = lambda item: item["device"].split(":")[0]  # noqa: E731
        rival = next((item for item in devices[1:] if kind(item) != kind(devices[0])), devices[1])

        def solve(a: str, b: str) -> dict:
            c = crossover(fits[a], fits[b], axis, d_model=d_model, n_layers=n_layers, batch_size=batch_size,
                          x_range=batch_range)
            out = dict(between=[c.a, c.b], axis=axis, at=c.x, low=c.low, high=c.high,
                       never_fraction=c.never_fraction, winner_below=c.winner_below,
                       winner_above=c.winner_above, winner_everywhere=c.winner,
                       range=list(c.x_range), empirical=c.empirical, fixed=c.fixed)
            if axis == "batch_size":
                out.update(batch_size=c.x, batch_range=list(c.x_range))
            return out

        result["crossover"] = solve(devices[0]["series"], rival["series"])
        # Every CPU against every GPU (e.g. your own CPU, from a quick run, against a shipped GPU).
        result["crossovers"] = [
            result["crossover"] if {a["series"], b["series"]} == set(result["crossover"]["between"])
            else solve(a["series"], b["series"])
            for a in devices if kind(a) == "cpu" for b in devices if kind(b) == "cuda"
        ]
    return result
