"""The paper's numbers on how far one machine kind's steps move between visits
(:mod:`crossover.analysis.visit_spread`): the zoo's GPU steps on the H100's visits against the same
visits' calibration reference steps, and the MNIST MLP beside the calibration's reference MLP (a model
with more ops of the same kinds) in each visit. Pure, given the zoo sets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .latex import DASH, Macro, and_list, format_number

__all__ = ["visit_macros", "paired_visit_macros", "interference_macros", "sitting_macros", "VISIT_MACHINE",
           "INTERFERENCE_LOG"]

#: The log of ``experiments/bench_interference.py`` shipped with a GPU run (a GPU step alone and after
#: CPU work), found below the results directories.
INTERFERENCE_LOG = "logs/interference.log"

#: The machine kind whose visits the text compares (the one visited most).
VISIT_MACHINE = "nvidia-h100-80gb-hbm3-16c"
_MNIST = ("mnist_mlp", "forward", 1)  # model, workload, batch size
_REFERENCE_MLP = "model/mlp/forward/1x512"  # the calibration's reference MLP, 512-256-256-10, batch 1


def _times_us(values) -> str:
    """``(7e-05, 0.000155, 8.3e-05)`` -> ``70, 155 and 83``."""
    return and_list(format_number(1e6 * v, 2) for v in values)


def _model_name(model: str, workload: str) -> str:
    """A zoo model as the transfer table names it, without its star."""
    from .transfer import TRANSFER_MODELS

    found = TRANSFER_MODELS.get((model, workload))
    return found[1].replace("$^\\ast$", "") if found else model.replace("_", " ")


def _ratio_text(x, sig: int = 2) -> str:
    return DASH if x is None or not np.isfinite(x) else format_number(x, sig) + "$\\times$"


def visit_macros(points: pd.DataFrame, references: pd.DataFrame, machine: str = VISIT_MACHINE) -> list:
    """``points``: :func:`crossover.analysis.visit_spread.point_spread` of the GPU zoo; ``references``:
    :func:`crossover.analysis.visit_spread.reference_spread` of the same sets' GPU calibrations.

    Macros: ``VisitsCount`` (the machine's visits with a GPU zoo), ``VisitsZooMedianRatio`` and
    ``VisitsZooWorstRatio`` (the zoo points' slowest / fastest visit, median and largest over points),
    ``VisitsZooWorstWhat`` (the model and batch of the largest), ``VisitsZooOverHalf`` (points whose visits
    differ by more than 1.5x) of ``VisitsZooPoints``, ``VisitsReferenceForwardWorstRatio`` and
    ``VisitsReferenceTrainWorstRatio`` (the calibration's reference steps, forward and training),
    ``VisitsMnistZoo`` (the MNIST MLP's GPU step at batch 1 per visit, µs) and ``VisitsMlpReference`` (the
    reference MLP's in the same visits, µs)."""
    mine = points[points["machine"] == machine] if len(points) else points
    refs = references[references["machine"] == machine] if len(references) else references
    have = len(mine) > 0
    worst = mine.loc[mine["ratio"].idxmax()] if have else None
    what = f"zoo GPU steps on the {machine}'s visits"
    macros = [Macro("VisitsCount", str(max(len(v) for v in mine["visits"])) if have else DASH,
                    f"{machine}: visits with a GPU zoo"),
              Macro("VisitsZooPoints", str(len(mine)) if have else DASH, f"{what}: points on two visits or more"),
              Macro("VisitsZooMedianRatio", _ratio_text(float(mine["ratio"].median())) if have else DASH,
                    f"{what}: median over points of slowest / fastest visit"),
              Macro("VisitsZooWorstRatio", _ratio_text(float(worst["ratio"])) if have else DASH,
                    f"{what}: largest slowest / fastest visit"),
              Macro("VisitsZooWorstWhat", f"{_model_name(worst['model'], worst['workload'])}, batch {int(worst['batch_size'])}"
                    if have else DASH, f"{what}: the point of the largest ratio"),
              Macro("VisitsZooOverHalf", str(int((mine["ratio"] > 1.5).sum())) if have else DASH,
                    f"{what}: points whose visits differ by more than 1.5x")]
    for tag, kind in (("Forward", "/forward/"), ("Train", "/train/")):
        sub = refs[refs["key"].str.contains(kind, regex=False)] if len(refs) else refs
        macros.append(Macro(f"VisitsReference{tag}WorstRatio",
                            _ratio_text(float(sub["ratio"].max())) if len(sub) else DASH,
                            f"{machine}: the calibration's reference {tag.lower()} steps, largest slowest / fastest visit"))
    mnist = mine[(mine["model"] == _MNIST[0]) & (mine["workload"] == _MNIST[1]) & (mine["batch_size"] == _MNIST[2])] \
        if have else mine
    ref = refs[refs["key"] == _REFERENCE_MLP] if len(refs) else refs
    zoo_times, ref_times = "", ""
    if len(mnist) and len(ref):  # the same visits, in the zoo's order
        by_visit = dict(zip(ref["visits"].iloc[0], ref["values_s"].iloc[0]))
        visits = [v for v in mnist["visits"].iloc[0] if v in by_visit]
        zoo_of = dict(zip(mnist["visits"].iloc[0], mnist["values_s"].iloc[0]))
        zoo_times = _times_us([zoo_of[v] for v in visits])
        ref_times = _times_us([by_visit[v] for v in visits])
    macros += [Macro("VisitsMnistZoo", zoo_times or DASH, f"{machine}: the MNIST MLP's GPU step at batch 1 per visit (µs)"),
               Macro("VisitsMlpReference", ref_times or DASH,
                     f"{machine}: the calibration's reference MLP (512-256-256-10) at batch 1, same visits (µs)")]
    return macros


def paired_visit_macros(everything: pd.DataFrame, machine: str = VISIT_MACHINE) -> list:
    """The paired suite's eager GPU steps at the anchor's size (d_model, n_layers) on each of
    ``machine``'s paired runs: per batch size measured in all of them, the slowest run's 10th percentile
    over the fastest's; ``VisitsPairedRuns``, ``VisitsPairedMedianRatio`` and ``VisitsPairedWorstRatio``
    (median and largest over batch sizes)."""
    from ..analysis.reference_study import ANCHOR

    names = ("Runs", "MedianRatio", "WorstRatio")
    needed = {"machine", "device", "mode", "workload", "d_model", "n_layers", "sequence", "p10_s", "results_dir"}
    if not needed <= set(everything.columns):
        return [Macro("VisitsPaired" + n, DASH, f"{machine}: no paired runs") for n in names]
    rows = everything[(everything["machine"] == machine) & (everything["device"].astype(str).str.startswith("cuda"))
                      & (everything["mode"] == "eager") & (everything["workload"] == "forward")
                      & (everything["d_model"] == ANCHOR["d_model"]) & (everything["n_layers"] == ANCHOR["n_layers"])
                      & everything["sequence"].notna()]
    table = rows.groupby(["results_dir", "batch_size"])["p10_s"].median().unstack(0).dropna()
    if table.shape[1] < 2 or table.empty:
        return [Macro("VisitsPaired" + n, DASH, f"{machine}: fewer than two paired runs") for n in names]
    ratio = table.max(axis=1) / table.min(axis=1)
    what = f"{machine}: paired suite's eager GPU steps at the anchor's size between its paired runs"
    return [Macro("VisitsPairedRuns", str(table.shape[1]), f"{what}: runs"),
            Macro("VisitsPairedMedianRatio", _ratio_text(float(ratio.median()), 3), f"{what}: median over batch sizes"),
            Macro("VisitsPairedWorstRatio", _ratio_text(float(ratio.max()), 3), f"{what}: largest")]


def interference_macros(results) -> list:
    """From the first :data:`INTERFERENCE_LOG` below ``results``: a GPU step after CPU work over its time
    alone, ``InterferenceLow`` and ``InterferenceHigh`` (the smallest and largest of the conditions the
    log's ``vs_alone`` column gives, ``alone`` itself left out)."""
    from ..results.side_files import side_files

    for path in side_files(results, INTERFERENCE_LOG):
        ratios = []
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] != "alone" and parts[-1].endswith("x"):
                try:
                    ratios.append(float(parts[-1][:-1]))
                except ValueError:
                    continue
        if ratios:
            return [Macro("InterferenceLow", format_number(min(ratios), 2), f"{path}: a GPU step after CPU work / alone, lowest"),
                    Macro("InterferenceHigh", format_number(max(ratios), 2), f"{path}: highest")]
    return [Macro("InterferenceLow", DASH, "no interference log"), Macro("InterferenceHigh", DASH, "no interference log")]


_THREADS = {1: "One", 2: "Two"}
#: The 2-core VMs whose ``bench_zoo.py`` sittings the text compares: macro word -> results folder name.
SITTING_MACHINES = {"Intel": "intel-xeon-2c", "Amd": "amd-epyc-2c"}


def sitting_macros(results, machines=None) -> list:
    """How far a 2-core VM's zoo steps move between sittings, and the same sitting's predictions with
    them (:func:`crossover.analysis.visit_spread.sitting_spread`), from the ``<machine>/logs`` folder
    below ``results`` (or ``logs`` of a results directory that is the machine's folder) for each of
    ``machines`` (default :data:`SITTING_MACHINES`: macro word -> folder; two such folders raise ValueError).

    Macros, for each machine word ``<m>`` and ``One`` and ``Two`` threads ``<n>``: ``Sittings<m><n>Count``
    (sittings), ``Sittings<m><n>Points`` (zoo points in at least five), and the medians over the points of
    the standard deviation over the sittings of the log of the measured latency, of the predicted one and of
    their ratio (``Sittings<m><n>MeasuredSd``, ``...PredictedSd``, ``...ErrorSd``, per cent of the log)
    and of the two logs' correlation (``Sittings<m><n>Correlation``)."""
    from ..analysis.visit_spread import read_sittings, sitting_spread

    macros = []
    for word, machine in (SITTING_MACHINES if machines is None else machines).items():
        folders = sorted({p.parent for directory in map(Path, results) if directory.is_dir()
                          for p in [*directory.rglob(f"{machine}/logs/bench_zoo_*_t1.csv"),
                                    *(directory.glob("logs/bench_zoo_*_t1.csv") if directory.name == machine else [])]})
        if len(folders) > 1:
            raise ValueError(f"several {machine} logs folders below the results: {', '.join(map(str, folders))}")
        folder = folders[0] if folders else None
        for threads, count in _THREADS.items():
            sittings = read_sittings(folder, threads) if folder else pd.DataFrame()
            points = sitting_spread(sittings)
            what = f"{folder or machine}: bench_zoo sittings at {threads} thread(s)"
            med = points[["measured_sd", "predicted_sd", "error_sd", "correlation"]].median() if len(points) else None
            name = f"Sittings{word}{count}"
            macros += [Macro(f"{name}Count", str(sittings["sitting"].nunique()) if len(sittings) else DASH,
                             f"{what}: sittings"),
                       Macro(f"{name}Points", str(len(points)) if len(points) else DASH, f"{what}: points in 5 or more")]
            for suffix, column in (("MeasuredSd", "measured_sd"), ("PredictedSd", "predicted_sd"), ("ErrorSd", "error_sd")):
                value = DASH if med is None else f"{100 * med[column]:.1f}"
                macros.append(Macro(f"{name}{suffix}", value, f"{what}: median sd of log {column[:-3]}, per cent"))
            macros.append(Macro(f"{name}Correlation", DASH if med is None else f"{med['correlation']:.2f}",
                                f"{what}: median correlation of log measured and log predicted"))
    return macros
