"""From a latency target, a request rate and prices to the device, batch size, replicas and cost.

The question behind "CPU or GPU?" in production: *answer within 20 ms at 3,000 requests a second;
which device, how many replicas, what batch size, and what does it cost an hour?* The serving model
(:data:`SERVING_MODEL`, stated in ``crossover advise --help`` and the README):

- requests arrive at rate λ, spread evenly over ``n`` replicas; a replica runs batches of ``B`` back
  to back;
- a request waits at most the fill time ``B·n/λ`` plus one step, so the latency bound is
  ``B·n/λ + t_high(B)``, with ``t_high`` the upper end of the step's interval;
- one replica serves ``B/t(B)`` requests a second and runs at most 80% busy (:data:`MAX_BUSY`), so
  ``n ≥ λ·t(B)/(0.8·B)``;
- a GPU replica costs its machine's price an hour; a CPU replica at ``k`` threads ``k/cores`` of it.

For each device (one :class:`LatencyCurve`: a machine's device, a CPU at one thread count) and each
batch size, the fewest replicas that carry the rate (more only lengthen the fill), the bound and the
cost; the cheapest ``(B, n)`` meeting the target (ties: the lower bound, then the smaller batch);
over the devices, the cheapest is the choice. Where none meets the target, :class:`Advice` says what
would: the lowest bound reachable at the rate and on which device, and from which rate one replica
meets the target (and how much it carries).

:func:`advise_curves` is pure computation on curves (tested with synthetic ones whose answer is
known in closed form); :func:`advise` gathers the curves from the data
(:mod:`crossover.analysis.latency_curves`: measured latencies where the data hold the point,
predicted elsewhere) and prices them (:mod:`crossover.results.prices`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd

from ..errors import AnalysisError
from ..jsonable import schema_file, schema_tag
from ..results.statistics import DEFAULT_STATISTIC
from ..units import format_quantity, format_seconds
from .reference_study import N_BOOT

__all__ = ["ADVISE_SCHEMA", "SCHEMA_FILE", "MAX_BUSY", "SERVING_MODEL", "LatencyCurve", "Advice", "replicas_needed",
           "serving_table", "lowest_bound_by_rate", "advise_curves", "advise"]

#: The layout of ``crossover advise --json`` (:meth:`Advice.to_json`); the version goes up when a
#: key changes meaning or goes away.
ADVISE_SCHEMA = schema_tag("advise", 1)
#: The JSON Schema of :meth:`Advice.to_json` (package data).
SCHEMA_FILE = schema_file(ADVISE_SCHEMA)
#: The busiest a replica may run: a step's time over the time between its batches.
MAX_BUSY = 0.8
#: The serving model in words (``crossover advise --help``, the README, the JSON's ``serving_model``).
SERVING_MODEL = (
    "requests arrive at rate λ spread evenly over n replicas; a replica runs batches of B back to back; a "
    "request waits at most the fill time B·n/λ plus one step, so the latency bound is B·n/λ + t_high(B), "
    "t_high the upper end of the step's interval; one replica serves B/t(B) requests a second and runs at "
    f"most {MAX_BUSY:.0%} busy, so n ≥ λ·t(B)/({MAX_BUSY:g}·B). A GPU replica costs its machine's price an "
    "hour; a CPU replica at k threads costs k/cores of it. Per device, the cheapest (B, n) whose bound meets "
    "the target; the cheapest of those is the choice.")


@dataclass
class LatencyCurve:
    """One device's step latency against the batch size, and the price of one replica of it.

    Attributes
    ----------
    machine, device : str
        Where it runs (``device``: ``"cpu"`` or a GPU).
    threads : int or None
        A CPU's thread count (its share of the machine); None for a GPU.
    batch_size : array of int
        The batch sizes considered, increasing.
    latency_s, latency_high_s : array of float
        The step's latency at each batch size, seconds, and the upper end of its interval.
    source : tuple of str
        Per batch size, ``"measured"`` or ``"predicted"``.
    replica_usd_per_hour : float
        What one replica costs an hour (NaN until priced).
    cores : int or None
        The machine's cores (a CPU replica's price is ``threads / cores`` of the machine's).
    how : str
        Where the latencies come from, in words (measured where, predicted by what, what ``high`` is).
    price_source : str
        Where the machine's price comes from.
    """

    machine: str
    device: str
    threads: Optional[int]
    batch_size: np.ndarray
    latency_s: np.ndarray
    latency_high_s: np.ndarray
    source: tuple
    replica_usd_per_hour: float = float("nan")
    cores: Optional[int] = None
    how: str = ""
    price_source: str = ""

    def __post_init__(self):
        self.batch_size = np.asarray(self.batch_size, dtype=int)
        self.latency_s = np.asarray(self.latency_s, dtype=float)
        self.latency_high_s = np.maximum(np.asarray(self.latency_high_s, dtype=float), self.latency_s)
        self.source = tuple(self.source) if not isinstance(self.source, str) else (self.source,) * len(self.batch_size)
        n = len(self.batch_size)
        if not (len(self.latency_s) == len(self.latency_high_s) == len(self.source) == n) or not n:
            raise AnalysisError(f"{self.label}: batch sizes, latencies and sources must be as long, and not empty")
        if (self.batch_size < 1).any() or not (np.isfinite(self.latency_s) & (self.latency_s > 0)).all():
            raise AnalysisError(f"{self.label}: batch sizes must be positive and latencies positive numbers")

    @property
    def label(self) -> str:
        """``machine/device``, with a CPU's threads: ``nvidia-h200-16c/cpu (16 threads)``."""
        base = f"{self.machine}/{self.device}"
        if self.device != "cpu" or not self.threads:
            return base
        return f"{base} ({_plural(self.threads, 'thread')})"

    def priced(self, usd_per_hour: float, source: str = "") -> "LatencyCurve":
        """This curve with one replica's price an hour."""
        return replace(self, replica_usd_per_hour=float(usd_per_hour), price_source=source)


