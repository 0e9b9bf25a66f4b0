"""The paper's headline: the crossover measured round by round on each GPU machine, in each of its runs.

Where a machine's CPU and GPU were measured back to back in every shuffled round (a paired suite), each
round gives its own crossing of the two curves (:mod:`crossover.analysis.paired_rounds`); the median
over rounds, its quartiles and range are the measured crossover, and a second run in another order says
how well it reproduces. The fitted crossover of the same run stands beside it, with whether its
interval holds the paired median.

Every GPU machine whose CPU was measured gets the same macros, named by its roles' suffix
(:func:`crossover.analysis.reference_study.assign_roles`: ``""`` for ``Host``/``Cuda``, ``B`` for
``HostB``/``CudaB``, ...), so the paper can set the machines side by side:

``PairedHost<s>Runs``
    the machine's runs with paired CPU/GPU rounds;
``PairedHost<s>{Median,Quartiles,Range,Crossing,RoundCount}``
    the per-round crossings of its first paired run (the run the paper's fits read when that one is
    paired, else the paired run with the most rows);
``PairedHost<s>Other...``
    the same in its second paired run (another order), ``n/a`` when there is none;
``PairedHost<s>Fit``, ``...FitCI``, ``...FitHolds`` (and ``...OtherFit...``)
    the crossover fitted on that run's own baseline rows, its bootstrap interval, and whether the
    interval holds that run's paired median (``holds`` or ``misses``);
``PairedHost<s>{Cpu,Gpu}Anchor``, ``PairedHost<s>Date``
    each device's latency at the anchor in that run, and the run's measurement date;
``PairedHost<s>MainRun``
    whether the run the paper's fits read (``Xover<s>Batch...``) is ``paired`` or ``unpaired``.

``XoverHoldsPaired`` is ``PairedHostFitHolds`` under its older name.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..analysis.crossovers import curve_crossings
from ..analysis.reference_study import (ANCHOR, BASELINE, N_BOOT, PAPER_STATISTIC, baseline_rows, fit_baseline,
                                        usual_threads)
from ..results.statistics import STATISTICS
from .latex import NA, Macro, _tt, and_list, format_interval, format_number, format_quantity

from .coverage import CoverageRun, batch_text as _batch, coverage_macros

__all__ = ["headline_macros", "headline_fit_requests", "paired_macros", "machine_suffixes"]

#: The latency the paper's medians of rounds read.
COLUMN = STATISTICS[PAPER_STATISTIC].column

_NAMES = ("Median", "Quartiles", "Range", "Crossing", "RoundCount")
_FIT_NAMES = ("Fit", "FitCI", "FitHolds")


def _distribution_macros(prefix: str, dist, what: str) -> list:
    if dist is None or not dist.n_rounds:
        return [Macro(prefix + s, NA, f"{what}: no paired rounds") for s in _NAMES]
    return [
        Macro(prefix + "Median", _batch(dist.median), f"{what}: median crossing over paired rounds"),
        Macro(prefix + "Quartiles", NA if not dist.n_crossing else f"[{_batch(dist.q25)}, {_batch(dist.q75)}]",
              f"{what}: quartiles of the crossings"),
        Macro(prefix + "Range", f"{_batch(dist.low)}--{_batch(dist.high)}" if dist.n_crossing else NA,
              f"{what}: smallest and largest crossing"),
        Macro(prefix + "Crossing", format_number(dist.n_crossing), f"{what}: rounds whose curves cross"),
        Macro(prefix + "RoundCount", format_number(dist.n_rounds), f"{what}: paired rounds"),
    ]


def _fit_macros(prefix: str, fitted, dist, what: str) -> list:
    """``<prefix>Fit``, ``FitCI``, ``FitHolds``: a fitted crossover beside a run's paired median."""
    if fitted is None or fitted.x is None:
        return [Macro(prefix + "Fit", NA if fitted is None else "none", f"{what}: fitted crossover"),
                Macro(prefix + "FitCI", NA, f"{what}: its bootstrap interval"),
                Macro(prefix + "FitHolds", NA, f"{what}: whether the interval holds the paired median")]
    holds = NA
    if fitted.low is not None and dist is not None and dist.n_crossing:
        holds = "holds" if fitted.low <= dist.median <= fitted.high else "misses"
    return [Macro(prefix + "Fit", format_number(fitted.x), f"{what}: fitted crossover along batch size"),
            Macro(prefix + "FitCI", NA if fitted.low is None else format_interval(fitted.low, fitted.high),
                  f"{what}: its bootstrap interval"),
            Macro(prefix + "FitHolds", holds, f"{what}: whether the interval holds the paired median")]


