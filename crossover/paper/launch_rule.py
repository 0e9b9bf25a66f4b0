"""The paper's rule of thumb per kernel launch (:mod:`crossover.analysis.launch_rule`): fitted on one
machine's paired toy points and scored on what it was not fitted to (the other GPU machine's toy points,
the VM's CPU against the first GPU, and the zoo's models measured on both devices of a GPU machine);
beside it the parameter-count rule scored inside its own domain; and the MNIST articles' claim checked on
the MNIST MLP itself. Pure given the zoo frames.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import claims as C
from ..analysis.launch_rule import fit_launch_rule, score_launch_rule, with_launches, zoo_points
from .claims import count_text, evidence_latex
from .latex import DASH, NA, Macro, format_interval, format_quantity, format_ratio

__all__ = ["launch_rule_macros", "mnist_zoo_macros", "zoo_params"]

#: Where the rule is scored: (macro letters, (CPU role, GPU role)) of toy points, and zoo sets.
_TOY_CHECKS = (("HundredToy", ("HostB", "CudaB")), ("VmToy", ("Vm", "Cuda")))
_ZOO_CHECKS = (("ZooHundred", "h100-run2"), ("ZooTwoHundred", "h200-run1"))


def zoo_params(models) -> dict:
    """Parameter count of each zoo model (by its file's stem), from its factory."""
    from ..analysis.zoo_runs import zoo_models_dir
    from ..measurement.user_module import build_model

    out = {}
    for name in models:
        path = zoo_models_dir() / f"{name}.py"
        if path.is_file():
            out[name] = sum(p.numel() for p in build_model(f"{path}:model").parameters())
    return out


def _inside_params_rule(points: pd.DataFrame) -> pd.DataFrame:
    """The points inside the parameter-count rule's domain (under its parameters and batch)."""
    return points[(points["params"] < C.RULE_PARAMS) & (points["batch_size"] < C.RULE_BATCH)]


def _wrong(points: pd.DataFrame) -> str:
    if points is None or not len(points):
        return "none"
    return ", ".join(f"{r.model.replace('_', ' ')} {r.workload} at {int(r.batch_size)}" for r in points.itertuples())


def launch_rule_macros(frame: pd.DataFrame, roles: dict, zoo_frames: dict) -> list:
    """``RuleLaunch...``: the per-launch rule fitted on the host CPU against its GPU (eager toy points:
    ``Threshold``, ``Gap``, ``Margin``, ``Score``, ``Loo``, ``Points``, ``Text``) and its score on the other
    GPU machine's toy points (``HundredToy``), the VM against the first GPU (``VmToy``), the zoo on both
    devices (``ZooHundred``, ``ZooTwoHundred``, with ``...Wrong``); ``RuleLayerHundredToy``: the per-layer
    rule (host fitted) on the other machine's toy, for comparison; ``RuleParamsInside...``: the
    parameter-count rule on the points inside its domain (toy: ``Host``; zoo: ``ZooHundred``)."""
    macros = []
    pick = lambda a, b: (C.paired_points(frame, roles[a], roles[b])  # noqa: E731
                         if a in roles and b in roles else pd.DataFrame())
    host = with_launches(pick("Host", "Cuda"))
    names = ("Threshold", "Gap", "Margin", "Score", "Loo", "Points", "Text")
    if host.empty:
        return [Macro("RuleLaunch" + s, NA, "no paired host/GPU points") for s in names]
    rule = fit_launch_rule(host)
    interior = 0 < rule.threshold < np.inf
    text = (f"the GPU wins if and only if the CPU's step takes more than {format_quantity(rule.threshold, 's')} "
            f"per kernel the GPU step launches") if interior else "no threshold does better than one device everywhere"
    macros += [Macro("RuleLaunchThreshold", format_quantity(rule.threshold, "s") if interior else DASH, "fitted X per launch"),
               Macro("RuleLaunchGap", format_interval(rule.low, rule.high, "s") if interior else DASH,
                     "every threshold in this gap scores the same"),
               Macro("RuleLaunchMargin", format_ratio(rule.high / rule.low, 2) if interior else DASH, "the gap's width"),
               Macro("RuleLaunchScore", count_text(rule.correct, rule.n), "right on the points it was fitted to"),
               Macro("RuleLaunchLoo", count_text(rule.loo_correct, rule.n), "right with each point left out"),
               Macro("RuleLaunchPoints", str(len(host)), "host CPU vs GPU eager toy points it is fitted to"),
               Macro("RuleLaunchText", text, "the rule in words")]
    layer_rule = C.fit_threshold_rule(host)
    for letters, (cpu_role, gpu_role) in _TOY_CHECKS:
        points = with_launches(pick(cpu_role, gpu_role))
        s = score_launch_rule(rule, points)
        macros.append(Macro(f"RuleLaunch{letters}", count_text(s["correct"], s["n"]), f"per-launch rule on {cpu_role} vs {gpu_role} toy"))
        if letters == "HundredToy":
            layer = C.score(points, layer_rule.predict(points)) if len(points) else dict(correct=0, n=0)
            macros.append(Macro("RuleLayerHundredToy", count_text(layer["correct"], layer["n"]),
                                "the per-layer rule (host fitted) on the other GPU machine's toy"))
    params = _inside_params_rule(host.assign(params=host["params"]))
    p = C.score(params, C.params_batch_rule(params)) if len(params) else dict(correct=0, n=0)
    macros.append(Macro("RuleParamsInsideHost", count_text(p["correct"], p["n"]), "parameter rule inside its domain, host toy"))
    for letters, name in _ZOO_CHECKS:
        frame_z = zoo_frames.get(name)
        points = zoo_points(frame_z) if frame_z is not None and "launches" in frame_z else pd.DataFrame()
        s = score_launch_rule(rule, points)
        macros += [Macro(f"RuleLaunch{letters}", count_text(s["correct"], s["n"]), f"per-launch rule on zoo set {name}"),
                   Macro(f"RuleLaunch{letters}Wrong", _wrong(s["misclassified"]) if s["n"] else NA,
                         f"zoo set {name}: points the rule gets wrong")]
        if letters == "ZooHundred":
            counts = zoo_params(sorted(set(points["model"]))) if len(points) else {}
            inside = _inside_params_rule(points.assign(params=points["model"].map(counts))) if len(points) else points
            q = C.score(inside, C.params_batch_rule(inside)) if len(inside) else dict(correct=0, n=0)
            macros.append(Macro("RuleParamsInsideZooHundred", count_text(q["correct"], q["n"]),
                                "parameter rule inside its domain, zoo set h100-run2"))
    return macros


def mnist_zoo_macros(zoo_frames: dict, zoo_set: str = "h100-run2") -> list:
    """``ClaimMnistZooVerdict``/``...Evidence``/``...Machine``: the MNIST claim on the MNIST MLP itself, from a
    zoo set measured on both devices (:func:`crossover.analysis.claims.mnist_zoo_claim`)."""
    frame = zoo_frames.get(zoo_set)
    points = zoo_points(frame) if frame is not None and "launches" in frame else pd.DataFrame()
    if len(points):
        points = points[(points["model"] == "mnist_mlp") & (points["workload"] == "train")]
    result = C.mnist_zoo_claim(points)
    machine = frame.attrs.get("label", NA) if frame is not None else NA
    return [Macro("ClaimMnistZooVerdict", result.verdict, "the MNIST claim on the MNIST MLP itself"),
            Macro("ClaimMnistZooEvidence", evidence_latex(result.evidence_template, result.numbers)
                  if result.evidence_template else DASH, "its numbers"),
            Macro("ClaimMnistZooMachine", machine, "the machine it was measured on")]