# ------------------------------------------------------------------------------ the serving model
def replicas_needed(rate_per_s, latency_s, batch_size, max_busy: float = MAX_BUSY) -> np.ndarray:
    """The fewest replicas that carry ``rate_per_s`` at batch ``batch_size``: ``⌈λ·t/(max_busy·B)⌉``,
    at least one (a ratio within 1e-9 of a whole number counts as that number)."""
    need = np.asarray(rate_per_s, float) * np.asarray(latency_s, float) / (max_busy * np.asarray(batch_size, float))
    return np.maximum(1, np.ceil(need * (1 - 1e-9))).astype(int)


def serving_table(curve: LatencyCurve, *, slo_s: float, rate_per_s: float) -> pd.DataFrame:
    """Every batch size of ``curve`` under the serving model (see the module docstring).

    Returns
    -------
    DataFrame
        Per batch size: ``label``, ``machine``, ``device``, ``threads``, ``batch_size``, ``latency_s``,
        ``latency_high_s``, ``source``, ``replicas`` (the fewest that carry the rate),
        ``latency_bound_s`` (``B·n/λ + t_high``), ``meets_target``, ``usd_per_hour`` (the replicas'),
        ``usd_per_million_requests``, ``busy`` (each replica's busy fraction), ``replica_rate_per_s``
        (what one replica carries at :data:`MAX_BUSY`: ``0.8·B/t``), ``replica_bound_s`` (its bound
        then: ``t/0.8 + t_high``) and ``min_rate_one_replica_per_s`` (the rate from which one replica
        meets the target, ``B/(target − t_high)``; infinite where ``t_high`` alone exceeds it).
    """
    b, t, high = curve.batch_size.astype(float), curve.latency_s, curve.latency_high_s
    n = replicas_needed(rate_per_s, t, b)
    bound = b * n / rate_per_s + high
    usd = n * curve.replica_usd_per_hour
    slack = slo_s - high
    with np.errstate(divide="ignore"):
        min_rate = np.where(slack > 0, b / np.where(slack > 0, slack, 1.0), np.inf)
    return pd.DataFrame(dict(
        label=curve.label, machine=curve.machine, device=curve.device, threads=curve.threads,
        batch_size=curve.batch_size, latency_s=t, latency_high_s=high, source=list(curve.source), replicas=n,
        latency_bound_s=bound, meets_target=bound <= slo_s * (1 + 1e-12), usd_per_hour=usd,
        usd_per_million_requests=usd / (rate_per_s * 3600) * 1e6, busy=rate_per_s * t / (n * b),
        replica_rate_per_s=MAX_BUSY * b / t, replica_bound_s=t / MAX_BUSY + high, min_rate_one_replica_per_s=min_rate))


