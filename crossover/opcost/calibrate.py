"""``crossover calibrate``: measure a device's cost primitives into a profile.

:func:`run_calibration` times every primitive of a plan (:mod:`crossover.opcost.calibration_plan`) in shuffled
interleaved rounds with a drift reference opening each round (:func:`crossover.measurement.module_rounds.measure_rounds`),
writes every visit to ``DIR/calibration.csv.gz`` and condenses them with :func:`build_profile` into ``DIR/profile.json``.

How the visits become a profile: a primitive's time is the 10th percentile of its repeats pooled over every round. A
round whose drift reference lay more than :data:`crossover.results.statistics.DRIFT_LIMIT` above its quiet level is
reported (``meta["drifted_rounds"]``) and pooled all the same: the reference, a matrix product, does not read the state
of host-bound primitives (on the AMD VM a batch-1 GRU primitive: 2.32 ms over the other rounds, 1.32 ms over all eight),
and a slow round does not reach a 10th percentile (``amd-epyc-2c/logs/rounds_pooled_1129.log``). The overheads are
differences of primitives: ``grad_record_s`` is the per-op slope of a multiplication chain with autograd recording minus
the same chain under ``no_grad``; the backward engine's cost per op and per call come from the slope and intercept of
(forward + backward) − forward over two chain lengths, less the backward's own multiplications; the optimizer's
per-parameter and fixed costs from SGD steps (``zero_grad`` included) over 1 and 16 parameters, less each update's
``add_``. ``fresh_byte_s`` is the page-fault cost per byte: filling 40 MiB on pages mapped for the call
(:func:`crossover.measurement.allocator.fresh_pages_fill`, faulted in as a step's fresh 32 MiB buffers are) less filling
a kept tensor, over its bytes (0.25 ns a byte on the 2-core VM, 10-16 times the write). ``wake_s`` and ``wake_after_s``:
what a parallel op pays once its threads slept, and after how long a serial gap (:mod:`crossover.opcost.thread_wake`;
not timed at one thread); ``thread_start_s``: an OpenMP thread started anew (:mod:`crossover.opcost.thread_starts`);
``conv_neighbours_native_s`` and ``conv_neighbours_mkldnn_s``: a forward convolution among other kernels, per call
(:mod:`crossover.opcost.conv_neighbours`). ``fused_mha_s``, ``fused_mha_scale`` (``fused_encoder_`` alike): the fused
inference layers timed whole against their kernels (:mod:`crossover.opcost.fused_layers`). The curve ``reuse``: a step's
state read back from the shared cache (:mod:`crossover.opcost.reuse`). The noise floor: the drift reference's mean
deviation from its median over the rounds not drifted (``interval_noise_floor_1128.log``). A calibration cut short keeps
its whole rounds (``meta["rounds"]``).

Ops timed alone do not pay everything composing them costs: the autograd engine does more per node of a real model than
per node of a chain, and a sequence of different ops dispatches slower than one op repeated. Five generic reference
models (:data:`REFERENCE_MODELS <crossover.opcost.reference_models.REFERENCE_MODELS>`, none of the zoo's) are timed
whole, forward and training step, and ``event_s`` (per host event: op, view or module call) and ``train_host_extra``
(how much more a training step's autograd and optimizer host work costs than in the tight loops that calibrated it: on
the 2-core VM about 1.3 more, ``SGD.step`` 23 µs alone and 49-66 µs in a step, ``bench_in_model.py``),
``conv_forward_extra`` (a convolution between other ops against the same one repeated alone: LeNet-5's run 0.8-1.4 times
as long) and ``backward_extra`` (the same for the backward pass's matrix products and memory-bound ops) and
``conv_train_s`` (per forward convolution of a training step: :mod:`.composition`) are fitted to what the primitives
leave unexplained on three of them, the others predicted unseen (non-negative least squares of the relative residuals;
on a GPU only the host terms); ``meta["reference_models"]`` reports the fit, ``model_error_rel`` its median error.

On a GPU the prediction is for a synchronised step (one request served: what ``measure`` times), which queued calls do
not show: the reference models are also timed synchronised (``model_sync``), the composition fitted on those;
``step_sync_s`` is a tiny kernel launched and waited for (``launch_sync``) less its dispatch. The GPU's drift reference,
a 2048³ product, reads the device, not host jitter. cuDNN's GRU is timed whole (``rnn``).
"""