def machine_suffixes(roles: dict) -> list:
    """The role suffixes of the GPU machines the headline names: ``""`` and ``"B"`` always (their macros
    are ``n/a`` when absent, so the paper builds), then any further GPU machine's (``"C"``, ...)."""
    more = sorted({r[len("Cuda"):] for r in roles if r.startswith("Cuda")} - {"", "B"})
    return ["", "B", *more]


def _anchor_latency(rows: pd.DataFrame, device) -> Optional[float]:
    at = rows[(rows["device"] == device) & (rows["d_model"] == ANCHOR["d_model"])
              & (rows["n_layers"] == ANCHOR["n_layers"]) & (rows["batch_size"] == ANCHOR["batch_size"])]
    return float(at[COLUMN].median()) if len(at) else None


def _run_date(rows: pd.DataFrame) -> str:
    days = sorted({str(t)[:10] for t in rows.get("timestamp_utc", pd.Series(dtype=object)).dropna() if str(t)[:10]})
    return NA if not days else days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}"


def _paired_runs(suffix: str, roles: dict, everything: pd.DataFrame, rounds: pd.DataFrame) -> tuple:
    """``(runs, main_of, main_dirs)`` of the GPU machine of roles ``Host<suffix>``/``Cuda<suffix>``:
    its runs with paired rounds as ``(results_dir, distribution)`` (the run the fits read first), the
    results directories its fits read per device, and the runs holding both devices' fitted rows."""
    from ..analysis.paired_rounds import crossover_distribution
    from ..analysis.reference_study import main_runs

    host, cuda = "Host" + suffix, "Cuda" + suffix
    fixed = dict(d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"],
                 **{k: v for k, v in BASELINE.items() if k != "regime"})
    runs = []  # (results_dir, distribution), the run the fits read first
    main_of: dict = {}  # device -> the results directories its fits read
    main_dirs: set = set()  # a run holding both devices' fitted rows: its fits are the paper's
    if host in roles and cuda in roles:
        machine = roles[host][0]
        rows = everything[everything["machine"] == machine]
        if not rows.empty:
            chosen = main_runs(rows)
            main_of = {device: set(chosen.loc[chosen["device"] == device, "results_dir"])
                       for device in (roles[host][1], roles[cuda][1])}
            main_dirs = set.intersection(*main_of.values())
        mine = rounds[(rounds["machine"] == machine) & rounds["sequence"].notna()]
        pick = lambda role: {"machine": roles[role][0], "device": roles[role][1]}  # noqa: E731
        sizes = mine["results_dir"].value_counts()
        fitted_dirs = set().union(*main_of.values()) if main_of else set()
        order = sorted(sizes.index, key=lambda d: (d not in main_dirs, d not in fitted_dirs, -sizes[d], d))
        for directory in order:
            dist = crossover_distribution(mine[mine["results_dir"] == directory], pick(host), pick(cuda), fixed=fixed)
            if dist.n_rounds:
                runs.append((directory, dist))
    return runs, main_of, main_dirs


def _run_fit_requests(suffix: str, roles: dict, everything: pd.DataFrame, runs: list, main_dirs: set) -> list:
    """``(rows, roles)`` of each paired run whose crossover the paper's fits do not give: what
    :func:`_machine_macros` fits with :func:`crossover.analysis.reference_study.fit_baseline`."""
    host, cuda = "Host" + suffix, "Cuda" + suffix
    return [(everything[everything["results_dir"] == directory], {host: roles[host], cuda: roles[cuda]})
            for directory, _ in runs if directory not in main_dirs]


