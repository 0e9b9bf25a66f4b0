"""The toy model's step costed from a device's calibration: what the ``calibrated`` latency model scales.

A smooth latency form (:mod:`crossover.fit.latency_models`' rooflines) cannot follow a BLAS's choice of
kernel by shape; the calibration measured that shape directly (matrix products over a grid of
``(M, K, N)``, hot and cold; elementwise ops by size; per-op dispatch). :func:`toy_parts` costs one
step of :class:`crossover.measurement.toy_model.ResidualMLP` on a profile (:func:`crossover.opcost.module_predict.step_prediction`
on its traced ops, once with the weights hot and once cold) and splits it into three parts:

- ``floor``: what every op costs however small (dispatch), plus the host work no op records (module
  calls, events);
- ``memory``: the time beyond their floor of the ops the calibration costs by bytes (the toy model's
  ReLU and residual add);
- ``compute``: that of the matrix products, costed on the calibration's grids with the weights hot or
  cold (a matrix-vector product's weight streaming included: the grid measured it).

The ``calibrated`` latency model fits how much each part costs inside a sweep's steps relative to the
calibration's tight loops, and where the weights stop being warm (see
:func:`crossover.fit.latency_models.evaluate`). A step is a sum over layers on a CPU, so the parts of
``n_layers`` layers follow from those of one and two (traced on the meta device: nothing is allocated).

On a GPU the step is ``max(host, device)``, not a sum of parts: the ``calibrated`` model is a CPU
series' candidate only (:func:`calibration_for_rows`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import AnalysisError
from ..opcost.profiles import PROFILE_NAME, Profile, load_profile, shipped_profile_files
from ..results.side_files import side_files

__all__ = ["RUN_CALIBRATION_DIR", "PARTS", "WARMTH", "part_names", "toy_parts", "core_cache_bytes",
           "calibration_for_rows", "resolve_calibration", "profile_digest", "NEEDS_CALIBRATION", "gemm_layers",
           "GPU_ONE_ROW_PATH_WIDTH", "GPU_ONE_ROW_PATH_ROWS"]

#: The three parts of a calibrated step.
PARTS = ("floor", "memory", "compute")
#: How the matrix products' weights are costed: the same weight every call, or cycled through DRAM.
WARMTH = ("hot", "cold")
_CACHE: dict = {}  # profile token -> {(d_model, batch_size, workload, dtype): {part name: [one layer, two layers]}}
_TRACES: dict = {}  # (d_model, n_layers, batch_size, workload, dtype) -> a traced step (see _traced)


#: The parts of a step on a GPU: the host's launches and overheads, and the device's kernels.
GPU_PARTS = ("host_s", "device_s", "sync_s")


def part_names(device: str = "cpu") -> tuple:
    """The feature names of :func:`toy_parts`: on a CPU ``("floor_hot_s", "memory_hot_s", ...,
    "compute_cold_s")``, on a GPU :data:`GPU_PARTS`."""
    if str(device).startswith("cuda"):
        return GPU_PARTS
    return tuple(f"{part}_{warmth}_s" for warmth in WARMTH for part in PARTS)


def _token(profile: Profile) -> tuple:
    return (profile.path, profile.label) if profile.path else (id(profile), profile.label)


def _traced(d_model: int, n_layers: int, batch_size: int, workload: str, dtype: str) -> tuple:
    """One traced step of a ResidualMLP (rows, module calls, parameters, parameter bytes), cached per
    size: the trace does not depend on the profile, so every profile costs the same trace. Built from
    a few real traces (:func:`crossover.fit.toy_trace.toy_trace`: the same rows, without tracing
    each of the thousands of sizes a crossover search or a speed-up map asks about)."""
    key = (d_model, n_layers, batch_size, workload, dtype)
    if key not in _TRACES:
        from .toy_trace import toy_trace

        _TRACES[key] = toy_trace(d_model, n_layers, batch_size, workload, dtype)
    return _TRACES[key]


def _stored_parts(profile: Profile) -> dict:
    """This profile's parts computed before, in this process or (through the fit cache's folder, when
    the cache is on) by an earlier one: keyed by the profile file's digest and the costing code's."""
    token = _token(profile)
    if token not in _CACHE:
        from . import cache

        stored = cache.load(_parts_key(profile)) if cache.enabled() and profile.path else None
        _CACHE[token] = stored if isinstance(stored, dict) else {}
    return _CACHE[token]


def _parts_key(profile: Profile) -> str:
    from . import cache

    return "toyparts-" + hashlib.sha256((cache.code_digest() + profile_digest(profile)).encode()).hexdigest()


def _save_parts(profile: Profile) -> None:
    from . import cache

    if cache.enabled() and profile.path:
        cache.store(_parts_key(profile), _CACHE[_token(profile)])


def _one_and_two_layers(profile: Profile, d_model: int, batch_size: int, workload: str, dtype: str) -> tuple:
    """Each part's seconds for a ResidualMLP of one and of two layers (cached per profile and size),
    and whether it was computed now (not found in the cache)."""
    stored = _stored_parts(profile)
    key = (d_model, batch_size, workload, dtype)
    if key in stored:
        return stored[key], False
    from ..opcost.module_predict import step_prediction

    out = {name: [0.0, 0.0] for name in part_names(profile.device)}
    for i, n_layers in enumerate((1, 2)):
        rows, calls, n_params, param_bytes = _traced(d_model, n_layers, batch_size, workload, dtype)
        if profile.device != "cpu":  # a GPU step: the host's part and the device's, overlapped
            step = step_prediction(profile, rows, module_calls=calls, n_params=n_params, param_bytes=param_bytes, top=0)
            for name in GPU_PARTS:
                out[name][i] = step[name]
            continue
        for warmth in WARMTH:
            step = step_prediction(profile, rows, module_calls=calls, n_params=n_params, param_bytes=param_bytes,
                                   weights=warmth, top=0)
            for part, share in zip(PARTS, ("launch_share", "memory_share", "compute_share")):
                out[f"{part}_{warmth}_s"][i] = step["latency_s"] * step[share]
    stored[key] = out
    return out, True


#: Batch sizes up to this are costed exactly (each integer traced); above it, at geometric knots.
EXACT_BATCH_MAX = 32
#: Knots per octave of batch size above :data:`EXACT_BATCH_MAX` (9% apart).
KNOTS_PER_OCTAVE = 8


def _batch_knots(B: np.ndarray) -> tuple:
    """The knots below and above each batch size and its weight toward the upper one (linear in B).

    Integer knots up to :data:`EXACT_BATCH_MAX`, then ``EXACT_BATCH_MAX * 2**(k / KNOTS_PER_OCTAVE)``
    rounded to integers: a crossover search over batches 1-2048 traces the toy about 80 times, not
    once per integer it passes.
    """
    B = np.asarray(B, dtype=float)
    k = np.log2(np.maximum(B, EXACT_BATCH_MAX) / EXACT_BATCH_MAX) * KNOTS_PER_OCTAVE
    geometric = B > EXACT_BATCH_MAX
    lower = np.where(geometric, np.round(EXACT_BATCH_MAX * 2 ** (np.floor(k) / KNOTS_PER_OCTAVE)), np.floor(B))
    upper = np.where(geometric, np.round(EXACT_BATCH_MAX * 2 ** ((np.floor(k) + 1) / KNOTS_PER_OCTAVE)),
                     np.floor(B) + 1)
    lower = np.minimum(lower, np.floor(B))  # rounding never puts the lower knot above the size: an integer below
    upper = np.maximum(upper, lower + 1)
    return lower, upper, np.clip((B - lower) / (upper - lower), 0.0, 1.0)


def toy_parts(profile: Profile, d_model, n_layers, batch_size, workload: str = "forward",
              dtype: str = "float32") -> dict:
    """Each part of one step of the toy model on ``profile``, its weights hot and cold.

    Parameters
    ----------
    profile : Profile
        A calibration profile (``crossover calibrate``): on a CPU the parts are the floor, the
        elementwise ops and the matrix products, hot and cold; on a GPU the host's launches and
        overheads, the device's kernels and the synchronisation (:data:`GPU_PARTS`).
    d_model, n_layers, batch_size : int, float or arrays
        The sizes (broadcast together); between integers, interpolated between the integers around.
    workload : {"forward", "train"}
    dtype : str
        The weights' and input's dtype (``"float32"``, ``"float16"``, ``"bfloat16"``).

    Returns
    -------
    dict
        :func:`part_names` -> float array of seconds per step, broadcast over the sizes:
        ``parts(L) = parts(1) + (L - 1) * (parts(2) - parts(1))``.

    """
    d, L, B = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (d_model, n_layers, batch_size)))
    if not (np.all(d >= 1) and np.all(B >= 1)):
        raise ValueError("d_model and batch_size must be at least 1")
    out = {name: np.zeros(d.shape) for name in part_names(profile.device)}
    # A size between knots (a crossover's root finder asks for them) is interpolated between the knots
    # around it, bilinearly in (d_model, batch_size): the knots are the integers, and past
    # EXACT_BATCH_MAX batch sizes a geometric series (KNOTS_PER_OCTAVE to an octave), along which a
    # step's parts change smoothly (the calibration's own grids are coarser).
    d0 = np.floor(d)
    B0, B1, B_up = _batch_knots(B)
    new = False
    for d_corner, d_weight in ((d0, 1 - (d - d0)), (d0 + 1, d - d0)):
        for B_corner, B_weight in ((B0, 1 - B_up), (B1, B_up)):
            weight = d_weight * B_weight
            for dv, bv in {(int(a), int(b)) for a, b, w in zip(d_corner.ravel(), B_corner.ravel(), weight.ravel()) if w > 0}:
                where = (d_corner == dv) & (B_corner == bv) & (weight > 0)
                parts, computed = _one_and_two_layers(profile, dv, bv, workload, dtype)
                new = new or computed
                for name, (one, two) in parts.items():
                    out[name][where] += weight[where] * (one + (L[where] - 1) * (two - one))
    if new:
        _save_parts(profile)
    return out


#: One core's private cache where a profile records none (profiles before ``cache_bytes``): 512 KiB,
#: the L2 of AMD's Zen 2 and 3 cores (the VM's hosts differ: the shipped profiles record 1 MiB a core).
DEFAULT_PRIVATE_CACHE_BYTES = 2**19


def core_cache_bytes(profile: Profile) -> float:
    """One core's private cache (bytes) on ``profile``'s machine.

    ``crossover calibrate`` records the private caches of the threads it ran (``cache_bytes``, one L2
    per thread, from sysfs) and the threads: their ratio. With no thread count, ``cache_bytes`` as
    recorded; with neither, :data:`DEFAULT_PRIVATE_CACHE_BYTES`.
    """
    if profile.cache_bytes:
        return float(profile.cache_bytes) / max(profile.threads or 1, 1)
    return float(DEFAULT_PRIVATE_CACHE_BYTES)


def profile_digest(profile: Optional[Profile]) -> str:
    """A digest of the profile's file (what a fit on its features depends on); ``""`` for none."""
    if profile is None:
        return ""
    if profile.path and Path(profile.path).is_file():
        return hashlib.sha256(Path(profile.path).read_bytes()).hexdigest()
    return repr(profile.to_json())