from __future__ import annotations

import csv
import functools
import gzip
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from .activations import ACTIVATION_FAMILY, curve_name
from ..measurement.environment import gpu_l2_bytes, llc_bytes, private_cache_bytes
from .calibration_plan import (CHAIN_LENGTHS, FRESH_PROBE_BYTES, PLANS, SGD_PARAMS, Plan, SYNCED_MODEL, fresh_buffers, make_step,
                               points, reference_point)
from ..errors import ConfigError
from .attention_heads import BACKWARD as ATTENTION_BACKWARD, head_curves
from .batched_products import BATCHED, BMM_MATRIX, fit_bmm_matrix_s
from .reduction_curves import OWN_CURVE_FAMILIES, own_curve_name
from .reuse import REUSE, fit_reuse
from .short_rows import calibrated_lanes
from .thread_starts import THREAD_START, fit_thread_start, reference_thread_starts
from .thread_wake import WAKE, fit_wake
from .conv_neighbours import NEIGHBOUR_VISITS, NEIGHBOURS, fit_neighbours  # wake-ups, thread starts, a convolution among other kernels
from .fused_layers import FUSED, fit_fused
from .op_costs import FRESH_MIN_BYTES, fused_kernels_s
from .composition import with_composition
from .conv_primitives import (BLOCKED_KN, DILATED, NATIVE_UNFOLD, POINTWISE, POINTWISE_GRIDS, STRIDED, STRIDED_BACKWARD,
                              TRANSPOSED, TRANSPOSED_GRID, cell_kn, channel_block, native_terms)
from .layer_primitives import beyond_the_op
from .gpu_ops import CPU_RNN_STEPS, RNN_RESIDUAL_GRID, cpu_recurrent_residuals
from .recurrent_layers import RECURRENT_TRAIN, fit_recurrent_terms
from .profiles import CALIBRATION_CSV, Curve, Grid, Profile, write_profile
from .streaming import CHAIN_FAMILY, CHAIN_OPS

__all__ = ["run_calibration", "measure_calibration", "save_calibration", "check_out_dir", "CalibrationRun",
           "build_profile", "rebuild_profile", "read_calibration", "CSV_COLUMNS"]

CSV_COLUMNS = ("round", "sequence", "reference", "key", "family", "name", "m", "k", "n", "x", "cold", "shape",
               "median_s", "calls_per_repeat", "raw_times_s", "device_times_s")


@dataclass(frozen=True)
class CalibrationRun:
    """What :func:`measure_calibration` timed: ``rows`` (one :data:`CSV_COLUMNS` dict per visit of a primitive
    or the drift reference), ``extra_visits`` (the extra steps', as ``measure_rounds`` returns them), the
    threads used, the last-level cache (or GPU L2) bytes and the seconds it took."""

    device: str
    plan: Plan
    seed: int
    rows: list
    extra_visits: list
    threads: int
    llc: int
    elapsed_s: float
    cache_bytes: int = 0
    rounds_done: int = 0  # whole rounds timed: fewer than the plan's where an interrupt cut the run short


