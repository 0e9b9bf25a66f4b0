"""``crossover calibrate``: measure a device's cost primitives into a profile.

:func:`run_calibration` times every primitive of a plan (:mod:`crossover.calibration_plan`) in
shuffled interleaved rounds with a drift reference opening each round
(:func:`crossover.module_measure.measure_rounds`), writes every visit to ``DIR/calibration.csv`` and
condenses them with :func:`build_profile` into ``DIR/profile.json`` (:class:`crossover.profiles.Profile`).

How the visits become a profile: a primitive's time is the 10th percentile of its repeats pooled over
the rounds whose drift reference lay within :data:`crossover.results.DRIFT_LIMIT` of its quiet level
(all rounds if none did). The overheads are differences of primitives: ``grad_record_s`` is the
per-op slope of a multiplication chain with autograd recording minus the same chain under
``no_grad``; the backward engine's cost per op and per call come from the slope and intercept of
(forward + backward) − forward over two chain lengths, less the backward's own multiplications; the
optimizer's per-parameter and fixed costs from SGD steps (``zero_grad`` included) over 1 and 16
parameters, less each update's ``add_``. The noise floor is the drift reference's mean relative
deviation from its median over rounds.

Ops timed alone do not pay what composing them costs: on the 2-core VM a large output allocated
afresh in a step is faulted in again page by page (glibc returns freed memory to the kernel), about
0.2 ns per byte, 25 times the cost of writing it, and the autograd engine does more per node of a
real model than per node of a chain. Two generic reference models (:data:`REFERENCE_MODELS
<crossover.calibration_plan.REFERENCE_MODELS>`, none of the zoo's) are timed whole, forward and
training step, and ``fresh_byte_s`` (per byte of outputs of 128 KiB or more), ``event_s`` (per host
event: op, view or module call; a sequence of different ops dispatches slower than one op repeated)
and an extra ``backward_op_s`` are fitted to what the primitives leave unexplained (non-negative
least squares of the relative residuals); ``meta["reference_models"]`` reports the fit.
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from .calibration_plan import CHAIN_LENGTHS, PLANS, SGD_PARAMS, Plan, llc_bytes, make_step, points, reference_point
from .errors import ConfigError
from .profiles import CALIBRATION_CSV, Curve, Grid, Profile, write_profile

__all__ = ["run_calibration", "build_profile", "read_calibration", "CSV_COLUMNS"]

CSV_COLUMNS = ("round", "sequence", "reference", "key", "family", "name", "m", "k", "n", "x", "cold", "shape",
               "median_s", "calls_per_repeat", "raw_times_s", "device_times_s")


def run_calibration(device: str, out_dir, *, plan: Plan = PLANS["quick"], seed: int = 0, threads: int = 0,
                    machine: Optional[str] = None, force: bool = False,
                    on_progress: Optional[Callable[[str], None]] = None) -> Profile:
    """Calibrate ``device`` with ``plan`` into ``out_dir`` (``calibration.csv`` and ``profile.json``).

    Parameters
    ----------
    device : {"cpu", "cuda"}
    out_dir : path
        Created if missing; a directory already holding a profile is refused unless ``force``.
    plan : Plan
        ``PLANS["quick"]`` (about a minute on the 2-core VM), ``PLANS["full"]`` or ``PLANS["smoke"]``.
    seed : int
        Seeds the rounds' orders.
    threads : int
        CPU intra-op threads (0: torch's default); recorded in the profile.
    machine : str, optional
        Label (default :func:`crossover.env.machine_label`).
    force : bool
        Overwrite an existing profile.
    on_progress : callable, optional
        Called with a label after every visit.

    Returns
    -------
    Profile
    """
    from .env import cuda_available, environment
    from .measurement import _num_threads
    from .module_measure import measure_rounds
    from .results import make_results_directory, raw_times_to_text

    if device not in ("cpu", "cuda"):
        raise ConfigError(f"unknown device {device!r}; expected cpu or cuda")
    if device == "cuda" and not cuda_available():
        raise ConfigError("device 'cuda' requested but CUDA is not available on this machine")
    out_dir = Path(out_dir)
    if (out_dir / "profile.json").exists() and not force:
        raise ConfigError(f"{out_dir} already holds a profile.json; choose another --out or pass --force")
    make_results_directory(out_dir)
    start = time.perf_counter()
    llc = llc_bytes() if device == "cpu" else _gpu_l2_bytes()
    with _num_threads(threads) as threads_used:
        plan_points = points(plan, device)
        pools = {}
        steps = [(p.key, make_step(p, device, llc=llc, pool_factor=plan.cold_pool_factor, cache=pools))
                 for p in plan_points]
        reference = reference_point()
        visits = measure_rounds(steps, rounds=plan.rounds, options=plan.options, seed=seed, device=device,
                                reference=(reference.key, make_step(reference, device)), on_progress=on_progress,
                                regime="throughput" if device == "cuda" else "latency")
    by_key = {p.key: p for p in [*plan_points, reference]}
    rows = []
    for visit in visits:
        point = by_key[visit["key"]]
        rows.append(dict(round=visit["round"], sequence=visit["sequence"], reference=visit["reference"], key=point.key,
                         family=point.family, name=point.name, m=point.m, k=point.k, n=point.n, x=point.x,
                         cold=point.cold, shape="x".join(map(str, point.shape)), median_s=visit["median_s"],
                         calls_per_repeat=visit["calls_per_repeat"],
                         raw_times_s=raw_times_to_text(visit["raw_times_s"]),
                         device_times_s=raw_times_to_text(visit["device_times_s"])))
    with open(out_dir / CALIBRATION_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    env = environment()
    meta = dict(plan=plan.name, rounds=plan.rounds, seed=seed, statistic="p10", elapsed_s=time.perf_counter() - start,
                device_name=env.get("gpu_name") if device == "cuda" else env.get("cpu_model"),
                timer=asdict(plan.options), environment=env)
    profile = build_profile(rows, device=device, machine=machine or env["machine"], threads=threads_used,
                            llc=llc, meta=meta)
    write_profile(out_dir, profile)
    return profile


def _gpu_l2_bytes(default: int = 50 * 2**20) -> int:
    """The GPU's L2 cache (what "cold" weights must exceed on a GPU)."""
    import torch

    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or default)