def headline_fit_requests(everything: pd.DataFrame, rounds: pd.DataFrame, roles: dict) -> list:
    """The ``(rows, roles)`` :func:`headline_macros` fits (with
    :func:`crossover.analysis.reference_study.fit_baseline`), known before it runs: to start them early
    (:func:`crossover.analysis.reference_study.prefetch_baselines`). ``rounds`` as :func:`headline_macros` takes them."""
    rounds = _with_sequence(rounds)
    requests = []
    for suffix in machine_suffixes(roles):
        runs, _, main_dirs = _paired_runs(suffix, roles, everything, rounds)
        requests += _run_fit_requests(suffix, roles, everything, runs, main_dirs)
    return requests


def _with_sequence(rounds: pd.DataFrame) -> pd.DataFrame:
    return rounds if "sequence" in rounds else rounds.assign(sequence=np.nan)


def _machine_macros(suffix: str, roles: dict, everything: pd.DataFrame, rounds: pd.DataFrame, fits: dict, *,
                    fit_options: dict, coverage: Optional[list] = None) -> list:
    """The headline macros of the GPU machine of roles ``Host<suffix>``/``Cuda<suffix>``; every paired run
    (not only the two the macros name) appended to ``coverage`` as a :class:`CoverageRun`."""
    from .. import analysis as A

    prefix = "PairedHost" + suffix
    host, cuda = "Host" + suffix, "Cuda" + suffix
    what = f"{host} vs {cuda}"
    runs, main_of, main_dirs = _paired_runs(suffix, roles, everything, rounds)
    macros = [Macro(prefix + "Runs", format_number(len(runs)), f"{what}: runs with paired CPU/GPU rounds"),
              Macro(prefix + "MainRun", NA if not main_of else
                    ("paired" if all(dirs <= {d for d, _ in runs} for dirs in main_of.values()) else "unpaired"),
                    f"{what}: whether the runs the paper's fits read have paired rounds")]
    fitted_runs = []
    for directory, dist in runs:
        if directory in main_dirs:
            run_fits = (fits.get(host), fits.get(cuda))
        else:
            sub = everything[everything["results_dir"] == directory]
            found = fit_baseline(sub, {host: roles[host], cuda: roles[cuda]}, **fit_options)
            run_fits = (found.get(host), found.get(cuda))
        fitted = None
        if all(f is not None for f in run_fits):
            fitted = A.crossover(*run_fits, "batch_size", d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])
        fitted_runs.append(fitted)
        if coverage is not None:
            coverage.append(CoverageRun(machine=roles[host][0], run=str(directory), dist=dist, fitted=fitted))
    for tag, index in (("", 0), ("Other", 1), ("Third", 2)):
        dist = runs[index][1] if len(runs) > index else None
        macros += _distribution_macros(prefix + tag, dist, f"{what}, paired run {index + 1}")
        fitted = fitted_runs[index] if len(runs) > index else None
        macros += _fit_macros(prefix + tag, fitted, dist, f"{what}, paired run {index + 1}")
    started = lambda d: str(everything.loc[everything["results_dir"] == d, "timestamp_utc"].dropna().min())  # noqa: E731
    medians = sorted((started(d), _batch(dist.median)) for d, dist in runs)
    macros.append(Macro(prefix + "AllMedians", NA if not medians else and_list(m for _, m in medians),
                        f"{what}: every paired run's median crossing, in the order measured"))
    directory = runs[0][0] if runs else None
    run = everything[everything["results_dir"] == directory] if directory else None
    sub = None if run is None else baseline_rows(run)
    for device_tag, role in (("Cpu", host), ("Gpu", cuda)):
        latency = None if sub is None else _anchor_latency(sub, roles[role][1])
        macros.append(Macro(prefix + device_tag + "Anchor", format_quantity(latency, "s"),
                            f"{what}, paired run 1: {role}'s latency at the anchor"))
    macros.append(Macro(prefix + "Date", NA if run is None else _run_date(run),
                        f"{what}, paired run 1: measurement date (UTC)"))
    return macros