def measure_calibration(device: str, plan: Plan = PLANS["quick"], *, seed: int = 0, threads: int = 0,
                        extra_steps: Sequence[tuple] = (), on_progress: Optional[Callable[[str], None]] = None,
                        keep_on_interrupt: bool = False) -> CalibrationRun:
    """Time every primitive of ``plan`` on ``device`` in shuffled interleaved rounds (nothing written).

    Parameters
    ----------
    device : {"cpu", "cuda"}
    plan : Plan
    seed : int
        Seeds the rounds' orders.
    threads : int
        CPU intra-op threads (0: torch's default).
    extra_steps : sequence of (key, callable)
        Timed in the primitives' rounds (models a prediction is checked on: drift hits both); not profiled.
    on_progress : callable, optional
        Called with a label after every visit.
    keep_on_interrupt : bool
        On ``KeyboardInterrupt`` after a whole round, return the whole rounds (``rounds_done``), not raise.

    Returns
    -------
    CalibrationRun
    """
    from ..measurement.environment import require_device
    from ..measurement.toy_step import num_threads
    from ..measurement.module_rounds import measure_rounds
    from ..results.store import raw_times_to_text

    if device not in ("cpu", "cuda"):
        raise ConfigError(f"unknown device {device!r}; expected cpu or cuda")
    require_device(device)
    start = time.perf_counter()
    llc = llc_bytes() if device == "cpu" else gpu_l2_bytes()
    with num_threads(threads) as threads_used:
        plan_points = points(plan, device, threads_used)
        pools = {}
        steps = [(p.key, make_step(p, device, llc=llc, pool_factor=plan.cold_pool_factor, cache=pools))
                 for p in plan_points]
        # each reference step visited plan.reference_visits times a round, a convolution among others more (its quicker)
        visits_of = {"model": plan.reference_visits, SYNCED_MODEL: plan.reference_visits, NEIGHBOURS: NEIGHBOUR_VISITS}
        steps += [step for step, p in zip(steps, plan_points) for _ in range(visits_of.get(p.family, 1) - 1)]
        extra_keys = {key for key, _ in extra_steps}
        reference = reference_point(device)
        if extra_keys & ({key for key, _ in steps} | {reference.key}):
            raise ValueError("an extra step's key is also a primitive's or the drift reference's")
        visits = measure_rounds(steps + list(extra_steps), rounds=plan.rounds, options=plan.options, seed=seed,
                                device=device, reference=(reference.key, make_step(reference, device)),
                                on_progress=on_progress, regime="throughput" if device == "cuda" else "latency",
                                keep_on_interrupt=keep_on_interrupt)
    by_key = {p.key: p for p in [*plan_points, reference]}
    rows, extra = [], []
    for visit in visits:
        if visit["key"] in extra_keys and not visit["reference"]:
            extra.append(visit)
            continue
        point = by_key[visit["key"]]
        rows.append(dict(round=visit["round"], sequence=visit["sequence"], reference=visit["reference"], key=point.key,
                         family=point.family, name=point.name, m=point.m, k=point.k, n=point.n, x=point.x,
                         cold=point.cold, shape="x".join(map(str, point.shape)), median_s=visit["median_s"],
                         calls_per_repeat=visit["calls_per_repeat"], raw_times_s=raw_times_to_text(visit["raw_times_s"]),
                         device_times_s=raw_times_to_text(visit["device_times_s"])))
    cache = private_cache_bytes() * max(threads_used, 1) if device == "cpu" else llc
    done = 1 + max((visit["round"] for visit in visits), default=-1)
    return CalibrationRun(device, plan, seed, rows, extra, threads_used, llc, time.perf_counter() - start, cache, done)