def read_calibration(out_dir) -> list:
    """The visits of ``DIR/calibration.csv`` as dicts (to rebuild a profile with :func:`build_profile`)."""
    with open(Path(out_dir) / CALIBRATION_CSV, newline="") as handle:
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
    """(rounds whose reference was slow, the reference's noise floor)."""
    from .results import DRIFT_LIMIT

    refs = {}
    for row in rows:
        if row["reference"]:
            refs[row["round"]] = float(row["median_s"])
    if len(refs) < 2:
        return set(), 0.0
    values = np.array(list(refs.values()))
    quiet, median = float(np.quantile(values, 0.10)), float(np.median(values))
    drifted = {r for r, v in refs.items() if v > DRIFT_LIMIT * quiet}
    return drifted, float(np.mean(np.abs(values / median - 1)))


#: Primitives whose time is the host's even on a GPU (the rest, on a GPU: the CUDA events' span).
_HOST_FAMILIES = ("overhead", "h2d", "model")


def _statistics(rows, drifted) -> dict:
    """key → (p10 of the pooled repeats of the quiet rounds, relative round-to-round spread, a row).
    Where a visit recorded CUDA-event times (a GPU's kernels), those are used for its kernel families."""
    from .module_measure import summarise_rounds

    grouped = {}
    for row in rows:
        if not row["reference"]:
            grouped.setdefault(row["key"], []).append(row)
    out = {}
    for key, visits in grouped.items():
        quiet = [v for v in visits if v["round"] not in drifted] or visits
        events = (visits[0]["family"] not in _HOST_FAMILIES
                  and all(len(_times(v.get("device_times_s", ""))) for v in quiet))
        field = "device_times_s" if events else "raw_times_s"
        stats = summarise_rounds([dict(raw_times_s=_times(v[field])) for v in quiet])
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
    values = dict(dispatch_s=t("dispatch"), view_s=t("view"), module_call_s=t("module_call"),
                  grad_record_s=grad - mul, backward_op_s=slope - mul,
                  backward_call_s=backward[0] - n1 * slope - 2 * mul,  # less the sum and its ones_like
                  optimizer_param_s=sgd_slope - t("dispatch"), optimizer_step_s=t(f"sgd/{p1}") - p1 * sgd_slope)
    return {k: max(float(v), 0.0) for k, v in values.items()}


def _grid(name: str, cells: dict) -> Grid:
    m, kn = sorted({c[0] for c in cells}), sorted({c[1] for c in cells})
    if len(cells) != len(m) * len(kn):
        raise ValueError(f"the {name} grid is incomplete")
    return Grid(tuple(m), tuple(kn), tuple(tuple(cells[(a, b)] for b in kn) for a in m))