def lowest_bound_by_rate(curve: LatencyCurve, rates_per_s) -> pd.DataFrame:
    """The lowest latency bound ``curve``'s device reaches at each rate: over its batch sizes, each with
    the fewest replicas that carry the rate (more only lengthen the fill).

    Returns
    -------
    DataFrame
        Per rate: ``label``, ``rate_per_s``, ``latency_bound_s``, and the ``batch_size``, ``replicas``
        and ``source`` that reach it.
    """
    rates = np.asarray(rates_per_s, float)[:, None]  # (rates, 1) against (batch sizes,)
    b = curve.batch_size.astype(float)[None, :]
    n = replicas_needed(rates, curve.latency_s[None, :], b)
    bound = b * n / rates + curve.latency_high_s[None, :]
    best = np.argmin(bound, axis=1)
    rows = np.arange(len(rates))
    return pd.DataFrame(dict(label=curve.label, rate_per_s=rates[:, 0], latency_bound_s=bound[rows, best],
                             batch_size=curve.batch_size[best], replicas=n[rows, best],
                             source=np.asarray(curve.source, dtype=object)[best]))


def _cheapest(table: pd.DataFrame) -> Optional[dict]:
    """The row meeting the target at the lowest cost (ties: lower bound, then smaller batch), or None."""
    ok = table[table["meets_target"]]
    if ok.empty:
        return None
    return ok.sort_values(["usd_per_hour", "latency_bound_s", "batch_size"], kind="mergesort").iloc[0].to_dict()


_CHOICE_KEYS = ("label", "machine", "device", "threads", "batch_size", "replicas", "latency_s", "latency_high_s",
                "latency_bound_s", "source", "usd_per_hour", "usd_per_million_requests", "busy")


def _row(row: Optional[dict], curve: LatencyCurve) -> Optional[dict]:
    if row is None:
        return None
    out = {k: row[k] for k in _CHOICE_KEYS}
    out["batch_size"], out["replicas"] = int(out["batch_size"]), int(out["replicas"])
    return dict(out, replica_usd_per_hour=curve.replica_usd_per_hour, price_source=curve.price_source)


# ------------------------------------------------------------------------------------ the answer
@dataclass
class Advice:
    """The answer of ``crossover advise``, as data.

    Attributes
    ----------
    payload : dict
        The answer's keys (see :meth:`to_json`); read them as attributes too (``advice.choice``).
    tables : dict
        Device label → its :func:`serving_table`.
    curves : list of LatencyCurve
        The priced latency curves the answer was computed from.
    warnings : list of str
        What the user should know about the data (also in the JSON).
    """

    payload: dict
    tables: dict = field(default_factory=dict, repr=False)
    curves: list = field(default_factory=list, repr=False)
    warnings: list = field(default_factory=list)

    def __getattr__(self, name):
        payload = self.__dict__.get("payload", {})
        if name in payload:
            return payload[name]
        raise AttributeError(f"Advice has no attribute {name!r}")

    @property
    def frame(self) -> pd.DataFrame:
        """Every device's :func:`serving_table`, stacked (tidy: one row per device and batch size)."""
        return pd.concat(list(self.tables.values()), ignore_index=True) if self.tables else pd.DataFrame()

    def by_rate(self, rates_per_s=None) -> pd.DataFrame:
        """Each device's lowest latency bound against the rate (:func:`lowest_bound_by_rate`), stacked:
        the latency each device gives at each throughput, what ``--plot`` draws. Default rates: 161 a
        log-spaced range from a hundredth of the asked rate to a hundred times it, or to ten times the
        rate at which a batch of one fills in one step of the fastest device (where the lines level
        off), whichever is higher."""
        if rates_per_s is None:
            fastest_s = min(float(c.latency_s[0]) for c in self.curves)
            top = max(self.rate_per_s * 100, 10 / fastest_s)
            rates_per_s = np.geomspace(self.rate_per_s / 100, top, 161)
        return pd.concat([lowest_bound_by_rate(c, rates_per_s) for c in self.curves], ignore_index=True)

    def to_json(self) -> dict:
        """The answer as one JSON-ready dict (:func:`crossover.jsonable.to_jsonable`), ``schema`` first:
        ``choice`` is null where no device meets the target (``alternatives`` then says what would)."""
        from ..jsonable import to_jsonable

        return to_jsonable({"schema": ADVISE_SCHEMA, **self.payload, "warnings": list(self.warnings)})