def save_calibration(out_dir, run: CalibrationRun, *, machine: Optional[str] = None) -> Profile:
    """Write ``run``'s visits to ``out_dir/calibration.csv.gz`` and its profile (:func:`build_profile`) to
    ``out_dir/profile.json``; returns the profile."""
    from ..measurement.environment import environment
    from ..results.store import make_results_directory

    out_dir = Path(out_dir)
    make_results_directory(out_dir)
    with gzip.open(out_dir / CALIBRATION_CSV, "wt", newline="") as handle:  # 4 MB of text for the full plan
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(run.rows)
    env = environment()
    meta = dict(plan=run.plan.name, rounds=run.rounds_done or run.plan.rounds, seed=run.seed, statistic="p10",
                elapsed_s=run.elapsed_s,
                device_name=env.get("gpu_name") if run.device == "cuda" else env.get("cpu_model"),
                timer=asdict(run.plan.options), environment=env)
    profile = build_profile(run.rows, device=run.device, machine=machine or env["machine"], threads=run.threads,
                            llc=run.llc, cache_bytes=run.cache_bytes, meta=meta)
    write_profile(out_dir, profile)
    return profile


def check_out_dir(out_dir, force: bool = False) -> None:
    """Refuse (:class:`ConfigError`) an ``out_dir`` that already holds a profile, unless ``force``."""
    if (Path(out_dir) / "profile.json").exists() and not force:
        raise ConfigError(f"{out_dir} already holds a profile.json; choose another --out or pass --force")


def run_calibration(device: str, out_dir, *, plan: Plan = PLANS["quick"], seed: int = 0, threads: int = 0,
                    machine: Optional[str] = None, force: bool = False,
                    on_progress: Optional[Callable[[str], None]] = None) -> Profile:
    """Calibrate ``device`` with ``plan`` into ``out_dir`` (``calibration.csv.gz`` and ``profile.json``).

    Parameters
    ----------
    device : {"cpu", "cuda"}
    out_dir : path
        Created if missing; a directory already holding a profile is refused unless ``force``.
    plan : Plan
        ``PLANS["quick"]`` (90-165 s on the 2-core VMs), ``PLANS["full"]`` or ``PLANS["smoke"]``.
    seed, threads, on_progress
        As :func:`measure_calibration` (the threads are recorded in the profile).
    machine : str, optional
        Label (default :func:`crossover.measurement.environment.machine_label`).
    force : bool
        Overwrite an existing profile.

    Returns
    -------
    Profile
    """
    check_out_dir(out_dir, force)  # Ctrl-C raises here (crossover calibrate keeps the whole rounds instead)
    run = measure_calibration(device, plan, seed=seed, threads=threads, on_progress=on_progress)
    return save_calibration(out_dir, run, machine=machine)


def rebuild_profile(directory) -> Profile:
    """Rebuild ``DIR/profile.json`` from ``DIR/calibration.csv.gz`` with this code's :func:`build_profile`.

    The machine, device, threads, caches, the run's metadata (plan, environment, timer) and the threads its
    reference steps started (:func:`.thread_starts.reference_thread_starts`: its builder's count, not this machine's
    libraries') are kept from the profile there; all else is computed anew (a change of how visits become costs
    reaches old profiles).

    Returns
    -------
    Profile
        The profile written.
    """
    from .profiles import load_profile

    old = load_profile(directory)
    keep = ("plan", "rounds", "seed", "statistic", "elapsed_s", "device_name", "timer", "environment")
    meta = {k: old.meta[k] for k in keep if k in old.meta}
    profile = build_profile(read_calibration(directory), device=old.device, machine=old.machine, threads=old.threads,
                            llc=old.llc_bytes, cache_bytes=old.cache_bytes, meta=meta,
                            thread_starts=reference_thread_starts(old.meta))
    write_profile(directory, profile)
    return profile


def read_calibration(out_dir) -> list:
    """The visits of ``DIR/calibration.csv.gz`` as dicts (to rebuild a profile with :func:`build_profile`)."""
    path = Path(out_dir) / CALIBRATION_CSV
    legacy = path.with_suffix("")  # calibration.csv, before it was compressed
    with (gzip.open(path, "rt", newline="") if path.exists() or not legacy.exists() else open(legacy, newline="")) \
            as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for name in ("round", "sequence", "m", "k", "n", "calls_per_repeat"):
            row[name] = int(row[name])
        row["x"], row["median_s"] = float(row["x"]), float(row["median_s"])
        row["reference"], row["cold"] = row["reference"] == "True", row["cold"] == "True"
    return rows