def build_profile(rows, *, device: str, machine: str, threads: int = 0, llc: int = 32 * 2**20,
                  meta: Optional[dict] = None) -> Profile:
    """Condense calibration visits (as :data:`CSV_COLUMNS` dicts) into a :class:`Profile` (pure).

    Raises
    ------
    ValueError
        The visits lack a primitive every profile needs (the overheads, the hot matmul grid).
    """
    drifted, noise_floor = _drifted_rounds(rows)
    by_point = _statistics(rows, drifted)

    def overhead(name: str) -> float:
        base, _, n = name.partition("/")
        for seconds, _, row in by_point.values():
            if row["family"] == "overhead" and row["name"] == base and (not n or int(row["n"]) == int(n)):
                return seconds
        raise ValueError(f"the calibration lacks the overhead primitive {name!r}")

    overheads = _overheads(overhead)
    families = {}
    for seconds, spread, row in by_point.values():
        families.setdefault(row["family"], []).append((seconds, spread, row))
    if device == "cuda":
        overheads["launch_s"] = overheads["dispatch_s"]
        overheads["sync_s"] = overhead("sync")
    grids = {}
    for name, family, cold in (("matmul", "matmul", False), ("matmul_cold", "matmul", True), ("conv", "conv", False),
                               ("conv_backward", "conv_backward", False)):
        cells = {(int(r["m"]), float(r["x"]) / (2 * int(r["m"]))): s for s, _, r in families.get(family, [])
                 if bool(r["cold"]) == cold and math.isfinite(s)}
        if cells:
            grids[name] = _grid(name, cells)
    if "matmul" not in grids:
        raise ValueError("the calibration lacks the matmul grid")
    curves = {}
    for family, items in families.items():
        if family in ("overhead", "matmul", "matmul_check", "conv", "conv_backward", "model"):
            continue
        curves[family] = Curve.fit([float(r["x"]) for _, _, r in items], [s for s, _, _ in items])
    hot = grids["matmul"]
    flop_rates = [2.0 * a * b / hot(a, b) for a in hot.m for b in hot.kn]
    bandwidths = [float(r["x"]) / s for s, _, r in families.get("elementwise", []) + families.get("copy", [])]
    spread = {family: float(np.nanmedian([s for _, s, _ in items])) for family, items in families.items()}
    spread["view"] = spread.get("overhead", 0.0)
    checks = [s / hot(int(r["m"]), int(r["k"]) * int(r["n"])) - 1 for s, _, r in families.get("matmul_check", [])]
    extra = dict(meta or {})
    extra["drifted_rounds"] = sorted(drifted)
    if checks:
        extra["matmul_check_error_rel"] = {"median": float(np.median(np.abs(checks))),
                                           "worst": float(np.max(np.abs(checks)))}
    profile = Profile(device=device, machine=machine, overheads=overheads, grids=grids, curves=curves, llc_bytes=llc,
                      threads=threads, peak_flop_rate=max(flop_rates), peak_bandwidth=max(bandwidths, default=math.inf),
                      spread_rel=spread, noise_floor_rel=noise_floor, meta=extra)
    models = [(s, r) for s, _, r in families.get("model", []) if math.isfinite(s)]
    return _with_composition(profile, models) if models else profile


def _reference_steps(profile: Profile, models) -> list:
    """Per reference-model visit: (measured s, predicted s without the composition terms, (fresh bytes,
    backward ops, host events), label)."""
    from .calibration_plan import REFERENCE_MODELS, reference_model
    from .module_predict import host_events, step_prediction, trace_step
    from .op_costs import fresh_bytes

    out = []
    for seconds, row in models:
        name, workload = row["name"].split("/")
        model = reference_model(name)
        table, calls = trace_step(model, REFERENCE_MODELS[name], int(row["m"]), workload)
        records = table.to_dict("records")
        params = list(model.parameters())
        step = step_prediction(profile, records, module_calls=calls, n_params=len(params),
                               param_bytes=sum(p.numel() * p.element_size() for p in params))
        backward = sum(1 for r in records if r["phase"] == "backward" and r["launches"])
        events = host_events(records, calls)
        out.append((seconds, step["latency_s"], (sum(fresh_bytes(r) for r in records), backward, events),
                    dict(model=name, workload=workload, batch_size=int(row["m"]))))
    return out


def _with_composition(profile: Profile, models) -> Profile:
    """``profile`` with ``fresh_byte_s``, ``event_s`` and an extra ``backward_op_s`` fitted
    (non-negative least squares of the relative residuals) to the reference models' measured steps,
    and the fit's report in ``meta["reference_models"]``."""
    from scipy.optimize import nnls

    steps = _reference_steps(profile, models)
    design = np.array([[f / measured for f in features] for measured, _, features, _ in steps])
    target = np.array([(measured - base) / measured for measured, base, _, _ in steps])
    coef, _ = nnls(design, target)
    per_byte, per_op, per_event = (float(c) for c in coef)
    overheads = dict(profile.overheads, fresh_byte_s=per_byte, event_s=per_event,
                     backward_op_s=profile.overhead("backward_op_s") + per_op)
    report = []
    for measured, base, features, label in steps:
        predicted = base + float(np.dot(coef, features))
        report.append(dict(**label, measured_s=measured, predicted_s=predicted, error=predicted / measured - 1,
                           uncorrected_s=base))
    meta = dict(profile.meta, reference_models=report,
                composition_fit={"fresh_byte_s": per_byte, "backward_op_extra_s": per_op, "event_s": per_event})
    error = float(np.median([abs(r["error"]) for r in report])) if report else 0.0
    return Profile(**{**profile.__dict__, "overheads": overheads, "meta": meta, "model_error_rel": error})