#: Where a results directory keeps the calibration measured with it (``crossover calibrate --out RUN/calibration``).
RUN_CALIBRATION_DIR = "calibration"
#: What asking for the ``calibrated`` model without a calibration says.
NEEDS_CALIBRATION = ("the 'calibrated' models need a calibration profile of the series' machine and device: "
                     f"'crossover calibrate --device cpu|cuda --out RESULTS/{RUN_CALIBRATION_DIR}' beside its results")


def _candidates(frame) -> list:
    """Profile files to try for rows: the run's own calibration, then shipped ones."""
    directories = frame["results_dir"].dropna().unique() if "results_dir" in frame else []
    files = side_files(directories, PROFILE_NAME) + shipped_profile_files()
    return [f for f in dict.fromkeys(files) if f.is_file()]


def calibration_for_rows(frame) -> Optional[Profile]:
    """The profile of these rows' machine and device whose calibration costs their steps, or None.

    The first ``profile.json`` in their results directory's ``calibration/`` (the calibration measured
    with the run: ``crossover calibrate --out RUN/calibration``), beside their results or in the
    directory above, else among the shipped ones (``experiments/profiles``), whose machine and device are the rows' and whose thread count is
    theirs (when both are known; a GPU series' profile is its GPU's).
    """
    if frame.empty or not {"machine", "device"} <= set(frame.columns):
        return None
    first = frame.iloc[0]
    device = str(first["device"])
    threads = int(first["threads"]) if "threads" in frame and np.isfinite(float(first["threads"] or np.nan)) else 0
    if device != "cpu":
        threads = 0  # a GPU series' thread count is its host's, not what the GPU profile was measured at
        if "mode" in frame and str(first["mode"]) != "eager":
            return None  # CUDA graphs and compiled steps launch otherwise than the calibration's eager ops
    for file in _candidates(frame):
        try:
            profile = load_profile(file)
        except Exception:  # an unreadable profile is no calibration for these rows
            continue
        if (profile.machine, profile.device) == (str(first["machine"]), device) and \
                (not threads or not profile.threads or profile.threads == threads):
            return profile
    return None