def _rate(rate_per_s: float, sig: int = 3) -> str:
    return format_quantity(rate_per_s, "req/s", sig)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def choice_text(choice: dict, *, rate_per_s: float) -> str:
    """The one-line answer for a choice (a ``choice`` dict of :meth:`Advice.to_json`)."""
    return (f"use {choice['label']}: batch {choice['batch_size']}, {_plural(choice['replicas'], 'replica')}, latency "
            f"≤ {format_seconds(choice['latency_bound_s'])} at {_rate(rate_per_s)}, "
            f"{format_quantity(choice['usd_per_hour'], 'USD/h')}, "
            f"{format_quantity(choice['usd_per_million_requests'], 'USD')} per million requests "
            f"(step latency {choice['source']})")


def _alternatives(tables: dict, curves: dict, *, slo_s: float, rate_per_s: float) -> dict:
    """What would meet the target when nothing does: the lowest bound at this rate, and the rate
    from which one replica meets the target (with what it carries)."""
    frame = pd.concat(list(tables.values()), ignore_index=True)
    low = frame.sort_values(["latency_bound_s", "usd_per_hour"], kind="mergesort").iloc[0]
    lowest = dict(label=low["label"], batch_size=int(low["batch_size"]), replicas=int(low["replicas"]),
                  latency_bound_s=float(low["latency_bound_s"]), source=low["source"])
    text = (f"no choice meets {format_seconds(slo_s)} at {_rate(rate_per_s)}: the lowest latency bound at this rate "
            f"is {format_seconds(lowest['latency_bound_s'], 4)} ({lowest['label']}, batch {lowest['batch_size']}, "
            f"{_plural(lowest['replicas'], 'replica')})")
    window = frame[frame["min_rate_one_replica_per_s"] <= frame["replica_rate_per_s"]]
    one = None
    if len(window):
        best = window.sort_values(["min_rate_one_replica_per_s", "usd_per_hour"], kind="mergesort").iloc[0]
        one = dict(label=best["label"], batch_size=int(best["batch_size"]),
                   min_rate_per_s=float(best["min_rate_one_replica_per_s"]),
                   max_rate_per_s=float(best["replica_rate_per_s"]), source=best["source"],
                   usd_per_hour=float(curves[best["label"]].replica_usd_per_hour))
        text += (f"; one replica meets {format_seconds(slo_s)} from {_rate(one['min_rate_per_s'], 4)} ({one['label']}, "
                 f"batch {one['batch_size']}, carrying up to {_rate(one['max_rate_per_s'])})")
    else:
        fastest = frame.sort_values("replica_bound_s").iloc[0]
        text += (f"; no device meets it at any rate: the lowest bound of a replica at {MAX_BUSY:.0%} busy is "
                 f"{format_seconds(fastest['replica_bound_s'])} ({fastest['label']}, batch {int(fastest['batch_size'])})")
    return dict(lowest_latency=lowest, one_replica=one, text=text)


def _option(curve: LatencyCurve, table: pd.DataFrame) -> dict:
    low = table.sort_values(["latency_bound_s", "usd_per_hour"], kind="mergesort").iloc[0]
    window = table[table["min_rate_one_replica_per_s"] <= table["replica_rate_per_s"]]
    one = None
    if len(window):
        w = window.sort_values("min_rate_one_replica_per_s", kind="mergesort").iloc[0]
        one = dict(batch_size=int(w["batch_size"]), min_rate_per_s=float(w["min_rate_one_replica_per_s"]),
                   max_rate_per_s=float(w["replica_rate_per_s"]))
    measured = [int(b) for b, s in zip(curve.batch_size, curve.source) if s == "measured"]
    return dict(label=curve.label, machine=curve.machine, device=curve.device, threads=curve.threads, cores=curve.cores,
                replica_usd_per_hour=curve.replica_usd_per_hour, price_source=curve.price_source,
                latencies=curve.how, batch_range=[int(curve.batch_size.min()), int(curve.batch_size.max())],
                measured_batch_sizes=measured, best=_row(_cheapest(table), curve),
                lowest_latency=dict(batch_size=int(low["batch_size"]), replicas=int(low["replicas"]),
                                    latency_bound_s=float(low["latency_bound_s"]), source=low["source"]),
                one_replica=one,
                curve=dict(batch_size=curve.batch_size.tolist(), latency_s=curve.latency_s.tolist(),
                           latency_high_s=curve.latency_high_s.tolist(), source=list(curve.source)))


