"""The paper's numbers on how far one machine kind's steps move between visits
(:mod:`crossover.analysis.visit_spread`): the zoo's GPU steps on the H100's visits against the same
visits' calibration reference steps, and the MNIST MLP beside the calibration's reference MLP (a model
with more ops of the same kinds) in each visit. Pure, given the zoo sets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .latex import DASH, Macro, format_number

__all__ = ["visit_macros", "VISIT_MACHINE"]

#: The machine kind whose visits the text compares (the one visited most).
VISIT_MACHINE = "nvidia-h100-80gb-hbm3-16c"
_MNIST = ("mnist_mlp", "forward", 1)  # model, workload, batch size
_REFERENCE_MLP = "model/mlp/forward/1x512"  # the calibration's reference MLP, 512-256-256-10, batch 1


def _times_us(values) -> str:
    """``(7e-05, 0.000155, 8.3e-05)`` -> ``70, 155 and 83``."""
    parts = [format_number(1e6 * v, 2) for v in values]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _model_name(model: str, workload: str) -> str:
    """A zoo model as the transfer table names it, without its star."""
    from .transfer import TRANSFER_MODELS

    found = TRANSFER_MODELS.get((model, workload))
    return found[1].replace("$^\\ast$", "") if found else model.replace("_", " ")


def _ratio_text(x) -> str:
    return DASH if x is None or not np.isfinite(x) else format_number(x, 2) + "$\\times$"


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