#: On a GPU, a product this narrow (weights of at most this many columns and rows) with at most
#: :data:`GPU_ONE_ROW_PATH_ROWS` rows stays on cuBLAS's one-row host path and pays no matrix-matrix cost.
#: Read off the bias-free product primitives (``matmul_host``) of the H100's fourth and fifth CUDA
#: calibrations, each cell's median against the same weight's one-row cell: a 64 × 64 weight +0.2-1.3 µs
#: at 2 and 8 rows, +3.7-5.9 µs at 32-512 rows; a 128 × 128 weight +6.0-6.1 µs at 2 rows (+40 at 8, another
#: kernel; +1.0-5.9 from 32 rows) (``experiments/results/intel-xeon-2c/logs/gemm_one_row_path_1129.log``).
#: Only widths 64 and 128 and rows 8 and 32 bound it: widths 65-127 and rows 9-31 were never timed, and
#: the rule puts them past the path. Read off forward float32 products, as every toy GPU series is.
GPU_ONE_ROW_PATH_WIDTH = 64
GPU_ONE_ROW_PATH_ROWS = 8


def gemm_layers(batch_size, d_model, n_layers, device: str = "cpu") -> np.ndarray:
    """The layers of a toy step that pay the matrix-matrix cost (``gemm_layer_s``): every layer once a
    product has more than one row, except, on a GPU, a product of at most :data:`GPU_ONE_ROW_PATH_ROWS`
    rows over a weight at most :data:`GPU_ONE_ROW_PATH_WIDTH` wide, which cuBLAS runs on its one-row path.

    Parameters
    ----------
    batch_size, d_model, n_layers : array_like
        The toy's sizes (a product's rows are the batch, its weight ``d_model`` square).
    device : str
        The calibration's device (``"cpu"`` or ``"cuda"``).

    Returns
    -------
    numpy.ndarray
        Layers per step, broadcast over the sizes.
    """
    batch, width = np.asarray(batch_size, dtype=float), np.asarray(d_model, dtype=float)
    pays = batch > 1
    if device != "cpu":
        pays = pays & ~((batch <= GPU_ONE_ROW_PATH_ROWS) & (width <= GPU_ONE_ROW_PATH_WIDTH))
    return pays * np.asarray(n_layers, dtype=float)


