"""A device's calibration profile: the per-op cost primitives that :mod:`crossover.opcost.op_costs` composes.

``crossover calibrate`` (:mod:`crossover.opcost.calibrate`) measures primitives into ``DIR/calibration.csv.gz``
and condenses them into ``DIR/profile.json``, read back here as a :class:`Profile`:

``overheads``
    Seconds per event that runs no kernel of note: ``dispatch_s`` (a tiny op), ``view_s`` (a view),
    ``module_call_s`` (calling an ``nn.Module``), ``grad_record_s`` (autograd's extra work per op of a
    forward pass that records a graph), ``backward_call_s`` and ``backward_op_s`` (the engine, once
    per ``backward()`` and per backward op), ``optimizer_step_s`` and ``optimizer_param_s`` (SGD's
    ``zero_grad`` + ``step``, once and per parameter), ``fresh_byte_s`` (per byte of outputs of 32 MiB
    or more, which a step faults in afresh) and ``event_s`` (per op or module call of a step: fitted
    on reference models); on CUDA also ``launch_s`` (host time per
    kernel launch), ``sync_s`` (one ``torch.cuda.synchronize``) and, from calibrations that time it,
    ``step_sync_s`` (what a synchronised step pays beyond its launches: one tiny kernel launched and
    waited for, less its dispatch: the launch's latency to an idle GPU and the host's wake-up).
``grids``
    :class:`Grid` of seconds over rows ``M`` × ``K·N``: ``"matmul"`` (a matrix product whose weight
    stays in cache: the same weight every call), ``"matmul_cold"`` (cycling over weight copies larger
    than the last-level cache), ``"matmul_outer"`` (over the inner dimension ``K`` × ``M·N`` instead:
    weight gradients ``grad.t() @ input`` at small batches), ``"conv"`` and ``"conv_backward"`` (``M``
    the output pixels of the batch, ``K·N`` = ``C_in·k²·C_out``: the implicit GEMM of a convolution,
    with the kernels PyTorch picks), ``"conv_native"`` and ``"conv_backward_native"`` (the same with
    oneDNN off: the im2col path PyTorch takes for a single small image, see
    :func:`crossover.opcost.op_costs.conv_backend`); the convolution grids come one per calibrated image side,
    named ``"conv@16"``, ``"conv@32"``, ...
``curves``
    :class:`Curve` of seconds against bytes moved (``elementwise``, ``reduction``, ``pool``,
    ``pool_backward``, ``copy``, ``rng``) or FLOPs (``attention``); on CUDA ``h2d`` against bytes copied.
``spread_rel``, ``noise_floor_rel``, ``model_error_rel``
    The calibration's round-to-round relative spread per family, its drift reference's, and the median
    leave-one-out relative error of composed predictions on the calibration's reference models.
``train_host_extra``, ``conv_forward_extra``, ``backward_extra``
    What composing ops costs beyond their calibration alone, fitted on the reference models: the extra
    share of a training step's autograd and optimizer host work, of forward convolutions' time, and of
    backward kernels' other than convolutions' (with ``event_s``, see :mod:`crossover.opcost.calibrate`).
``cache_bytes``
    The private caches of the threads used (L2 per core × threads): the ``calibrated`` toy model's warm size
    starts there (:func:`crossover.fit.calibrated_model.core_cache_bytes`).

Pure data and JSON I/O; nothing here measures. :func:`synthetic_profile` builds a profile from a few
numbers (tests, what-if questions).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from ..errors import ResultsError
from ..jsonable import schema_tag

__all__ = ["Curve", "Grid", "Profile", "log_between", "PROFILE_SCHEMA", "PROFILE_NAME", "CALIBRATION_CSV", "OVERHEADS",
           "load_profile", "load_profiles", "write_profile", "shipped_profile_files", "synthetic_profile",
           "isotonic", "BYTES_FAMILIES", "FLOPS_FAMILIES"]

#: The layout of profile.json and of ``crossover calibrate --json``.
PROFILE_SCHEMA = schema_tag("profile", 1)
PROFILE_NAME = "profile.json"
CALIBRATION_CSV = "calibration.csv.gz"
#: The overheads every profile has (0 where a profile lacks one).
OVERHEADS = ("dispatch_s", "view_s", "module_call_s", "grad_record_s", "backward_call_s", "backward_op_s",
             "optimizer_step_s", "optimizer_param_s", "fresh_byte_s", "event_s", "launch_s", "sync_s")
#: Curves against bytes moved, and against FLOPs.
BYTES_FAMILIES = ("elementwise", "reduction", "pool", "pool_backward", "copy", "rng", "h2d")
FLOPS_FAMILIES = ("conv", "conv_backward", "attention")  # convolutions: a fallback where no grid is


def log_between(x: float, x0: float, x1: float, y0: float, y1: float) -> float:
    """``y`` at ``x`` on the straight line through ``(x0, y0)`` and ``(x1, y1)`` in log-log scale, held at
    the nearer end outside ``[x0, x1]`` (pure): a cost between two calibrated sizes of a second dimension
    (a convolution grid's image side, an adaptive pooling's plane length)."""
    if x0 == x1 or y0 <= 0 or y1 <= 0:
        return y0
    w = min(max(math.log(x / x0) / math.log(x1 / x0), 0.0), 1.0) if x > 0 else 0.0
    return math.exp((1.0 - w) * math.log(y0) + w * math.log(y1))


def isotonic(values: Sequence[float], weights: Optional[Sequence[float]] = None) -> np.ndarray:
    """The non-decreasing sequence closest to ``values`` in weighted least squares (pool adjacent
    violators)."""
    values = np.asarray(values, dtype=float)
    weights = np.ones_like(values) if weights is None else np.asarray(weights, dtype=float)
    blocks = []  # [mean, weight, length]
    for value, weight in zip(values, weights):
        blocks.append([value, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean2, w2, n2 = blocks.pop()
            mean1, w1, n1 = blocks.pop()
            blocks.append([(mean1 * w1 + mean2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    return np.concatenate([np.full(n, mean) for mean, _, n in blocks]) if blocks else values


@dataclass(frozen=True)
class Curve:
    """Seconds against one size (bytes or FLOPs), interpolated linearly in log-log space.

    Below the smallest size the time is the first point's (the dispatch floor); above the largest it
    grows at ``rate`` size units per second (default: the last point's average rate, so time is
    proportional to size there; ``inf`` keeps it flat).
    """

    x: tuple
    time_s: tuple
    rate: Optional[float] = None

    def __post_init__(self):
        if not self.x or len(self.x) != len(self.time_s):
            raise ValueError("a curve needs as many times as sizes, at least one")
        if any(b <= a for a, b in zip(self.x, self.x[1:])) or min(self.x) <= 0 or min(self.time_s) <= 0:
            raise ValueError("a curve's sizes must be positive and increasing, its times positive")

    @classmethod
    def fit(cls, x, time_s) -> "Curve":
        """The non-decreasing curve through measured ``(x, time_s)`` points (several per size are
        pooled: the isotonic fit of log time, by size)."""
        x, t = np.asarray(x, float), np.asarray(time_s, float)
        keep = (x > 0) & (t > 0) & np.isfinite(t)
        x, t = x[keep], t[keep]
        if not len(x):
            raise ValueError("no usable points to fit a curve")
        sizes = np.unique(x)
        logs = np.array([np.mean(np.log(t[x == s])) for s in sizes])
        counts = np.array([np.sum(x == s) for s in sizes])
        return cls(tuple(float(s) for s in sizes), tuple(float(v) for v in np.exp(isotonic(logs, counts))))

    @property
    def asymptotic_rate(self) -> float:
        return self.rate if self.rate is not None else self.x[-1] / self.time_s[-1]

    def __call__(self, x: float) -> float:
        if x <= self.x[0]:
            return self.time_s[0]
        if x >= self.x[-1]:
            return self.time_s[-1] + (x - self.x[-1]) / self.asymptotic_rate
        return float(np.exp(np.interp(math.log(x), np.log(self.x), np.log(self.time_s))))

    def affine(self, x: float) -> float:
        """The time at ``x`` interpolated linearly between the two nearest points (``t = a + x / r`` on each
        segment) instead of in log-log space; as :meth:`__call__` outside the points.

        For a curve sampled sparsely across a floor-to-throughput transition (the GPU calibration's
        three recurrent-layer shapes, 32x and 128x apart in FLOPs): there a log-log chord lies above a
        floor-plus-throughput curve (convex in log-log) by up to the gap's square root.
        """
        if x <= self.x[0] or x >= self.x[-1]:
            return self(x)
        return float(np.interp(x, self.x, self.time_s))

    def to_json(self) -> dict:
        return {"x": list(self.x), "time_s": list(self.time_s), "rate": self.rate}

    @classmethod
    def from_json(cls, data: Mapping) -> "Curve":
        rate = data.get("rate")
        return cls(tuple(data["x"]), tuple(data["time_s"]), None if rate is None else float(rate))


@dataclass(frozen=True)
class Grid:
    """Seconds of a matrix product over rows ``m`` × weight elements ``kn`` (``K·N``), bilinear in
    log-log space (a power law ``t = a·M^α·(KN)^β`` is recovered exactly).

    Outside the grid the coordinates are clamped to it; when the product's FLOPs exceed the clamped
    point's, the excess runs at ``rate`` FLOP/s (default: the clamped point's own rate; a calibration sets
    it where that rate says nothing of larger products: :func:`crossover.opcost.calibrate.build_profile`).
    With ``weights_stream`` (a CPU's grids) the excess past the largest ``K·N`` runs at the clamped
    point's own rate instead, and only the excess past the largest ``m`` at ``rate``: more rows reuse
    weights already in cache, more weights must each be read, at the rate the row moved its largest
    ones (on the 2-core VM at one thread the one-row products of a 1024 → 1536 → 1536 → 10 MLP took
    196 µs under the profiler: 137 µs costed from the grid's best FLOP rate, 196 with their weights
    read at the 4 MiB edge cell's 82 GB/s).
    """

    m: tuple
    kn: tuple
    time_s: tuple  # time_s[i][j] at m[i], kn[j]
    rate: Optional[float] = None
    weights_stream: bool = False

    def __post_init__(self):
        shape = np.asarray(self.time_s, dtype=float).shape
        if shape != (len(self.m), len(self.kn)) or not len(self.m) or not len(self.kn):
            raise ValueError(f"a grid's times must be {len(self.m)} × {len(self.kn)}, got {shape}")
        if np.any(np.asarray(self.time_s, float) <= 0):
            raise ValueError("a grid's times must be positive")

    @property
    def best_rate(self) -> float:
        """The highest FLOP rate among the grid's points (``2·m·kn / t``)."""
        flops = 2.0 * np.outer(np.asarray(self.m, float), np.asarray(self.kn, float))
        return float(np.max(flops / np.asarray(self.time_s, dtype=float)))

    def __call__(self, m: float, kn: float) -> float:
        lm, lk = np.log(self.m), np.log(self.kn)
        m_c = min(max(m, self.m[0]), self.m[-1])
        kn_c = min(max(kn, self.kn[0]), self.kn[-1])
        logs = np.log(np.asarray(self.time_s, dtype=float))
        along_kn = np.array([np.interp(math.log(kn_c), lk, row) for row in logs]) if len(lk) > 1 else logs[:, 0]
        t = float(np.exp(np.interp(math.log(m_c), lm, along_kn) if len(lm) > 1 else along_kn[0]))
        if self.weights_stream and kn > kn_c:  # more weights: each read once, at the edge cell's own rate
            t *= kn / kn_c
            kn_c = kn
        flops, flops_c = 2.0 * m * kn, 2.0 * m_c * kn_c
        if flops > flops_c:
            rate = self.rate if self.rate is not None else flops_c / t
            t += (flops - flops_c) / rate
        return t

    def to_json(self) -> dict:
        out = {"m": list(self.m), "kn": list(self.kn), "time_s": [list(r) for r in self.time_s], "rate": self.rate}
        if self.weights_stream:
            out["weights_stream"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping) -> "Grid":
        rate = data.get("rate")
        return cls(tuple(data["m"]), tuple(data["kn"]), tuple(tuple(r) for r in data["time_s"]),
                   None if rate is None else float(rate), bool(data.get("weights_stream", False)))


@dataclass(frozen=True)
class Profile:
    """One device's calibrated costs (see the module docstring); ``label`` names it in reports."""

    device: str
    machine: str
    overheads: Mapping
    grids: Mapping  # "matmul", "matmul_cold", "conv", "conv_backward", "conv_native", ... -> Grid
    curves: Mapping  # family -> Curve
    llc_bytes: int = 32 * 2**20
    threads: int = 0
    #: Where a step's weights stay warm from one use to the next: on a CPU the private (L2) caches of
    #: the threads used, on a GPU its L2; 0 when unknown (then ``llc_bytes``).
    cache_bytes: int = 0
    peak_flop_rate: float = math.inf
    peak_bandwidth: float = math.inf  # bytes/s
    spread_rel: Mapping = field(default_factory=dict)
    noise_floor_rel: float = 0.0
    model_error_rel: float = 0.0  # median |error| of the composed prediction on the reference models
    #: The reference models' |leave-one-out error| at :data:`crossover.opcost.composition.INTERVAL_COVERAGE`:
    #: the half-width of a new model's prediction interval (0: a profile from before it, which uses
    #: ``model_error_rel``); of their forward steps where ``train_interval_rel`` is set.
    interval_rel: float = 0.0
    #: The same over the reference models' training steps, a training step's half-width (0: a profile
    #: from before the split, whose ``interval_rel`` serves both).
    train_interval_rel: float = 0.0
    #: A training step's autograd and optimizer host work (recording, engine, SGD) costs ``1 +`` this
    #: times its tight-loop calibration: fitted on the reference models (the interpreter and engine run
    #: cold after a backward pass; on the 2-core VM ``SGD.step`` takes 23 µs alone, 49-66 µs in a step:
    #: ``experiments/bench_in_model.py``).
    train_host_extra: float = 0.0
    #: A convolution's forward in a model costs ``1 +`` this times the same convolution repeated alone
    #: (fitted on the reference models; LeNet-5's under the profiler on the 2-core VM: 0.8-1.4 times).
    conv_forward_extra: float = 0.0
    #: The same for a training step's backward kernels other than convolutions (weight and input
    #: gradients, elementwise backward ops): fitted on the reference models.
    backward_extra: float = 0.0
    meta: Mapping = field(default_factory=dict)
    path: Optional[str] = None

    @property
    def label(self) -> str:
        """``machine/device``; a CPU profile calibrated at fewer threads than its machine's usable cores
        (a second calibration of the same CPU) adds its count: ``machine/cpu-1t``."""
        usable = int((self.meta.get("environment") or {}).get("cpu_usable_cores") or 0)
        if self.device == "cpu" and self.threads and usable and self.threads < usable:
            return f"{self.machine}/cpu-{self.threads}t"
        return f"{self.machine}/{self.device}"

    @property
    def warm_bytes(self) -> int:
        """Weights up to this size are costed hot, larger ones cold: the shared last-level cache
        (``llc_bytes``), which holds them from one step to the next (the private caches where no LLC
        is known). On the 2-core VM at one thread, the toy's 2 MB of weights (above its 1 MiB L2)
        measured 88 µs a step at batch 1, 223 µs predicted cold; costed hot, within 3.2% at every batch."""
        return self.llc_bytes or self.cache_bytes

    def overhead(self, name: str) -> float:
        return float(self.overheads.get(name, 0.0) or 0.0)

    def interval_for(self, train: bool) -> float:
        """A new model's step's relative half-width from the reference models' errors: the training
        steps' for a training step, the forward steps' for a forward pass (the median over all of them
        for a profile from before those fields)."""
        if train and self.train_interval_rel:
            return self.train_interval_rel
        return self.interval_rel or self.model_error_rel

    def to_json(self) -> dict:
        return {"schema": PROFILE_SCHEMA, "device": self.device, "machine": self.machine,
                "threads": self.threads, "llc_bytes": self.llc_bytes, "cache_bytes": self.cache_bytes,
                "overheads": dict(self.overheads),
                "grids": {name: grid.to_json() for name, grid in self.grids.items()},
                "curves": {name: curve.to_json() for name, curve in self.curves.items()},
                "peak_flop_rate": _finite_or_none(self.peak_flop_rate),
                "peak_bandwidth_bytes_per_s": _finite_or_none(self.peak_bandwidth),
                "spread_rel": dict(self.spread_rel), "noise_floor_rel": self.noise_floor_rel,
                "model_error_rel": self.model_error_rel, "interval_rel": self.interval_rel,
                "train_interval_rel": self.train_interval_rel,
                "train_host_extra": self.train_host_extra,
                "conv_forward_extra": self.conv_forward_extra, "backward_extra": self.backward_extra,
                **dict(self.meta)}

    @classmethod
    def from_json(cls, data: Mapping, path: Optional[str] = None) -> "Profile":
        schema = data.get("schema") or {}
        if schema.get("name") != PROFILE_SCHEMA["name"] or schema.get("version") != PROFILE_SCHEMA["version"]:
            raise ResultsError(f"{path or 'the profile'} is not a crossover profile of version "
                               f"{PROFILE_SCHEMA['version']} (schema {schema or 'missing'})")
        known = {"schema", "device", "machine", "threads", "llc_bytes", "cache_bytes", "overheads", "grids", "curves",
                 "peak_flop_rate", "peak_bandwidth_bytes_per_s", "spread_rel", "noise_floor_rel", "model_error_rel",
                 "interval_rel", "train_interval_rel", "train_host_extra", "conv_forward_extra", "backward_extra"}
        try:
            return cls(
                device=str(data["device"]), machine=str(data["machine"]), overheads=dict(data["overheads"]),
                grids={name: Grid.from_json(g) for name, g in data["grids"].items() if g},
                curves={name: Curve.from_json(c) for name, c in data["curves"].items() if c},
                llc_bytes=int(data.get("llc_bytes") or 32 * 2**20), threads=int(data.get("threads") or 0),
                cache_bytes=int(data.get("cache_bytes") or 0),
                peak_flop_rate=_none_to_inf(data.get("peak_flop_rate")),
                peak_bandwidth=_none_to_inf(data.get("peak_bandwidth_bytes_per_s")),
                spread_rel=dict(data.get("spread_rel") or {}), noise_floor_rel=float(data.get("noise_floor_rel") or 0),
                model_error_rel=float(data.get("model_error_rel") or 0),
                interval_rel=float(data.get("interval_rel") or 0),
                train_interval_rel=float(data.get("train_interval_rel") or 0),
                train_host_extra=float(data.get("train_host_extra") or 0),
                conv_forward_extra=float(data.get("conv_forward_extra") or 0),
                backward_extra=float(data.get("backward_extra") or 0),
                meta={k: v for k, v in data.items() if k not in known}, path=path)
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"{path or 'the profile'} is malformed: {type(exc).__name__}: {exc}") from None


def _finite_or_none(value: float):
    return value if math.isfinite(value) else None


def _none_to_inf(value) -> float:
    return math.inf if value is None else float(value)


# ------------------------------------------------------------------------------------------- I/O
def write_profile(directory, profile: Profile) -> Path:
    """Write ``DIR/profile.json`` (the directory must exist), whole or not at all (a temporary file renamed)."""
    path = Path(directory) / PROFILE_NAME
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(profile.to_json(), indent=2) + "\n")
    os.replace(partial, path)
    return path