# ------------------------------------------------------------------------------------ condensing
def _times(text) -> np.ndarray:
    if isinstance(text, (tuple, list, np.ndarray)):
        return np.asarray(text, float)
    return np.array([float(v) for v in str(text).split(";") if v])


def _drifted_rounds(rows) -> tuple:
    """(rounds whose reference was slow, the noise floor over the other rounds: see the module's docstring)."""
    from ..results.statistics import drift_ratio, is_drifted

    refs = {row["round"]: float(row["median_s"]) for row in rows if row["reference"]}  # the last visit a round
    if len(refs) < 2:
        return set(), 0.0
    values = np.array(list(refs.values()))
    drifted = {r for r, ratio in zip(refs, drift_ratio(values)) if is_drifted(ratio)}
    kept = np.array([v for r, v in refs.items() if r not in drifted])  # the quietest round is never drifted
    return drifted, float(np.mean(np.abs(kept / np.median(kept) - 1)))


def _reference_flop_rate(rows) -> float:
    """FLOP/s of the drift reference's matrix product at its fastest round's median (never a drifted round's); 0
    without reference rows. On a GPU the reference is :data:`GPU_REFERENCE_MNK
    <crossover.opcost.calibration_plan.GPU_REFERENCE_MNK>`, a product far larger than the grid's."""
    refs = [r for r in rows if r["reference"]]
    if not refs:
        return 0.0
    return 2.0 * math.prod(int(refs[0][c]) for c in ("m", "k", "n")) / min(float(r["median_s"]) for r in refs)


#: Primitives whose time is the host's even on a GPU (the rest, on a GPU: the CUDA events' span).
_HOST_FAMILIES = ("overhead", "h2d", "model", SYNCED_MODEL)


def _statistics(rows) -> dict:
    """key → (p10 of the repeats pooled over every round, relative round-to-round spread, a row).
    Where a visit recorded CUDA-event times (a GPU's kernels), those are used for its kernel families.

    A key visited more than once a round (a reference step: :attr:`Plan.reference_visits`) keeps each round's
    quicker visit, so that it pools one visit a round as a primitive does (pooled whole, in sitting 1126n one fast
    visit of 16 fell under the 10th percentile: ``conv_forward_extra`` read 0.96 against 0.19-0.24 elsewhere)."""
    from ..measurement.module_rounds import quicker_visit_per_round, summarise_rounds

    grouped = {}
    for row in rows:
        if not row["reference"]:
            grouped.setdefault(row["key"], []).append(row)
    out = {}
    for key, visits in grouped.items():
        events = (visits[0]["family"] not in _HOST_FAMILIES
                  and all(len(_times(v.get("device_times_s", ""))) for v in visits))
        field = "device_times_s" if events else "raw_times_s"
        parsed = [dict(round=visit["round"], raw_times_s=_times(visit[field])) for visit in visits]
        stats = summarise_rounds(quicker_visit_per_round(parsed))
        out[key] = (stats["latency_s"], stats["spread_rel"], visits[0])
    return out


