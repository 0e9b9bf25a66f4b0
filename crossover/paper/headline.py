"""The paper's headline: the crossover measured round by round on the host machine, in each of its runs.

Where a host's CPU and GPU were measured back to back in every shuffled round (a paired suite), each
round gives its own crossing of the two curves (:mod:`crossover.analysis.paired_rounds`); the median
over rounds, its quartiles and range are the measured crossover, and a second run in another order says
how well it reproduces. The fitted crossover (:func:`crossover.paper.fits.crossover_macros`) stands
beside it, with whether its interval holds the paired median (``XoverHoldsPaired``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.crossovers import curve_crossings
from ..analysis.reference_study import ANCHOR, BASELINE, PAPER_STATISTIC, usual_threads
from ..results.statistics import STATISTICS
from .latex import NA, Macro, _tt, format_interval, format_number

__all__ = ["headline_macros", "paired_macros"]

#: The latency the paper's medians of rounds read.
COLUMN = STATISTICS[PAPER_STATISTIC].column

_NAMES = ("Median", "Quartiles", "Range", "Crossing", "RoundCount")


def _distribution_macros(prefix: str, dist, what: str) -> list:
    if dist is None or not dist.n_rounds:
        return [Macro(prefix + s, NA, f"{what}: no paired rounds") for s in _NAMES]
    return [
        Macro(prefix + "Median", format_number(dist.median), f"{what}: median crossing over paired rounds"),
        Macro(prefix + "Quartiles", format_interval(dist.q25, dist.q75), f"{what}: quartiles of the crossings"),
        Macro(prefix + "Range", f"{format_number(dist.low)}--{format_number(dist.high)}" if dist.n_crossing else NA,
              f"{what}: smallest and largest crossing"),
        Macro(prefix + "Crossing", format_number(dist.n_crossing), f"{what}: rounds whose curves cross"),
        Macro(prefix + "RoundCount", format_number(dist.n_rounds), f"{what}: paired rounds"),
    ]


def headline_macros(everything: pd.DataFrame, results, roles: dict, fits: dict) -> list:
    """``PairedHost*``: the host CPU against its GPU along batch size at the anchor, round by round, in
    the host's main run (the one the fits read); ``PairedHostOther*``: the same in its other paired run;
    ``PairedHostRuns``: how many of its runs are paired; ``XoverHoldsPaired``: whether the fitted
    crossover's interval holds the main run's paired median ("holds" or "misses")."""
    from ..analysis.paired_rounds import crossover_distribution
    from ..analysis.reference_study import main_runs
    from ..results.store import load_results

    fixed = dict(d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"],
                 **{k: v for k, v in BASELINE.items() if k != "regime"})
    main = other = None
    n_runs = 0
    if "Host" in roles and "Cuda" in roles:
        machine = roles["Host"][0]
        rows = everything[everything["machine"] == machine]
        main_dir = set(main_runs(rows)["results_dir"]) if not rows.empty else set()
        rounds = load_results(results, combine_rounds=False)
        rounds = rounds[(rounds["machine"] == machine) & rounds["sequence"].notna()]
        pick = lambda role: {"machine": roles[role][0], "device": roles[role][1]}  # noqa: E731
        for directory, part in sorted(rounds.groupby("results_dir"), key=lambda item: item[0] not in main_dir):
            dist = crossover_distribution(part, pick("Host"), pick("Cuda"), fixed=fixed)
            if not dist.n_rounds:
                continue
            n_runs += 1
            if directory in main_dir and main is None:
                main = dist
            elif other is None:
                other = dist
    macros = [Macro("PairedHostRuns", format_number(n_runs), "the host's runs with paired CPU/GPU rounds")]
    macros += _distribution_macros("PairedHost", main, "host CPU vs GPU, main run")
    macros += _distribution_macros("PairedHostOther", other, "host CPU vs GPU, the other run (another order)")
    holds = NA
    fitted = None
    if fits.get("Host") is not None and fits.get("Cuda") is not None and main is not None and main.n_crossing:
        from .. import analysis as A

        fitted = A.crossover(fits["Host"], fits["Cuda"], "batch_size", d_model=ANCHOR["d_model"],
                             n_layers=ANCHOR["n_layers"])
        if fitted.x is not None and fitted.low is not None:
            holds = "holds" if fitted.low <= main.median <= fitted.high else "misses"
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