def load_profile(path) -> Profile:
    """Read a profile from a directory holding ``profile.json``, or from the file itself.

    Raises
    ------
    ResultsError
        Missing, unreadable or not a profile.
    """
    path = Path(path)
    file = path / PROFILE_NAME if path.is_dir() else path
    if not path.exists():
        raise ResultsError(f"profile directory {path} does not exist")
    if not file.is_file():
        raise ResultsError(f"{path} holds no {PROFILE_NAME} (write one with 'crossover calibrate --out {path}')")
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsError(f"cannot read {file}: {exc}") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{file} is not a crossover profile")
    return Profile.from_json(data, path=str(file))


def shipped_profile_files() -> list:
    """Every shipped ``profile.json``: ``<machine>/profile.json`` (one device) and
    ``<machine>/<device>/profile.json`` (a machine with several calibrated devices)."""
    from ..shipped_data import shipped_profiles_dir

    root = shipped_profiles_dir()
    if not root.is_dir():
        return []
    return sorted([*root.glob(f"*/{PROFILE_NAME}"), *root.glob(f"*/*/{PROFILE_NAME}")])


def load_profiles(paths=None) -> list:
    """Profiles from ``paths`` (directories or files), or every shipped one when ``paths`` is None.

    Raises
    ------
    ResultsError
        A path that is not a profile, or no shipped profile at all.
    """
    if paths:
        return [p if isinstance(p, Profile) else load_profile(p) for p in paths]
    files = shipped_profile_files()
    if not files:
        from ..shipped_data import shipped_profiles_dir

        raise ResultsError(f"no shipped profiles in {shipped_profiles_dir()}; calibrate this machine with "
                           "'crossover calibrate --device cpu --out DIR' and pass --profiles DIR")
    return [load_profile(f) for f in files]


