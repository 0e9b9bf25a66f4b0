"""The answer users come for, as one object: which device, by how much, and where that flips.

:func:`decide` is what ``crossover predict`` prints, computed in the library so that a notebook or a
script gets the same answer: for the toy model's sizes, every device's fitted latency with its
confidence and prediction intervals, the decision per CPU/GPU pair, the fitted crossover with its
bootstrap interval, the paired-round crossover where both devices were measured in the same rounds,
the machines' noise floors and the parameters the data do not identify; for the user's own module
(``model=``), every calibrated device's predicted latency per batch size and where they cross. The
CLI only parses arguments and formats :meth:`Decision.to_json` (``crossover predict --json`` prints it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

from ..errors import AnalysisError
from ..jsonable import schema_tag
from ..results.statistics import DEFAULT_STATISTIC
from .reference_study import N_BOOT

__all__ = ["Decision", "decide", "cheapest_per_batch", "fit_for_decision", "noise_floors", "load_points", "PREDICT_SCHEMA",
           "PREDICT_MODEL_SCHEMA", "DECISIVE_SHARE"]

#: The layout of ``crossover predict --json`` for the toy; the version goes up when a key changes
#: meaning or goes away.
PREDICT_SCHEMA = schema_tag("predict", 1)
#: The layout of ``crossover predict --model --json``.
PREDICT_MODEL_SCHEMA = schema_tag("predict_model", 1)
#: A winner is "too close to call" unless it wins in at least this share of bootstrap resamples.
DECISIVE_SHARE = 0.9


@dataclass
class Decision:
    """Everything ``crossover predict`` reports, as data.

    Attributes
    ----------
    kind : str
        ``"toy"`` (the residual MLP's sizes, from fitted series) or ``"model"`` (a module, from
        calibration profiles).
    payload : dict
        The answer's keys (see :meth:`to_json`); read them as attributes too (``decision.devices``).
    fits : dict
        The fitted series behind a toy answer (label → :class:`crossover.fit.series_fit.SeriesFit`);
        empty for a module.
    warnings : list of str
        What the user should know about the data (pooled runs at different speeds, a profile used for
        another thread count); also in the JSON.
    frame : pandas.DataFrame or None
        A module's per-profile, per-batch predictions (None for the toy).
    """

    kind: str
    payload: dict
    fits: dict = field(default_factory=dict, repr=False)
    warnings: list = field(default_factory=list)
    frame: object = field(default=None, repr=False)

    def __getattr__(self, name):
        payload = self.__dict__.get("payload", {})
        if name in payload:
            return payload[name]
        raise AttributeError(f"Decision has no attribute {name!r}")

    def to_json(self) -> dict:
        """The answer as one JSON-ready dict (:func:`crossover.jsonable.to_jsonable`), with its ``schema``
        (name and version) first."""
        from ..jsonable import to_jsonable

        schema = PREDICT_SCHEMA if self.kind == "toy" else PREDICT_MODEL_SCHEMA
        return to_jsonable({"schema": schema, **self.payload, "warnings": list(self.warnings)})


# -------------------------------------------------------------------------------- the pieces
def load_points(results, *, drop_drifted: bool = False, **filters):
    """The measured points of ``results`` (raw repeats kept, for bootstrap intervals) matching
    ``filters`` (column = value).

    Raises
    ------
    AnalysisError
        When no point matches, naming the directories and the filters.
    """
    from ..results.store import load_results

    frame = load_results(results, raw=True, drop_drifted=drop_drifted)
    for column, value in filters.items():
        frame = frame[frame[column] == value]
    if frame.empty:
        where = ", ".join(f"{k}={v}" for k, v in filters.items())
        paths = ", ".join(map(str, results))
        raise AnalysisError(f"no measured points in {paths}" + (f" with {where}" if where else ""))
    return frame


def fit_for_decision(frame, models: Optional[Sequence[str]] = None, *, n_boot: int = N_BOOT, seed: int = 0,
                     bootstrap: str = "auto", statistic: str = DEFAULT_STATISTIC,
                     progress: Optional[Callable] = None):
    """Fit every series of ``frame`` (see :func:`crossover.fit.all_series.fit_results`), after checking
    that every model named in ``models`` exists (None: each device's default candidates).

    Raises
    ------
    AnalysisError
        Unknown model names, all listed at once.
    """
    from ..fit.latency_models import MODELS, model_parameters
    from ..fit.all_series import fit_results

    unknown = []
    for model in models or ():
        try:
            model_parameters(model)
        except AnalysisError:
            unknown.append(model)
    if unknown:
        raise AnalysisError(f"unknown models {unknown}; expected some of {list(MODELS)} "
                            "or roofline+ any of hockney, cache, ramp, split, overlap, gemm")
    return fit_results(frame, list(models) if models else None, n_boot=n_boot, seed=seed, progress=progress,
                       bootstrap=bootstrap, statistic=statistic)


def noise_floors(results, statistic: str = DEFAULT_STATISTIC) -> list:
    """The machines' measured noise floors (``noise.json``, written by ``crossover noise``) found with
    ``results``, for ``statistic`` (else p10): one dict per file, the floors in percent."""
    from ..measurement.noise_file import read_noise

    floors = []
    for data in read_noise(results):
        summary = data.get("summary", {})
        chosen = statistic if statistic in summary else "p10"
        if summary.get(chosen):
            floors.append(dict(machine=data.get("machine"), date_utc=data.get("date_utc"), path=data.get("path"),
                               statistic=chosen, protocol=data.get("protocol"),
                               **{f"{k}_pct": 100 * v for k, v in summary[chosen].items()}))
    return floors


def _cpu_wins_share(cpu, gpu, size: dict):
    """The share of paired bootstrap resamples in which the CPU series is faster at ``size``."""
    import numpy as np

    if cpu.draws is None or gpu.draws is None:
        return None
    t_cpu = np.asarray(cpu.latency_s(**size, draws=True), float).ravel()
    t_gpu = np.asarray(gpu.latency_s(**size, draws=True), float).ravel()
    n = min(len(t_cpu), len(t_gpu))
    return float(np.mean(t_cpu[:n] < t_gpu[:n])) if n else None


def _number(value) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.4g}"


def decisions(fits: dict, result: dict, size: dict) -> list:
    """One decision per CPU/GPU pair of ``result["crossovers"]``: which device to use up to where, or
    "too close to call" at ``size`` when neither wins in :data:`DECISIVE_SHARE` of the resamples."""
    out = []
    for c in result.get("crossovers") or []:
        a, b = (fits[label] for label in c["between"])
        cpu, gpu = (a, b) if a.key["device"] == "cpu" else (b, a)
        name = {id(cpu): f"the CPU ({cpu.label})", id(gpu): f"the GPU ({gpu.label})"}
        share = _cpu_wins_share(cpu, gpu, size)
        axis = c["axis"].replace("_", " ")
        at = size[c["axis"]]
        if share is not None and 1 - DECISIVE_SHARE < share < DECISIVE_SHARE:
            text = (f"too close to call at {axis} {at}: the CPU ({cpu.label}) wins in {share:.0%} of bootstrap "
                    f"resamples")
        elif c["at"] is None:
            winner = cpu if c["winner_everywhere"] == cpu.label else gpu
            low, high = c["range"]
            text = f"use {name[id(winner)]} at every {axis} from {low:g} to {high:g}"
        else:
            below = cpu if c["winner_below"] == cpu.label else gpu
            above = gpu if below is cpu else cpu
            paired = c.get("paired_rounds")
            if paired and paired.get("median") is not None:  # measured pairs first, the fit beside
                text = (f"use {name[id(below)]} up to {axis} ~{paired['median']:.0f} (measured: {paired['text']}; "
                        f"fitted {c['at']:.0f} [{_number(c['low'])}, {_number(c['high'])}]), {name[id(above)]} above")
            else:
                text = (f"use {name[id(below)]} up to {axis} ~{c['at']:.0f} [{_number(c['low'])}, "
                        f"{_number(c['high'])}], {name[id(above)]} above")
        out.append(dict(between=c["between"], between_ids=c["between_ids"], cpu_wins_share=share, text=text,
                        paired_median=(c.get("paired_rounds") or {}).get("median"),
                        fitted_holds_paired=_holds(c)))
    return out


def _holds(c: dict):
    """Whether crossover ``c``'s fitted interval holds its paired rounds' median (None without both)."""
    paired = c.get("paired_rounds") or {}
    if paired.get("median") is None or c.get("low") is None or c.get("high") is None:
        return None
    return bool(c["low"] <= paired["median"] <= c["high"])


def add_paired_rounds(results, fits: dict, result: dict, frame) -> None:
    """Beside each fitted crossover of ``result``, the empirical one: the crossing of each round's
    paired curves (:mod:`crossover.analysis.paired_rounds`), where both series were measured in the
    same rounds along the axis (``frame``: the loaded points, which say whether a machine's runs were
    paired at all). Sets ``paired_rounds`` on each crossover (None where there are no pairs)."""
    from ..results.columns import SERIES_KEYS
    from ..results.store import load_results
    from .paired_rounds import crossover_distribution

    crossovers = [c for c in [result.get("crossover")] + list(result.get("crossovers") or []) if c]
    paired_machines = set(frame.loc[frame["sequence"].notna(), "machine"]) if "sequence" in frame else set()
    rounds = None
    for c in crossovers:
        if "paired_rounds" in c:
            continue
        a, b = (fits[label].key for label in c["between"])
        if a["machine"] != b["machine"] or a["machine"] not in paired_machines:
            c["paired_rounds"] = None  # other machines, or runs measured before pairing: no paired round
            continue
        if rounds is None:
            rounds = load_results(results, combine_rounds=False)
        dist = crossover_distribution(rounds, {k: a[k] for k in SERIES_KEYS}, {k: b[k] for k in SERIES_KEYS},
                                      along=c["axis"], fixed={k: v for k, v in c["fixed"].items() if v is not None})
        c["paired_rounds"] = dict(dist.to_dict(), text=dist.describe()) if dist.n_rounds else None


# ------------------------------------------------------------------------------------ decide
def decide(results=None, *, d_model: Optional[int] = None, n_layers: Optional[int] = None, batch_size=None,
           workload: str = "forward", mode: str = "eager", dtype: str = "float32", regime: str = "latency",
           transfer: str = "device", along: str = "batch_size", machine: Optional[str] = None,
           models: Optional[Sequence[str]] = None, n_boot: int = N_BOOT, seed: int = 0,
           bootstrap: str = "auto", statistic: str = DEFAULT_STATISTIC, drop_drifted: bool = False,
           progress: Optional[Callable] = None, model=None, input_shape: Optional[Sequence[int]] = None,
           input_dtype=None, profiles=None, transfer_input: bool = False,
           thread_starts: Optional[Mapping] = None) -> Decision:
    """Which device is faster for this model and batch size, by how much, and where that flips.

    Two questions, one answer object:

    - the toy model (``d_model``, ``n_layers``, one ``batch_size``): fit the series of ``results``
      that ``crossover predict`` reports on (per machine and device, the one with the most sizes),
      predict each device's latency with intervals, decide per CPU/GPU pair and find the crossover
      along ``along``, beside the paired-round crossover where the data pair the two devices;
    - your own module (``model``: an ``nn.Module``, or ``"FILE.py:FACTORY"``; ``input_shape``: one
      sample's shape; ``batch_size``: a list): trace it and cost it on every profile in ``profiles``
      (default: the shipped ones), with the crossover of every pair of profiles.

    Parameters
    ----------
    results : list of path, optional
        Results directories for the toy (default: the shipped reference data).
    d_model, n_layers, batch_size
        The toy's sizes (``batch_size`` one integer), or the module's batch sizes (a list).
    workload, mode, dtype, regime, transfer, along, machine
        Which series to answer from (``machine``: only that machine's devices).
    models, n_boot, seed, bootstrap, statistic, drop_drifted, progress
        How to fit (see :func:`fit_for_decision`); ``progress(costs)`` wraps the fits in a progress bar.
    model, input_shape, input_dtype, profiles, transfer_input
        The module question (see above); ``transfer_input`` adds the input's host-to-device copy on GPUs.
    thread_starts : mapping, optional
        The module question's OpenMP thread starts per step as counted where it was measured,
        ``{(threads, batch_size): starts}``, in place of counting them on this machine (see
        :func:`crossover.opcost.module_predict.predict_module`).

    Returns
    -------
    Decision
        Its :meth:`Decision.to_json` is what ``crossover predict --json`` prints.

    Raises
    ------
    AnalysisError
        No matching points, unknown models, sizes that are not positive.
    """
    if model is not None:
        return _decide_module(model, input_shape, batch_size, workload=workload, input_dtype=input_dtype,
                              profiles=profiles, transfer_input=transfer_input, thread_starts=thread_starts)
    return _decide_toy(results, d_model, n_layers, batch_size, workload=workload, mode=mode, dtype=dtype,
                       regime=regime, transfer=transfer, along=along, machine=machine, models=models,
                       n_boot=n_boot, seed=seed, bootstrap=bootstrap, statistic=statistic,
                       drop_drifted=drop_drifted, progress=progress)


def _decide_toy(results, d_model, n_layers, batch_size, *, workload, mode, dtype, regime, transfer, along,
                machine, models, n_boot, seed, bootstrap, statistic, drop_drifted, progress) -> Decision:
    import contextlib

    from ..fit import cache as fit_cache
    from ..fit.all_series import fitting_pool
    from ..fit.peaks import check_parameters
    from ..results.drift import mixed_speed_warnings
    from ..shipped_data import shipped_results_dir
    from .crossovers import predict, reported_series

    if d_model is None or n_layers is None or batch_size is None:
        raise AnalysisError("the toy's answer needs d_model, n_layers and batch_size")
    if isinstance(batch_size, (list, tuple)):
        if len(batch_size) != 1:
            raise AnalysisError(f"the toy's answer takes one batch size, got {list(batch_size)}")
        batch_size = batch_size[0]
    results = [str(p) for p in (results or [shipped_results_dir()])]
    wanted = dict(workload=workload, mode=mode, dtype=dtype, regime=regime, transfer=transfer)
    only = {"machine": machine} if machine else {}
    # With the fit cache off every series is fitted: the fitting processes start now and import while
    # the results load (with it on, fit_results starts them if a fit is missing).
    with contextlib.nullcontext() if fit_cache.enabled() else fitting_pool():
        # Only the series predict reports on (per machine and device, the one with the most sizes) are fitted.
        frame = load_points(results, drop_drifted=drop_drifted, **only, **wanted)
        reported = reported_series(frame)
        warnings = list(mixed_speed_warnings(reported))
        fits = fit_for_decision(reported, models, n_boot=n_boot, seed=seed, bootstrap=bootstrap, statistic=statistic,
                                progress=progress)
    result = predict(fits, d_model, n_layers, batch_size, axis=along, **wanted)
    add_paired_rounds(results, fits, result, frame)
    result["noise_floors"] = noise_floors(results, statistic)
    size = {"d_model": d_model, "n_layers": n_layers, "batch_size": batch_size}
    result["decisions"] = decisions(fits, result, size)
    for item in result["devices"]:
        table = check_parameters(fits[item["series"]].parameters(), fits[item["series"]].peaks)
        item["unidentified_parameters"] = [row.param for row in table.itertuples() if not row.identified]
        item["impossible_parameters"] = [row.param for row in table.itertuples() if row.above_peak]
    fleet_costs = _fleet_costs(results, fits, d_model, n_layers, batch_size)
    if fleet_costs is not None:
        result["fleet_costs"] = fleet_costs
    here = this_machine()
    if here and here not in {f.key["machine"] for f in fits.values()}:
        warnings.append(f"this machine ({here}) is not in these results: its CPU is not among the devices; measure it "
                        "with 'make demo' (or 'crossover sweep experiments/suites/quick.toml --out results/local') and "
                        "add --results results/local")
    payload = {"results": results, "statistic": statistic, **result}
    return Decision("toy", payload, fits=dict(fits), warnings=warnings)


def _fleet_costs(results, fits: dict, d_model, n_layers, batch_size) -> Optional[list]:
    """Where ``results`` hold a fleet (``fleet.json``, :mod:`crossover.measurement.fleet`) whose targets
    carry prices: every priced series' latency and cost of a million samples at this size, the
    cheapest marked (:func:`crossover.analysis.fleet_cost.cost_table`); None without a priced fleet."""
    from pathlib import Path

    from ..measurement.fleet import FLEET_FILE, fleet_prices
    from .fleet_cost import cost_table

    prices = {}
    for directory in results:
        if (Path(directory) / FLEET_FILE).is_file():
            prices.update(fleet_prices(directory))
    priced = {label: fit for label, fit in fits.items() if str(fit.key["machine"]) in prices}
    if not priced:
        return None
    table = cost_table(priced, prices, d_model=d_model, n_layers=n_layers, batch_sizes=[batch_size])
    return table.to_dict("records")


def this_machine() -> Optional[str]:
    """This machine's label (:func:`crossover.measurement.environment.machine_label`), or None when it
    cannot be read."""
    try:
        from ..measurement.environment import machine_label

        return machine_label()
    except Exception:  # an answer from data needs no machine: a label that cannot be read is no error
        return None


def _profile_notes(loaded) -> list:
    """What the user should know of the profiles used: whether one is this machine's CPU."""
    import torch

    here = this_machine()
    cpus = [p for p in loaded if p.device == "cpu"]
    threads_now = torch.get_num_threads()
    notes = [f"{p.label} was calibrated at {p.threads} threads and this process runs {threads_now}: its rows "
             f"predict a step at {p.threads} (calibrate at this count with 'crossover calibrate --device cpu "
             f"--threads {threads_now} --quick --out DIR', or run at {p.threads} threads)"
             for p in cpus if here and p.machine == here and p.threads and p.threads != threads_now]
    if not here or not cpus or any(p.machine == here for p in cpus):
        return notes
    names = ", ".join(sorted({p.label for p in cpus}))
    return [f"no CPU profile of this machine ({here}): the CPU rows are {names}'s, another machine's; calibrate "
            f"this one with 'crossover calibrate --device cpu --quick --out DIR' and pass --profiles DIR"]


def _decide_module(model, input_shape, batch_sizes, *, workload, input_dtype, profiles, transfer_input,
                   thread_starts=None) -> Decision:
    import warnings as _warnings

    from ..measurement.user_module import build_model, input_dtype as dtype_named
    from ..opcost.module_predict import predict_module
    from ..opcost.profiles import load_profiles

    if input_shape is None:
        raise AnalysisError("a module's answer needs input_shape (one sample's shape, e.g. (3, 32, 32))")
    name = model if isinstance(model, str) else type(model).__name__
    module = build_model(model) if isinstance(model, str) else model
    sizes = [int(b) for b in ([batch_sizes] if isinstance(batch_sizes, int) else batch_sizes)]
    dtype_name = input_dtype if isinstance(input_dtype, str) else \
        str(input_dtype).replace("torch.", "") if input_dtype is not None else "float32"
    input_dtype = dtype_named(dtype_name)
    loaded = load_profiles(profiles)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")  # reported once, in the answer's warnings
        frame = predict_module(module, sample_shape=tuple(input_shape), batch_sizes=sizes, profiles=loaded,
                               workload=workload, input_dtype=input_dtype, transfer=transfer_input, warn=False,
                               thread_starts=thread_starts)
    notes = _profile_notes(loaded) + list(dict.fromkeys(w for ws in frame["warnings"] for w in ws))
    payload = {"model": name, "input_shape": list(input_shape), "input_dtype": dtype_name, "workload": workload,
               "profiles": [p.path for p in loaded], "devices": frame.to_dict("records"),
               "crossover": frame.attrs["crossover"], "crossovers": frame.attrs["crossovers"]}
    return Decision("model", payload, warnings=notes, frame=frame)


def cheapest_per_batch(results, prices: dict, *, d_model: int, n_layers: int, batch_sizes: Sequence[int],
                       workload: str = "forward", mode: str = "eager", dtype: str = "float32",
                       regime: str = "latency", transfer: str = "device", statistic: str = DEFAULT_STATISTIC,
                       n_boot: int = 100, seed: int = 0, models: Optional[Sequence[str]] = None,
                       progress=None) -> tuple:
    """Fit each machine kind's devices in ``results`` and price them
    (:func:`crossover.analysis.fleet_cost.cost_table`).

    Returns
    -------
    (DataFrame, list of str)
        The cost table and the data's warnings (runs or nodes at different speeds).
    """
    from ..results.drift import mixed_speed_warnings
    from .crossovers import reported_series
    from .fleet_cost import cost_table

    if not batch_sizes or any(int(b) <= 0 for b in batch_sizes):
        raise AnalysisError(f"batch sizes must be positive integers, got {list(batch_sizes)}")
    frame = load_points([str(r) for r in results], workload=workload, mode=mode, dtype=dtype, regime=regime,
                        transfer=transfer)
    reported = reported_series(frame)
    fits = fit_for_decision(reported, models, n_boot=n_boot, seed=seed, statistic=statistic, progress=progress)
    return cost_table(dict(fits), prices, d_model=d_model, n_layers=n_layers, batch_sizes=batch_sizes), \
        list(mixed_speed_warnings(reported))