def _overheads(t: Callable[[str], float]) -> dict:
    """The overheads from the overhead primitives' times (``t(name)``), each at least 0."""
    n1, n2 = CHAIN_LENGTHS
    p1, p2 = SGD_PARAMS
    mul = (t(f"chain_nograd/{n2}") - t(f"chain_nograd/{n1}")) / (n2 - n1)
    grad = (t(f"chain_grad/{n2}") - t(f"chain_grad/{n1}")) / (n2 - n1)
    backward = [t(f"chain_train/{n}") - t(f"chain_grad/{n}") for n in CHAIN_LENGTHS]
    slope = (backward[1] - backward[0]) / (n2 - n1)
    sgd_slope = (t(f"sgd/{p2}") - t(f"sgd/{p1}")) / (p2 - p1)
    try:  # a calibration from before the page-fault primitives: none
        fresh = (t("fresh_fill") - t("reuse_fill")) / FRESH_PROBE_BYTES
    except ValueError:
        fresh = 0.0
    values = dict(dispatch_s=t("dispatch"), view_s=t("view"), module_call_s=t("module_call"), fresh_byte_s=fresh,
                  grad_record_s=grad - mul, backward_op_s=slope - mul,
                  backward_call_s=backward[0] - n1 * slope - 2 * mul,  # less the sum and its ones_like
                  optimizer_param_s=sgd_slope - t("dispatch"), optimizer_step_s=t(f"sgd/{p1}") - p1 * sgd_slope)
    return {k: max(float(v), 0.0) for k, v in values.items()}


def _grid(name: str, cells: dict) -> Grid:
    m, kn = sorted({c[0] for c in cells}), sorted({c[1] for c in cells})
    if len(cells) != len(m) * len(kn):
        raise ValueError(f"the {name} grid is incomplete")
    return Grid(tuple(m), tuple(kn), tuple(tuple(cells[(a, b)] for b in kn) for a in m))


def _shape(row) -> tuple:
    """A calibration row's ``shape`` (written ``"4x3x8x3x16"``) as a tuple of ints."""
    return tuple(int(v) for v in str(row.get("shape") or "").split("x") if v)


def _without_page_faults(by_point: dict, fresh_byte_s: float) -> dict:
    """``by_point`` with the page faults of each primitive's fresh buffers (32 MiB or more: its output,
    a oneDNN convolution's blocked copies, :func:`crossover.opcost.calibration_plan.fresh_buffers`) taken
    out of its time: a prediction adds them for the buffers a model allocates, not for in-place ops."""
    out = {}
    for key, (seconds, spread, row) in by_point.items():
        buffers = fresh_buffers(row["family"], row["name"], int(row.get("n") or 0), _shape(row))
        fresh = sum(b for b in buffers if b >= FRESH_MIN_BYTES)
        if fresh and math.isfinite(seconds):
            seconds = max(seconds - fresh * fresh_byte_s, 0.1 * seconds)  # never below a tenth
        out[key] = (seconds, spread, row)
    return out


#: (grid, family, primitive, cold) of the profile's grids.
_GRIDS = (("matmul", "matmul", "addmm", False), ("matmul_cold", "matmul", "addmm", True),
          ("matmul_outer", "matmul_outer", "mm", False), ("matmul_host", "matmul_host", "mm", False),
          ("matmul_narrow", "matmul_narrow", "addmm", False), ("conv", "conv", "conv2d", False),
          ("conv_backward", "conv_backward", "conv2d", False), ("conv_native", "conv", "conv2d_native", False),
          ("conv_backward_native", "conv_backward", "conv2d_native", False), ("conv1d", "conv1d", "conv1d", False),
          ("conv1d_native", "conv1d", "conv1d_native", False), TRANSPOSED_GRID, *POINTWISE_GRIDS)