# ------------------------------------------------------------------------------------- synthetic
_TINY = 1e-12


def synthetic_profile(device: str = "cpu", *, dispatch_s: float = 5e-6, flop_rate: float = math.inf,
                      bandwidth: float = math.inf, machine: str = "synthetic", **overheads) -> Profile:
    """A profile where every op costs ``dispatch_s`` plus its FLOPs at ``flop_rate`` (matmul, conv,
    attention) or its bytes at ``bandwidth`` (the rest); views and other overheads cost what
    ``overheads`` says (default 0). With infinite rates every launching op costs ``dispatch_s``."""
    def curve(per_unit_s: float) -> Curve:  # one point at (almost) nothing: exactly dispatch + size × cost
        return Curve((_TINY,), (dispatch_s,), rate=math.inf if per_unit_s == 0 else 1 / per_unit_s)

    per_flop, per_byte = 1 / flop_rate, 1 / bandwidth
    grid = Grid((1.0,), (_TINY,), ((dispatch_s,),), rate=math.inf if per_flop == 0 else flop_rate)
    curves = {name: curve(per_byte) for name in BYTES_FAMILIES}
    curves.update({name: curve(per_flop) for name in FLOPS_FAMILIES})
    values = {name: 0.0 for name in OVERHEADS}
    values.update(dispatch_s=dispatch_s, launch_s=dispatch_s if device == "cuda" else 0.0)
    values.update(overheads)  # launch_s among them: a host cost per launch other than the kernels' floor
    return Profile(device=device, machine=machine, overheads=values, grids={"matmul": grid, "matmul_cold": grid},
                   curves=curves, peak_flop_rate=flop_rate, peak_bandwidth=bandwidth)