def calibrated_gpu_latency_s(p: dict, X) -> np.ndarray:
    """The ``calibrated-gpu`` model: a synchronised GPU step from its calibrated parts (pure).

    ``t = step_s + sync + smax(host_scale · host + gemm_layer_s · gemm_layers, device_scale · device)``:
    the host launches the kernels while the device runs them (the larger of the two bounds the step,
    smoothly near equality), then the step waits for the device. ``host`` is the launches, dispatches
    and module calls as the calibration's throughput-regime primitives cost them, ``device`` the
    kernels' CUDA-event times; the scales carry them into the regime a measured step is in (launches in
    a synchronised step cost more than queued ones: the toy's eager series on the H200 fits ~10 µs a
    kernel against 7.1 µs calibrated), ``step_s`` what a step pays once beyond the calibration's sync.

    ``gemm_layer_s`` is the host's extra per layer once a product has more than one row
    (``gemm_layers``: the layers at batch > 1, less those cuBLAS keeps on its one-row path, at most 8 rows
    over a weight at most 64 wide: :func:`gemm_layers`), the CPU ``calibrated`` model's term: cuBLAS
    issues a one-row product on a cheaper path. The bias-free product primitive (``matmul_host``, CUDA
    calibrations since the H100's fourth visit) reads it on the H100 host: 10.0-10.8 µs a call at one
    row, 13.2-17.2 µs at 2, 32, 128 and 512 rows of a 128² weight (53 µs at 8: another kernel). A
    profile without that grid costs every row count alike; the term then carries the difference, 4.0-5.1
    µs a layer in the toy's GPU series of the H200 and of the H100's first three visits.
    """
    if not hasattr(X, "host_s"):
        raise AnalysisError(NEEDS_CALIBRATION + " (features(..., calibration=a GPU profile))")
    host, device = p["host_scale"] * X.host_s, p["device_scale"] * X.device_s
    if "gemm_layer_s" in p:
        host = host + p["gemm_layer_s"] * X.gemm_layers
    return p["step_s"] + X.sync_s + smooth_max(host, device, HOST_DEVICE_POWER)


#: How sharply a GPU step goes from host-bound to device-bound (the smooth maximum's exponent): the
#: two overlap, so the step is close to the larger, unlike compute and memory inside one kernel.
HOST_DEVICE_POWER = 8.0


def smooth_max(a, b, power):
    """``(a^p + b^p)^(1/p)``, computed without overflow: ``max(a, b)`` for a large ``power``."""
    top = np.maximum(a, b)
    return top * ((a / top) ** power + (b / top) ** power) ** (1 / power)


def resolve_calibration(calibration, frame) -> Optional[Profile]:
    """``calibration`` itself, or :func:`calibration_for_rows` of ``frame`` where it is ``"auto"``."""
    if isinstance(calibration, str) and calibration == "auto":
        return calibration_for_rows(frame)
    return calibration