def _check_positive(slo_s, rate_per_s) -> None:
    for name, value in (("latency target", slo_s), ("request rate", rate_per_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not (math.isfinite(value) and value > 0):
            raise AnalysisError(f"the {name} must be a positive number, got {value!r}")


def advise_curves(curves: Sequence[LatencyCurve], *, slo_s: float, rate_per_s: float,
                  question: Optional[dict] = None, prices: Optional[dict] = None,
                  warnings: Sequence[str] = ()) -> Advice:
    """The cheapest device, batch size and replica count meeting a latency target at a request rate.

    Parameters
    ----------
    curves : sequence of LatencyCurve
        Each device's latencies, priced (:meth:`LatencyCurve.priced`).
    slo_s : float
        The latency target, seconds (each request answered within it, by the model's bound).
    rate_per_s : float
        Requests a second.
    question, prices : dict, optional
        What was asked (default ``{"kind": "curves"}``: these curves) and which prices were read,
        carried into the answer as they are.
    warnings : sequence of str
        Notes about the data, carried into the answer.

    Returns
    -------
    Advice
        ``choice`` (None where no device meets the target), ``text`` (the one-line answer),
        ``options`` (per device its cheapest choice or None, its lowest bound, its curve) and
        ``alternatives`` (what would meet the target, where nothing does).

    Raises
    ------
    AnalysisError
        A target or rate that is not a positive number, no curves, a curve without a price.
    """
    _check_positive(slo_s, rate_per_s)
    if not curves:
        raise AnalysisError("no device to advise on")
    unpriced = [c.label for c in curves if not (math.isfinite(c.replica_usd_per_hour) and c.replica_usd_per_hour > 0)]
    if unpriced:
        raise AnalysisError(f"no price for {', '.join(unpriced)}")
    by_label = {c.label: c for c in curves}
    tables = {c.label: serving_table(c, slo_s=slo_s, rate_per_s=rate_per_s) for c in curves}
    options = [_option(c, tables[c.label]) for c in curves]
    feasible = [o["best"] for o in options if o["best"] is not None]
    choice = min(feasible, key=lambda r: (r["usd_per_hour"], r["latency_bound_s"], r["label"])) if feasible else None
    alternatives = None if choice else _alternatives(tables, by_label, slo_s=slo_s, rate_per_s=rate_per_s)
    order = sorted(options, key=lambda o: (o["best"] is None, o["best"]["usd_per_hour"] if o["best"] else 0,
                                           o["lowest_latency"]["latency_bound_s"]))
    payload = dict(question=dict(question or {"kind": "curves"}), slo_s=float(slo_s), rate_per_s=float(rate_per_s), max_busy=MAX_BUSY,
                   serving_model=SERVING_MODEL, prices=dict(prices or {}), choice=choice,
                   text=choice_text(choice, rate_per_s=rate_per_s) if choice else alternatives["text"],
                   alternatives=alternatives, options=order)
    return Advice(payload, tables=tables, curves=list(curves), warnings=list(warnings))


# ------------------------------------------------------------------------------------- advise
def advise(results=None, *, slo_s: float, rate_per_s: float, d_model: Optional[int] = None,
           n_layers: Optional[int] = None, model=None, input_shape: Optional[Sequence[int]] = None,
           input_dtype=None, profiles=None, prices=None, price_overrides: Optional[dict] = None,
           workload: str = "forward", mode: str = "eager", dtype: str = "float32", machine: Optional[str] = None,
           max_batch_size: Optional[int] = None, models: Optional[Sequence[str]] = None, n_boot: int = N_BOOT,
           seed: int = 0, statistic: str = DEFAULT_STATISTIC, progress: Optional[Callable] = None) -> Advice:
    """Which device, batch size and replica count serve ``rate_per_s`` within ``slo_s`` for the least
    money (the serving model: :data:`SERVING_MODEL`).

    Two questions, as :func:`crossover.decide` answers them:

    - the toy model (``d_model``, ``n_layers``) from the results: each machine's devices, and each
      CPU thread count measured at those sizes; latencies measured where the data hold the point
      (with the spread of its rounds: paired CPU/GPU rounds where the run paired them), predicted
      by the series' fit elsewhere (up to its largest measured batch, or ``max_batch_size``);
    - your own module (``model``: an ``nn.Module`` or ``"FILE.py:FACTORY"``, ``input_shape``: one
      sample's shape) from the calibration profiles (default: the shipped ones), each CPU at the
      thread count it was calibrated with, batch sizes up to ``max_batch_size`` (default 1024).

    Parameters
    ----------
    results : list of path, optional
        Results directories for the toy (default: the shipped reference data).
    slo_s : float
        The latency target, seconds.
    rate_per_s : float
        Requests a second.
    d_model, n_layers, model, input_shape, input_dtype, profiles
        The question (see above).
    prices : path, optional
        A prices file (default: the package's, :func:`crossover.shipped_data.shipped_prices_file`).
    price_overrides : dict, optional
        Machine label → USD an hour, replacing the file's price of that machine.
    workload, mode, dtype, machine
        Which series answer for the toy (``machine``: only its devices; also filters profiles).
    max_batch_size : int, optional
        The largest batch size considered.
    models, n_boot, seed, statistic, progress
        How the toy's series are fitted (as :func:`crossover.decide`).

    Returns
    -------
    Advice
        See :func:`advise_curves`; ``to_json()`` is what ``crossover advise --json`` prints.

    Raises
    ------
    AnalysisError
        A target or rate that is not positive, no matching data.
    PriceError
        A machine in the data without a price (one line naming it and how to give one).
    """
    from ..results.prices import price_of, read_prices, with_overrides
    from ..shipped_data import shipped_prices_file
    from . import latency_curves as L

    _check_positive(slo_s, rate_per_s)
    if max_batch_size is not None and not max_batch_size >= 1:
        raise AnalysisError(f"the largest batch size must be at least 1, got {max_batch_size}")
    prices_path = prices if prices is not None else shipped_prices_file()
    table = with_overrides(read_prices(prices_path), price_overrides)
    where = f"{prices_path}" + (" or --price" if price_overrides else "")
    if model is not None:
        loaded = L.profiles_for(profiles, machine=machine)
        priced = price_of(table, [p.machine for p in loaded], where)  # before any work: a missing price is quick
        curves, notes, source = L.module_curves(model, input_shape, loaded, workload=workload, input_dtype=input_dtype,
                                                max_batch_size=max_batch_size or L.MODULE_MAX_BATCH)
        question = dict(kind="model", model=source["model"], input_shape=list(input_shape), input_dtype=source["input_dtype"],
                        workload=workload, profiles=source["profiles"])
    else:
        if d_model is None or n_layers is None:
            raise AnalysisError("advice for the toy needs d_model and n_layers (or model= and input_shape=)")
        frame, paths = L.toy_points(results, d_model=d_model, n_layers=n_layers, workload=workload, mode=mode,
                                    dtype=dtype, machine=machine)
        priced = price_of(table, frame["machine"].unique(), where)
        curves, notes = L.toy_curves(frame, paths, d_model=d_model, n_layers=n_layers, statistic=statistic,
                                     models=models, n_boot=n_boot, seed=seed, progress=progress,
                                     max_batch_size=max_batch_size)
        question = dict(kind="toy", d_model=int(d_model), n_layers=int(n_layers), workload=workload, mode=mode,
                        dtype=dtype, statistic=statistic, results=paths)
    curves = [LatencyCurve(**c) for c in curves]
    curves = [c.priced(priced[c.machine].replica_usd_per_hour(c.device, c.threads, c.cores),
                       priced[c.machine].source) for c in curves]
    used = dict(file=str(prices_path), overrides=dict(price_overrides or {}),
                machines={m: dict(usd_per_hour=p.usd_per_hour, source=p.source, name=p.name, url=p.url, cores=p.cores)
                          for m, p in priced.items()})
    return advise_curves(curves, slo_s=slo_s, rate_per_s=rate_per_s, question=question, prices=used, warnings=notes)
