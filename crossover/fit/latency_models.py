"""The latency models: their forms, their parameters, and fitting one model to one series' points.

A latency model predicts the seconds of one step from the sizes ``(d_model, n_layers, batch_size)``
and the work they imply (FLOPs and bytes from :func:`crossover.measurement.toy_counts.work_per_step`, the one home of
those counts). All are fitted on relative error (log space, robust ``soft_l1`` loss, with
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
    pack        compute -> compute + weight bytes / pack rate for batch > 1: the matrix-matrix kernel
                packs each layer's weights before it multiplies, a cost that grows with d² (on this
                VM, the per-layer time at d_model 512 triples from batch 1 to 16 while the FLOPs
                alone would add a third)
    width       P -> P * d / (d + d_half): small matrices run below the peak rate in width as in batch
    async       layer -> smax(layer, kernel + smax(F / P, M / BW)): the host launches asynchronously,
                so a GPU step costs the larger of the host's launch time and the device's kernel time
                (``kernel`` a per-layer device cost besides compute and memory), not their sum
    serial      the smooth-max exponent p = 1: compute and memory time add up (a CPU that packs or
                streams the weights, then multiplies)

Apart from the rooflines, ``calibrated`` (a CPU series with a calibration profile, see
:mod:`crossover.fit.calibrated_model`) takes the shape of a step from the device's calibration: the toy model
costed op by op with its weights hot and cold, split into a floor (dispatch and host overheads), the
elementwise ops and the matrix products. It fits how much each part costs in the sweep's steps relative
to the calibration's tight loops, and where the weights go cold::

    calibrated  t = sum over parts of scale_part * ((1 - c) * part_hot + c * part_cold)
                    + L * gemm_layer * (B > 1)
                c logistic in log(W) around min(warm_bytes * (Wl / 256 KiB)^warm_exponent, LLC)
                scale_floor = floor_scale + (floor_evicted_scale - floor_scale) * (1 - exp(-Wl / C))

(``W`` the model's and ``Wl`` one layer's weight bytes, ``C`` one core's private cache). Two costs
of a step that a tight loop of one op hides (``experiments/bench_in_model.py --only toy``, the toy
model's layers against their matrix products alone): the host work between the matrix products
(module calls, dispatch, the elementwise ops) grows by half from small layers to layers the size of
a private cache (and further past it), whose weights stream through that cache and evict the
interpreter's working set, so the floor has its own scale past it; and from batch 2 it steps up by a
few µs per layer, as a matrix-matrix kernel replaces the matrix-vector one (``gemm_layer``; one
step for all widths, a simplification). The library's choice of kernel by shape is in the
calibration's grids, which a smooth form cannot follow; nothing past the calibrated grids is
extrapolated from the sweep's own points, so holding out a whole axis value inside the measured
range costs it little. Holding out batch 1 whole leaves ``gemm_layer`` indistinguishable from the
floor: that fold extrapolates.

``cache`` and ``ramp`` combine (``roofline+cache+ramp``): in cache the weights stream at one
bandwidth; out of it at a bandwidth that rises with the layer's size (on this VM, 5 GB/s for 64 KB
layers, 12 GB/s for 4 MB ones), the measured shape of the streaming rate.

``F`` and ``M`` are the FLOPs and bytes of one layer (``2 B d²`` and ``(d² + 7 B d)·elt`` for a
forward pass), ``L`` the number of layers, and ``smax(c, m) = (c^p + m^p)^(1/p)`` a smooth maximum
(``p = SMOOTH_MAX_P`` unless fitted). :func:`default_models` gives a device's candidates
(:data:`MODELS`, and :data:`CPU_MODELS` for a CPU); which one a series uses is chosen by grouped
cross-validation (:mod:`crossover.fit.series_fit`), not by in-sample fit. ``gemm`` alone is no default
candidate: on the CPU it is real (the step from batch 1 to 2 shows in a back-to-back
micro-benchmark), but on the shipped H100 data ``roofline+gemm`` wins by absorbing the drift between
two runs (its batch > 1 points were re-measured in a slower run than the batch-1 sweeps), which
moves the fitted crossover away from the measured one. It is one term of the CPU candidate, beside
packing and in-cache activations, which a quick run measured in one sitting identifies. Ask for
any model with ``models=`` / ``--models``.

Pure computation on arrays; the series, cross-validation and bootstrap are :mod:`crossover.fit.series_fit`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Mapping, Optional, Sequence

import numpy as np

from .calibrated_model import NEEDS_CALIBRATION, calibrated_gpu_latency_s, core_cache_bytes, gemm_layers
from .calibrated_model import smooth_max as _smooth_max
from ..axes import WORKLOADS
from ..errors import AnalysisError
from ..measurement.toy_counts import work_per_step
from ..results.columns import SIZE_COLUMNS
from .trust_region import forward_differences, least_squares

__all__ = ["AXES", "PARAMS", "MODELS", "CPU_MODELS", "CALIBRATED", "CALIBRATED_GPU", "CALIBRATED_MODELS", "default_models", "SMOOTH_MAX_P", "PARAMETER_PEAKS",
           "model_parameters", "step_counts", "features", "evaluate", "model_latency_s", "peak_kind", "upper_bounds",
           "fit_parameters", "initial_guesses"]

#: The sizes a latency model takes, in the order it takes them.
AXES = SIZE_COLUMNS
SMOOTH_MAX_P = 3.0  # exponent of the smooth max of compute and memory time
#: Width (natural-log units of weight bytes) of the in-cache -> DRAM transition. On the VM (32 MB L3
#: shared with its neighbours) the per-layer time of a batch-1 model is flat up to 8.4 MB of weights
#: and at its out-of-cache value from 16.8 MB on, at every d_model measured (128, 256, 512): the
#: transition spans less than a factor of 2. With 1.0 the logistic still gave a 47 MB model a third of
#: the in-cache bandwidth, and missed (768, 20, 1) by -21% in two runs; with 0.5, by 6-9%
#: (``experiments/bench_heldout.py``, runs of 30 short rounds).
CACHE_WIDTH = 0.5
#: Width of the out-of-cache bandwidth's rise with one layer's weight bytes (``ramp``): gradual, from
#: 5.8 GB/s at 256 KB layers to 12.8 GB/s at 4 MB ones on the VM. At the cache's 0.5 the held-out
#: median error was 4.0-6.5% in three runs, at 1.0 3.4-5.3% (at 1.5 the same).
RAMP_WIDTH = 1.0
#: Width (natural-log units of weight bytes) of ``calibrated``'s hot -> cold transition, fixed rather
#: than fitted (the quick suite has few sizes near the last-level cache to fit it on): from 10% to 90%
#: cold over a factor of 3 in weight bytes.
WARM_WIDTH = 0.25
#: One layer's weight bytes at which ``calibrated``'s warm size is ``warm_bytes``.
WARM_LAYER_BYTES = 256 * 2**10


@dataclass(frozen=True)
class _Param:
    label: str
    unit: str
    scale: float  # SI value * scale = value in `unit`
    lo: float  # bounds in SI units
    hi: float
    macro: str = ""  # the paper's macro suffix (crossover.paper.fits: ``\\<Role><macro>``)


#: Every parameter: label, display unit, SI -> unit scale, the bounds the fit searches within, and the
#: suffix of its macros in the paper. The one home of a parameter's name: the CLI, the figures and the
#: paper (which sets the label in LaTeX) all read it here.
PARAMS = {
    "step_s": _Param("per-step overhead", "µs", 1e6, 1e-9, 10.0, macro="Step"),
    "layer_s": _Param("per-layer overhead", "µs", 1e6, 1e-10, 0.1, macro="PerLayer"),
    "flops_per_s": _Param("compute rate", "GFLOP/s", 1e-9, 1e6, 1e17, macro="Rate"),
    "bytes_per_s": _Param("bandwidth", "GB/s", 1e-9, 1e6, 1e15, macro="Bandwidth"),
    "cache_bytes_per_s": _Param("in-cache bandwidth", "GB/s", 1e-9, 1e6, 1e15, macro="CacheBandwidth"),
    "dram_bytes_per_s": _Param("out-of-cache bandwidth", "GB/s", 1e-9, 1e6, 1e15, macro="DramBandwidth"),
    "cache_bytes": _Param("cache size (bandwidth midpoint)", "MB", 1e-6, 1e3, 1e13, macro="CacheSize"),
    "small_bytes_per_s": _Param("bandwidth, small layers", "GB/s", 1e-9, 1e6, 1e15, macro="SmallBandwidth"),
    "large_bytes_per_s": _Param("bandwidth, large layers", "GB/s", 1e-9, 1e6, 1e15, macro="LargeBandwidth"),
    "ramp_bytes": _Param("layer weight size (bandwidth midpoint)", "MB", 1e-6, 1e2, 1e12, macro="RampSize"),
    "act_bytes_per_s": _Param("activation bandwidth", "GB/s", 1e-9, 1e6, 1e15, macro="ActBandwidth"),
    "batch_half": _Param("Hockney n½ (batch for half the compute rate)", "samples", 1.0, 1e-3, 1e6, macro="BatchHalf"),
    "smooth_p": _Param("overlap exponent p (1: compute + memory, ∞: max)", "", 1.0, 1.0, 16.0, macro="OverlapP"),
    "gemm_layer_s": _Param("per-layer matrix-matrix cost (batch > 1)", "µs", 1e6, 1e-10, 0.1, macro="GemmLayer"),
    "pack_bytes_per_s": _Param("weight-packing rate (batch > 1)", "GB/s", 1e-9, 1e6, 1e15, macro="PackBandwidth"),
    "width_half": _Param("width for half the compute rate", "", 1.0, 1e-3, 1e6, macro="WidthHalf"),
    "kernel_s": _Param("per-layer device time besides compute and memory (async launches)", "µs", 1e6, 1e-10, 0.1, macro="KernelTime"),
    "floor_scale": _Param("dispatch and host overheads (× calibration)", "×", 1.0, 0.02, 50.0, macro="FloorScale"),
    "floor_evicted_scale": _Param("host overheads past one core's cache (× calibration)", "×", 1.0,
                                  0.02, 50.0, macro="FloorEvictedScale"),
    "memory_scale": _Param("elementwise ops (× calibration)", "×", 1.0, 0.02, 50.0, macro="MemoryScale"),
    "compute_scale": _Param("matrix products (× calibration)", "×", 1.0, 0.02, 50.0, macro="ComputeScale"),
    "warm_bytes": _Param("weights warm up to (midpoint, 256 KiB layers)", "MB", 1e-6, 1e4, 1e11, macro="WarmSize"),
    "warm_exponent": _Param("warm size's growth with the layer size (exponent)", "", 1.0, 1e-3, 4.0, macro="WarmExponent"),
    "host_scale": _Param("host launches and overheads (× calibration)", "×", 1.0, 0.02, 50.0, macro="HostScale"),
    "device_scale": _Param("device kernels (× calibration)", "×", 1.0, 0.02, 50.0, macro="DeviceScale"),
}
#: Fitted parameter -> the device peak (a key of :func:`crossover.fit.peaks.measure_peaks`' result) that
#: bounds it: a compute rate by the best matrix-product rate; a bandwidth by the in-cache copy bandwidth
#: (the fastest memory weights can be in), an out-of-cache one by the streaming bandwidth, and so is a
#: model's single ``bytes_per_s``, which serves its largest sizes, out of cache (see :func:`peak_kind`).
PARAMETER_PEAKS = {
    "flops_per_s": "flops_per_s",
    "bytes_per_s": "dram_bytes_per_s",
    "cache_bytes_per_s": "cache_bytes_per_s",
    "act_bytes_per_s": "cache_bytes_per_s",
    "small_bytes_per_s": "cache_bytes_per_s",
    "large_bytes_per_s": "cache_bytes_per_s",
    "pack_bytes_per_s": "cache_bytes_per_s",
    "dram_bytes_per_s": "dram_bytes_per_s",
}
#: Out-of-cache bandwidths: bounded by the streaming bandwidth whenever a model also has an in-cache one.
_OUT_OF_CACHE = ("dram_bytes_per_s", "small_bytes_per_s", "large_bytes_per_s")
#: Extra parameters of each refinement of the roofline (model names join them with "+").
_COMPONENTS = {
    "hockney": ("batch_half",),
    "cache": ("cache_bytes_per_s", "dram_bytes_per_s", "cache_bytes"),
    "ramp": ("small_bytes_per_s", "large_bytes_per_s", "ramp_bytes"),
    "split": ("act_bytes_per_s",),
    "overlap": ("smooth_p",),
    "gemm": ("gemm_layer_s",),
    "pack": ("pack_bytes_per_s",),
    "width": ("width_half",),
    "async": ("kernel_s",),
    "serial": (),
}


#: The parameters of the ``calibrated`` model (see the module docstring), and of its GPU form
#: (:func:`crossover.fit.calibrated_model.calibrated_gpu_latency_s`).
CALIBRATED = "calibrated"
CALIBRATED_GPU = "calibrated-gpu"
CALIBRATED_MODELS = (CALIBRATED, CALIBRATED_GPU)
_CALIBRATED_PARAMS = ("floor_scale", "floor_evicted_scale", "memory_scale", "compute_scale", "gemm_layer_s",
                      "warm_bytes", "warm_exponent")


def _expit(x):
    """``scipy.special.expit``, imported on first use (not at the top: ~0.1 s), then bound to this name."""
    global _expit
    from scipy.special import expit as _expit
    return _expit(x)


@functools.lru_cache(maxsize=None)
def model_parameters(name: str) -> tuple:
    """Parameter names (SI units, see :data:`PARAMS`) of latency model ``name``.

    Parameters
    ----------
    name : str
        ``"affine"`` or ``"roofline"`` joined with ``+`` to any of the refinements ``hockney``
        (compute rate grows with batch), ``cache`` (bandwidth depends on whether the model's weights
        fit in cache), ``ramp`` (bandwidth depends on the size of one layer's weights), ``split``
        (activations move at their own bandwidth), ``overlap`` (fitted smooth-max exponent),
        ``gemm`` (a per-layer cost paid only at batch > 1), ``pack`` (weight packing at batch > 1),
        ``width`` (compute rate grows with d_model), ``async`` (host launches overlap device
        kernels) and ``serial`` (compute and memory add up); or ``"calibrated"`` (the parts of a
        calibrated CPU step, scaled) or ``"calibrated-gpu"`` (a GPU step's host and device parts).

    Raises
    ------
    AnalysisError
        For a name that is none of these.
    """
    if name == CALIBRATED:
        return _CALIBRATED_PARAMS
    if name == CALIBRATED_GPU:
        return ("step_s", "host_scale", "device_scale", "gemm_layer_s")
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
    if {"cache", "ramp"} <= set(extra):  # out of cache, the layer size sets the bandwidth (the ramp's)
        names.remove("dram_bytes_per_s")
    return tuple(names)


#: Model name -> its parameters (SI units, see ``PARAMS``): the candidates cross-validation chooses from.
MODELS = {name: model_parameters(name) for name in (
    "affine", "roofline", "roofline+hockney", "roofline+cache", "roofline+cache+hockney",
    "roofline+cache+ramp+hockney+pack",
)}
#: Candidates added for a CPU series (see :func:`default_models`): the matrix-matrix kernel's set-up
#: and weight packing (``gemm``, ``pack``) are a CPU BLAS's, and activations small enough to stay in
#: a CPU's cache between layers move at their own rate (``split``). On the VM this model misses
#: held-out sizes by a median of 3.4-5.3% (worst 9.9-13.3%) in four of five quick runs
#: (``logs/bench_heldout.log``), against 6-8% (worst 22-24%) without the two terms when first compared
#: (three runs, cache width 0.5 for the ramp too); on the H100's GPU it would win by absorbing launch timing and drift with physically
#: meaningless bandwidths (a 117 GB/s "cache"), so a GPU series never gets it unless asked.
CPU_MODELS = ("roofline+cache+ramp+hockney+pack+split+gemm",)


def default_models(device: str, calibrated: bool = False) -> tuple:
    """The candidate models cross-validation chooses from for a series of ``device``: :data:`MODELS`,
    plus :data:`CPU_MODELS` for ``"cpu"``, plus ``"calibrated"`` (a CPU) or ``"calibrated-gpu"`` (a GPU)
    for a series with a calibration profile of its device (``calibrated=True``)."""
    cpu = str(device) == "cpu"
    return tuple(MODELS) + (CPU_MODELS if cpu else ()) + (((CALIBRATED if cpu else CALIBRATED_GPU),) if calibrated else ())


def peak_kind(param: str, names: Sequence[str]) -> Optional[str]:
    """Which device peak bounds parameter ``param`` of a model with parameters ``names``.

    :data:`PARAMETER_PEAKS`, except that a model with an in-cache bandwidth has its out-of-cache ones
    (``dram``, ``small``, ``large``) bounded by the streaming bandwidth (without a cache term the
    ramp's bandwidths serve in-cache sizes too). None for a parameter no peak bounds (overheads,
    sizes, exponents).
    """
    if "cache_bytes_per_s" in names and param in _OUT_OF_CACHE:
        return "dram_bytes_per_s"
    return PARAMETER_PEAKS.get(param)


def upper_bounds(model: str, peaks: Optional[Mapping[str, float]]) -> dict:
    """``{parameter: SI upper bound}`` of ``model``'s parameters from a device's ``peaks`` (SI, as
    :func:`crossover.fit.peaks.measure_peaks` or a spec sheet gives them): the bound of each parameter a
    peak bounds (:func:`peak_kind`) and the peak knows, never above :data:`PARAMS`' own bound. Empty
    without peaks."""
    names = model_parameters(model)
    bounds = {}
    for name in names:
        kind = peak_kind(name, names)
        value = (peaks or {}).get(kind) if kind else None
        if isinstance(value, (int, float)) and value > 0:
            bounds[name] = min(float(value), PARAMS[name].hi)
    return bounds


def _work(d_model, n_layers, batch_size, workload):
    if workload not in WORKLOADS:
        raise AnalysisError(f"unknown workload {workload!r}")
    d, L, B = (np.asarray(v, dtype=float) for v in (d_model, n_layers, batch_size))
    return work_per_step(d, L, B, workload)


def step_counts(d_model, n_layers, batch_size, workload="forward", bytes_per_element=4):
    """FLOPs and bytes of one step as floats, vectorised over the sizes.

    The counts of :func:`crossover.measurement.toy_counts.work_per_step` (the integer-checked ones are
    :func:`crossover.measurement.toy_counts.step_flops` and :func:`crossover.measurement.toy_counts.step_bytes`).

    Returns
    -------
    (flops, bytes) : float arrays
    """
    flops, weights, activations = _work(d_model, n_layers, batch_size, workload)
    return flops, (weights + activations) * bytes_per_element


def features(d_model, n_layers, batch_size, workload: str = "forward", bytes_per_element: int = 4, *,
             calibration=None, dtype: str = "float32"):
    """What every latency model reads of a size: per-layer FLOPs and bytes, weight bytes, batch.

    With a ``calibration`` (a CPU or GPU :class:`crossover.opcost.profiles.Profile`; its device decides which
    layers pay the matrix-matrix cost, :func:`crossover.fit.calibrated_model.gemm_layers`), also the parts of the step
    costed on it that the ``calibrated`` model scales (:func:`crossover.fit.calibrated_model.toy_parts` of the
    toy model in ``dtype``) and the profile's last-level cache.

    Returns
    -------
    types.SimpleNamespace
        ``L`` layers, ``B`` batch, ``flops`` of the step, per layer ``F`` FLOPs, ``Mw``/``Ma``/``M``
        weight, activation and all bytes, ``W`` the whole model's and ``Wl`` one layer's weight bytes, their
        logs (float arrays broadcast from the sizes); with a calibration ``floor_hot_s`` ... ``compute_cold_s``,
        ``llc_bytes``, ``core_cache_bytes`` (one core's private cache) and ``calibrated``'s terms of the sizes
        alone (a fit evaluates its model thousands of times on the same features: they are computed once).
    """
    flops, weights, activations = _work(d_model, n_layers, batch_size, workload)
    L, d = np.asarray(n_layers, dtype=float), np.asarray(d_model, dtype=float)
    elt = bytes_per_element
    X = SimpleNamespace(L=L, B=np.asarray(batch_size, dtype=float), flops=flops, F=flops / L,
                        Mw=weights * elt / L, Ma=activations * elt / L, M=(weights + activations) * elt / L,
                        W=L * d * d * elt, Wl=d * d * elt, d=d)
    X.log_W, X.log_Wl = np.log(X.W), np.log(X.Wl)
    if calibration is not None:
        from .calibrated_model import toy_parts

        parts = toy_parts(calibration, d_model, n_layers, batch_size, workload, dtype)
        shape = np.broadcast(L, X.B, d).shape
        for name, values in parts.items():
            setattr(X, name, np.broadcast_to(values, shape).astype(float))
        X.llc_bytes = np.full(shape, float(calibration.llc_bytes))
        X.core_cache_bytes = np.full(shape, core_cache_bytes(calibration))
        # a layer's weights over the warm size's reference, the share of the cache they turn over, the
        # layers that pay the matrix-matrix cost (see _calibrated)
        X.warm_layers, X.evicted = X.Wl / WARM_LAYER_BYTES, 1 - np.exp(-X.Wl / X.core_cache_bytes)
        X.gemm_layers = gemm_layers(X.B, X.d, X.L, calibration.device)
    return X


def evaluate(model: str, theta, X: SimpleNamespace) -> np.ndarray:
    """Predicted seconds per step of ``model`` with parameters ``theta`` at :func:`features` ``X``.

    ``theta`` is in SI units in the order of :func:`model_parameters`; a 2-D ``theta`` (one row per
    parameter set, e.g. bootstrap draws) gives one row of predictions per set.
    """
    theta = np.asarray(theta, dtype=float)
    if theta.ndim == 2:  # bootstrap draws: one row each, broadcast against the points
        p = dict(zip(model_parameters(model), theta.T[:, :, None]))  # column i: theta[:, i, None]
    else:
        p = dict(zip(model_parameters(model), theta))
    if model == CALIBRATED:
        return _calibrated(p, X)
    if model == CALIBRATED_GPU:
        return calibrated_gpu_latency_s(p, X)
    serial = "+serial" in model
    if "layer_s" not in p:
        return p["step_s"] + X.flops / p["flops_per_s"]
    rate = p["flops_per_s"] * (X.B / (X.B + p["batch_half"]) if "batch_half" in p else 1.0)
    if "width_half" in p:  # small matrices run below the peak rate in d as well as in batch
        rate = rate * X.d / (X.d + p["width_half"])
    if "ramp_bytes" in p:  # small layers stream slower than large ones (e.g. run on fewer threads)
        out_of_cache = _log_logistic(X.log_Wl, p["ramp_bytes"], p["small_bytes_per_s"], p["large_bytes_per_s"],
                                     RAMP_WIDTH)
    else:
        out_of_cache = p.get("dram_bytes_per_s", p.get("bytes_per_s"))
    if "cache_bytes" in p:  # whole model's weights in cache -> cache bandwidth, else out of cache
        bandwidth = _log_logistic(X.log_W, p["cache_bytes"], p["cache_bytes_per_s"], out_of_cache, CACHE_WIDTH)
    else:
        bandwidth = out_of_cache
    if "act_bytes_per_s" in p:
        memory = X.Mw / bandwidth + X.Ma / p["act_bytes_per_s"]
    else:
        memory = X.M / bandwidth
    compute, power = X.F / rate, p.get("smooth_p", 1.0 if serial else SMOOTH_MAX_P)
    if "pack_bytes_per_s" in p:  # a matrix-matrix kernel first packs the weights (batch > 1)
        compute = compute + (X.B > 1) * X.Mw / p["pack_bytes_per_s"]
    smooth = _smooth_max(compute, memory, power)
    if "gemm_layer_s" in p:
        smooth = smooth + (X.B > 1) * p["gemm_layer_s"]
    if "kernel_s" in p:  # asynchronous launches: the host's launches and the device's kernels overlap
        return p["step_s"] + X.L * _smooth_max(p["layer_s"], p["kernel_s"] + smooth, SMOOTH_MAX_P)
    return p["step_s"] + X.L * (p["layer_s"] + smooth)


def _calibrated(p, X):
    """The ``calibrated`` model (see the module docstring) at features ``X`` with a calibration."""
    if not hasattr(X, "floor_hot_s"):
        raise AnalysisError(NEEDS_CALIBRATION + " (features(..., calibration=profile))")
    middle = np.minimum(p["warm_bytes"] * X.warm_layers ** p["warm_exponent"], X.llc_bytes)
    cold = _expit((X.log_W - np.log(middle)) / WARM_WIDTH)
    warm = 1 - cold
    scales = dict(p, floor_scale=p["floor_scale"] + (p["floor_evicted_scale"] - p["floor_scale"]) * X.evicted)
    total = X.gemm_layers * p["gemm_layer_s"]
    for part in ("floor", "memory", "compute"):
        hot, chilled = getattr(X, f"{part}_hot_s"), getattr(X, f"{part}_cold_s")
        total = total + scales[f"{part}_scale"] * (warm * hot + cold * chilled)
    return total


def _log_logistic(log_size, middle, below, above, width):
    """``below`` for sizes well under ``middle``, ``above`` well over it; logistic in log size (given:
    ``log_size``) with ``width`` (natural-log units)."""
    weight = _expit((log_size - np.log(middle)) / width)
    log_below = np.log(below)
    return np.exp(log_below + weight * (np.log(above) - log_below))


def model_latency_s(model: str, params: Mapping[str, float], d_model, n_layers, batch_size,
                    workload: str = "forward", bytes_per_element: int = 4) -> np.ndarray:
    """Seconds per step that latency model ``model`` predicts with ``params`` (SI units, by name).

    Examples
    --------
    >>> float(model_latency_s("affine", {"step_s": 1e-3, "flops_per_s": 1e9}, 10, 5, 1))
    0.001001
    """
    theta = [params[name] for name in model_parameters(model)]
    return evaluate(model, theta, features(d_model, n_layers, batch_size, workload, bytes_per_element))


def initial_guesses(model, X, t):
    """A few initial guesses (SI) of ``model``'s parameters from the data's scale; the best local
    optimum of a fit from each wins (:func:`fit_parameters`)."""
    guess = {
        "step_s": 0.2 * t.min(), "layer_s": 0.3 * np.median(t / X.L),
        "flops_per_s": 2 * np.max(X.flops / t), "bytes_per_s": 2 * np.max(X.M * X.L / t),
    }
    bw = guess["bytes_per_s"]
    guess.update(cache_bytes_per_s=4 * bw, dram_bytes_per_s=bw, small_bytes_per_s=bw / 2, large_bytes_per_s=bw,
                 act_bytes_per_s=4 * bw, smooth_p=SMOOTH_MAX_P, gemm_layer_s=0.2 * guess["layer_s"],
                 pack_bytes_per_s=bw, width_half=64.0, kernel_s=0.1 * guess["layer_s"],
                 floor_scale=1.0, floor_evicted_scale=1.0, memory_scale=1.0, compute_scale=1.0, warm_exponent=0.5,
                 host_scale=1.0, device_scale=1.0)
    options = {"cache_bytes": np.quantile(X.W, [0.3, 0.7]), "ramp_bytes": np.quantile(X.Wl, [0.3, 0.7]),
               "batch_half": [1.0, 16.0], "warm_bytes": np.quantile(X.W, [0.3, 0.7])}
    starts = [dict(guess)]
    for name, values in options.items():
        if name in model_parameters(model):
            starts = [{**s, name: v} for s in starts for v in values]
    return [np.array([s[name] for name in model_parameters(model)]) for s in starts]


def fit_parameters(model: str, X: SimpleNamespace, t: np.ndarray, starts: Optional[Sequence] = None,
                   loss: str = "soft_l1", f_scale: float = 0.1,
                   peaks: Optional[Mapping[str, float]] = None, tol: float = 1e-6) -> np.ndarray:
    """Least-squares parameters (SI) of ``model`` on points ``X`` (see :func:`features`) timed ``t``.

    Minimises the robust ``loss`` of the log residuals within the bounds of :data:`PARAMS`, lowered
    to the device's ``peaks`` where given (:func:`upper_bounds`: no fitted rate above what the device
    can do), by scipy's least squares (:func:`crossover.fit.trust_region.least_squares`) on
    log-parameters, from each of ``starts`` (default: a few guesses from the data's scale); the best
    optimum wins, within ``tol`` (the relative change of the cost and of the log-parameters at which a
    fit stops). A looser tolerance than 1e-6 was tried for every fit: it changed which model grouped CV
    chose for the H100 host's series; a bootstrap's refits use
    :data:`crossover.fit.bootstrap.REFIT_TOL`.
    """
    names = model_parameters(model)
    upper = upper_bounds(model, peaks)
    lo = np.log([min(PARAMS[n].lo, upper.get(n, np.inf) / 10) for n in names])
    hi = np.log([upper.get(n, PARAMS[n].hi) for n in names])
    log_t = np.log(t)

    def residuals(phi):
        return np.log(evaluate(model, np.exp(phi), X)) - log_t

    def jacobian(phi):  # every perturbed parameter set in one evaluation (a 2-D theta, one row each)
        return forward_differences(lambda rows: np.log(evaluate(model, np.exp(rows), X)), phi, hi)

    best = None
    for start in initial_guesses(model, X, t) if starts is None else starts:
        x0 = np.clip(np.log(start), lo + 1e-6, hi - 1e-6)
        result = least_squares(residuals, x0, jac=jacobian, bounds=(lo, hi), loss=loss, f_scale=f_scale,
                               ftol=tol, xtol=tol, max_nfev=100 * len(names))
        if best is None or result.cost < best.cost:
            best = result
    return np.exp(best.x)