def headline_macros(everything: pd.DataFrame, results, roles: dict, fits: dict, *, n_boot: int = N_BOOT,
                    seed: int = 0, jobs: int = 1, models: Optional[Sequence[str]] = None,
                    rounds: Optional[pd.DataFrame] = None) -> list:
    """The headline macros of every GPU machine (module docstring): the host CPU against its GPU along
    batch size at the anchor, round by round, in each paired run, with the crossover fitted on that run
    (``n_boot``, ``seed``, ``jobs``, ``models`` as :func:`crossover.analysis.reference_study.fit_baseline`
    takes them; a run the paper's fits already read reuses ``fits``). ``rounds``: every round of
    ``results`` (``load_results(results, combine_rounds=False)``, loaded here when not given)."""
    from ..results.store import load_results

    rounds = _with_sequence(load_results(results, combine_rounds=False) if rounds is None else rounds)
    options = dict(n_boot=n_boot, seed=seed, jobs=jobs, models=models)
    macros, coverage = [], []
    for suffix in machine_suffixes(roles):
        macros += _machine_macros(suffix, roles, everything, rounds, fits, fit_options=options, coverage=coverage)
    macros += coverage_macros(coverage)
    holds = next(m.text for m in macros if m.name == "PairedHostFitHolds")
    macros.append(Macro("XoverHoldsPaired", holds, "whether the fitted interval holds the paired median"))
    return macros


def paired_macros(frame: pd.DataFrame, rounds: pd.DataFrame, roles: dict) -> list:
    """Crossovers from paired rounds (:mod:`crossover.analysis.paired_rounds`): the host CPU against the GPU
    (``PairedHostRounds``: 0 where its rows carry no round sequence) and, on the first CPU-only
    role, one thread against its usual count along batch size at the anchor (``PairedThreads...``)."""
    from ..analysis.paired_rounds import crossover_distribution

    fixed = dict(d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"],
                 **{k: v for k, v in BASELINE.items() if k != "regime"})
    macros = []
    n = 0
    if "Host" in roles and "Cuda" in roles and "sequence" in rounds:
        pick = lambda r: {"machine": roles[r][0], "device": roles[r][1]}  # noqa: E731
        n = crossover_distribution(rounds, pick("Host"), pick("Cuda"), fixed=fixed).n_rounds
    macros.append(Macro("PairedHostRounds", format_number(n), "paired rounds of host CPU and GPU along batch"))
    names = ("Machine", "Rounds", "Crossing", "Median", "Quartiles", "Range", "Combined", "Usual")
    if "Vm" not in roles or "sequence" not in rounds:
        return macros + [Macro("PairedThreads" + s, NA, "no paired rounds") for s in names]
    machine, device = roles["Vm"]
    usual = usual_threads(frame).get((machine, device), np.nan)
    sel = lambda t: {"machine": machine, "device": device, "threads": t}  # noqa: E731
    dist = crossover_distribution(rounds, sel(1), sel(usual), fixed=fixed)
    rows = frame[(frame["machine"] == machine) & (frame["device"] == device)]
    for k, v in fixed.items():
        rows = rows[rows[k] == v]
    curves = [rows[rows["threads"] == t].groupby("batch_size")[COLUMN].median() for t in (1, usual)]
    combined = curve_crossings(*curves) if all(len(c) for c in curves) else []
    return macros + [
        Macro("PairedThreadsMachine", _tt(machine), "machine of the paired threads crossover"),
        Macro("PairedThreadsUsual", format_number(usual), "its usual thread count"),
        Macro("PairedThreadsRounds", format_number(dist.n_rounds), "paired rounds"),
        Macro("PairedThreadsCrossing", format_number(dist.n_crossing), "rounds whose curves cross"),
        Macro("PairedThreadsMedian", format_number(dist.median), "median crossing over rounds"),
        Macro("PairedThreadsQuartiles", format_interval(dist.q25, dist.q75), "quartiles of the crossings"),
        Macro("PairedThreadsRange", NA if not dist.n_crossing else f"{format_number(dist.low)}--{format_number(dist.high)}",
              "smallest and largest crossing"),
        Macro("PairedThreadsCombined", ", ".join(format_number(x) for x in combined) or "none",
              "crossing of the medians of rounds"),
    ]