def build_profile(rows, *, device: str, machine: str, threads: int = 0, llc: int = 32 * 2**20,
                  cache_bytes: int = 0, meta: Optional[dict] = None, thread_starts: Optional[dict] = None) -> Profile:
    """Condense calibration visits (as :data:`CSV_COLUMNS` dicts) into a :class:`Profile` (pure but for counting
    the threads a reference step starts where ``thread_starts``, an earlier build's counts, lacks it).

    Raises
    ------
    ValueError
        The visits lack a primitive every profile needs (the overheads, the hot matmul grid).
    """
    drifted, noise_floor = _drifted_rounds(rows)
    by_point = _statistics(rows)

    def overhead(name: str) -> float:
        base, _, n = name.partition("/")
        for seconds, _, row in by_point.values():
            if row["family"] == "overhead" and row["name"] == base and (not n or int(row["n"]) == int(n)):
                return seconds
        raise ValueError(f"the calibration lacks the overhead primitive {name!r}")

    overheads = _overheads(overhead)
    by_point = _without_page_faults(by_point, overheads["fresh_byte_s"])
    families = {}
    for seconds, spread, row in by_point.values():  # an activation's curve is its op's own
        key = curve_name(row["name"]) if row["family"] == ACTIVATION_FAMILY else row["family"]
        families.setdefault(key, []).append((seconds, spread, row))
    rnn_cells, lstm_cells = ([(*_shape(r), s - overheads["module_call_s"]) for s, _, r in families.get("rnn", [])
                              if math.isfinite(s) and r["name"] == name] for name in ("gru", "lstm"))
    if device == "cpu":  # the recurrent steps' terms (the module call left to the model's own count), strides
        overheads.update(fit_recurrent_terms(rnn_cells, lstm_cells, families, overheads),
                         **native_terms(families), **{BMM_MATRIX: fit_bmm_matrix_s(families)},
                         **fit_wake(families, overheads["dispatch_s"]), **fit_thread_start(families), **fit_neighbours(families))
    if device == "cuda":
        overheads["launch_s"] = overheads["dispatch_s"]
        overheads["sync_s"] = overhead("sync")
        try:  # what a synchronised step pays beyond its launches (calibrations before it: none)
            overheads["step_sync_s"] = max(overhead("launch_sync") - overheads["dispatch_s"], overheads["sync_s"])
        except ValueError:
            pass
    grids, block = {}, channel_block(calibrated_lanes(families).get("vector_floats"))  # oneDNN's, on this CPU
    for name, family, primitive, cold in _GRIDS:
        by_size = {}  # image side -> cells (matrix products: one grid, side 0)
        for s, _, r in families.get(family, []):
            if bool(r["cold"]) == cold and r["name"] == primitive and math.isfinite(s):
                side = _shape(r)[-1] if family.startswith("conv") else 0
                first = int(r["k"]) if family == "matmul_outer" else int(r["m"])  # the outer grid: K × M·N
                by_size.setdefault(side, {})[(first, cell_kn(r, first, device, overheads.get(NATIVE_UNFOLD), block))] = s
        for side, cells in by_size.items():
            grids[f"{name}@{side}" if side else name] = _grid(name, cells)
    if "matmul" not in grids:
        raise ValueError("the calibration lacks the matmul grid")
    residuals = cpu_recurrent_residuals(rnn_cells, overheads) if device == "cpu" else None
    if residuals is not None:  # where the GRU primitives measured a batch and width, as they measured
        grids[RNN_RESIDUAL_GRID] = residuals
    curves = {}
    for family, items in families.items():
        if family in ("overhead", "matmul", "matmul_check", "matmul_outer", "matmul_host", "conv", "conv_backward",
                      "conv1d", "model", SYNCED_MODEL, "matmul_narrow", STRIDED, STRIDED_BACKWARD, TRANSPOSED, POINTWISE,
                      BATCHED, DILATED, ATTENTION_BACKWARD, WAKE, THREAD_START, FUSED, REUSE, NEIGHBOURS, *RECURRENT_TRAIN):
            continue
        beyond = beyond_the_op(family, overheads) if device == "cpu" else 0.0  # a GPU's: queued behind its kernels
        if family == "rnn" and device == "cpu":  # the fallback curve is over one length's FLOPs
            items = [item for item in items if _shape(item[2])[1] == CPU_RNN_STEPS and item[2]["name"] == "gru"]
        per_call = CHAIN_OPS if family == CHAIN_FAMILY else 1  # the chain's curve: seconds per ReLU
        points = [(float(r["x"]), max(s - beyond, 0.5 * s) / per_call, r["name"]) for s, _, r in items]
        curves[family] = Curve.fit([x for x, _, _ in points], [t for _, t, _ in points])
        if family in OWN_CURVE_FAMILIES:  # each row-wise primitive on its own curve too (.reduction_curves)
            for primitive in sorted({name for _, _, name in points}):
                own = [(x, t) for x, t, name in points if name == primitive]
                curves[own_curve_name(family, primitive)] = Curve.fit(*zip(*own))
    if device == "cpu":  # attention per (batch, head) pair, forward and backward; state read back (reuse)
        curves.update(head_curves(families), **{REUSE: c for c in [fit_reuse(families)] if c is not None})
    hot = grids["matmul"]
    flop_rates = [2.0 * a * b / hot(a, b) for a in hot.m for b in hot.kn]
    if device == "cuda":  # the GPU's drift reference, 2048^3, fills the device better than any grid cell
        flop_rates.append(_reference_flop_rate(rows))
    # Past the grid's largest products (an encoder layer's 4096 tokens at batch 64 against M <= 1024) extra
    # FLOPs run at the best rate the calibration reached, not the edge cell's (profiles.Grid); on a GPU
    # that includes the drift reference's (H100: 48.2 TFLOP/s against the grid's 34.2; feed-forward products
    # at batch 512 were costed 1.01 ms each, not ~0.71). On a CPU past the largest weights each extra weight
    # is read at the edge cell's rate (Grid.weights_stream). A GPU convolution grid's launch-bound edge cells
    # say nothing of a larger convolution's rate (H100: a 1-D one at batch 512 costed at 2.2 TFLOP/s against
    # the best 62, 157 µs for 254 measured): the grid's best; a CPU edge cell's own work stands.
    streams = ("matmul", "matmul_cold") if device == "cpu" else ()
    grids = {name: (replace(grid, rate=max(flop_rates), weights_stream=name in streams)
                    if name.startswith("matmul") and name != "matmul_narrow"
                    else replace(grid, rate=grid.best_rate) if device == "cuda" else grid)
             for name, grid in grids.items()}
    bandwidths = [float(r["x"]) / s for s, _, r in families.get("elementwise", []) + families.get("copy", [])]
    spread = {family: float(np.nanmedian([s for _, s, _ in items])) for family, items in families.items()}
    spread["view"] = spread.get("overhead", 0.0)
    checks = [s / hot(int(r["m"]), int(r["k"]) * int(r["n"])) - 1 for s, _, r in families.get("matmul_check", [])]
    kept_rounds = len({row["round"] for row in rows if not row["reference"]})  # every round is pooled
    extra = dict(meta or {}, drifted_rounds=sorted(drifted), rounds_kept=kept_rounds,
                 **calibrated_lanes(families),  # softmax's vector floats
                 **({"conv_kn": BLOCKED_KN} if device == "cpu" else {}))
    if checks:
        extra["matmul_check_error_rel"] = {"median": float(np.median(np.abs(checks))),
                                           "worst": float(np.max(np.abs(checks)))}
    profile = Profile(device=device, machine=machine, overheads=overheads, grids=grids, curves=curves, llc_bytes=llc,
                      cache_bytes=cache_bytes, threads=threads, peak_flop_rate=max(flop_rates),
                      peak_bandwidth=max(bandwidths, default=math.inf),
                      spread_rel=spread, noise_floor_rel=noise_floor, meta=extra)
    if device == "cpu":  # the fused inference layers, timed whole, against their kernels' cost on this profile
        kernels = functools.partial(fused_kernels_s, profile)
        profile = replace(profile, overheads={**overheads, **fit_fused(families, kernels, overheads["module_call_s"])})
    # The composition is fitted in the regime predictions are for: on a GPU the synchronised steps where
    # the calibration has them (a calibration from before them: the queued ones).
    family = SYNCED_MODEL if families.get(SYNCED_MODEL) else "model"
    models = [(s, r) for s, _, r in families.get(family, []) if math.isfinite(s)]
    return with_composition(profile, models, thread_starts) if models else profile
