"""The paper's macros that come from fitted models: parameters, accuracy, crossovers.

Each function takes the baseline fits by role (:func:`crossover.analysis.reference_study.fit_baseline`) and returns
:class:`crossover.paper.latex.Macro` objects; :func:`crossover.paper.numbers.compute_macros` calls them.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from .. import analysis as A
from .latex import DASH, NA, Macro, _plain, _tt, format_interval, format_number, format_quantity, text_to_latex
from ..fit.latency_models import PARAMS
from ..analysis.reference_study import ANCHOR, baseline_rows

__all__ = [
    "PARAM_NAMES", "PARAM_LABELS", "AXIS_NAMES", "BAR_MAPE_PCT", "BAR_WITHIN_PCT", "TOLERANCE_PCT", "GEMM_MODELS",
    "parameter_macros", "accuracy_macros", "quiet_macros", "run_to_run_macros", "gemm_macros", "crossover_macros",
]

#: The accuracy bar of DESIGN.md, and the tolerance of "within".
BAR_MAPE_PCT = 5.0
BAR_WITHIN_PCT = 95.0
TOLERANCE_PCT = 10.0
#: Macro suffix of every latency-model parameter (from :data:`crossover.fit.latency_models.PARAMS`).
PARAM_NAMES = {name: param.macro for name, param in PARAMS.items()}
#: Parameter names as LaTeX text: the same labels as the CLI's, set in LaTeX.
PARAM_LABELS = {name: text_to_latex(param.label) for name, param in PARAMS.items()}
AXIS_NAMES = {"d_model": "DModel", "n_layers": "NLayers", "batch_size": "Batch"}


def _param_table(fit) -> pd.DataFrame:
    return fit.parameters()


def parameter_macros(role: str, fit) -> list:
    """Per parameter of every model: ``\\<Role><Param>`` (value and unit; a dagger where the data
    do not identify it: on its search bound or an interval over two decades) and ``...CI``; plus the
    chosen model, the number of fitted points and the list of unidentified parameters."""
    macros = []
    table = _param_table(fit).set_index("param") if fit is not None else None
    for name, suffix in PARAM_NAMES.items():
        value = ci = NA if fit is None else DASH
        if table is not None and name in table.index:
            row = table.loc[name]
            unit = row["unit"]
            value = format_quantity(row["value"], unit)
            if not row["identified"]:
                value += "$^\\dagger$"
            ci = format_interval(row["low"], row["high"], unit, like=row["value"])
        comment = f"{role}: {PARAM_LABELS[name]}"
        macros += [Macro(role + suffix, value, comment), Macro(role + suffix + "CI", ci, comment + ", interval")]
    unidentified = NA if fit is None else (", ".join(PARAM_LABELS[p] for p in table.index[~table["identified"].astype(bool)]) or "none")
    macros += [
        Macro(role + "Model", NA if fit is None else _tt(fit.model), f"{role}: model chosen by grouped CV"),
        Macro(role + "FitPoints", NA if fit is None else format_number(len(fit.points), 6), f"{role}: points fitted"),
        Macro(role + "Unidentified", unidentified, f"{role}: parameters the data do not identify"),
    ]
    llc = getattr(getattr(fit, "calibration", None), "llc_bytes", 0) or 0
    macros.append(Macro(role + "Llc", format_quantity(llc / 1e6, "MB") if llc else NA,
                        f"{role}: last-level cache of the calibration the fit costs steps on"))
    return macros


def _cv_values(fit, model: Optional[str] = None) -> dict:
    """Per axis and mean over axes: MAPE and % within the tolerance of ``model`` (default: chosen)."""
    model = model or fit.model
    rows = fit.cv[fit.cv["model"] == model] if len(fit.cv) else fit.cv
    out = {}
    for axis, name in AXIS_NAMES.items():
        row = rows[rows["axis"] == axis] if len(rows) else rows
        out[name] = (float(row["mape_pct"].iloc[0]), float(row["within_10_pct"].iloc[0])) if len(row) else (np.nan,) * 2
    out[""] = (float(rows["mape_pct"].mean()), float(rows["within_10_pct"].mean())) if len(rows) else (np.nan,) * 2
    return out


def accuracy_macros(fits: dict) -> list:
    """Grouped-CV accuracy per role (mean over held-out axes, and per axis), of the chosen model and
    of the plain affine model, and the best/worst over roles against the bar."""
    macros = []
    chosen = {}
    for role, fit in sorted(fits.items()):
        values = _cv_values(fit) if fit is not None else {k: (np.nan, np.nan) for k in ["", *AXIS_NAMES.values()]}
        chosen[role] = values[""]
        for axis, (mape, within) in values.items():
            where = f"held-out {axis or 'mean over axes'}"
            macros += [Macro(f"{role}CvMape{axis}", format_quantity(mape, "%", 2), f"{role}: CV MAPE, {where}"),
                       Macro(f"{role}CvWithin{axis}", format_quantity(within, "%", 2),
                             f"{role}: % within +-{TOLERANCE_PCT:g}%, {where}")]
        affine = _cv_values(fit, "affine")[""] if fit is not None and "affine" in set(fit.cv.get("model", [])) else (np.nan,) * 2
        macros.append(Macro(f"{role}AffineCvMape", format_quantity(affine[0], "%", 2), f"{role}: CV MAPE of the affine model"))
    fitted = {r: v for r, v in chosen.items() if np.isfinite(v[0])}
    mapes = [v[0] for v in fitted.values()] or [np.nan]
    withins = [v[1] for v in fitted.values()] or [np.nan]
    met = [r for r, v in fitted.items() if v[0] <= BAR_MAPE_PCT and v[1] >= BAR_WITHIN_PCT]
    macros += [
        Macro("CvMapeBest", format_quantity(min(mapes), "%", 2), "lowest mean CV MAPE over baseline series"),
        Macro("CvMapeWorst", format_quantity(max(mapes), "%", 2), "highest mean CV MAPE over baseline series"),
        Macro("CvWithinBest", format_quantity(max(withins), "%", 2), "best % within tolerance over series"),
        Macro("CvWithinWorst", format_quantity(min(withins), "%", 2), "worst % within tolerance over series"),
        Macro("BarMet", f"{len(met)} of {len(fitted)}", "series meeting the accuracy bar"),
        Macro("BarMetAll", "is" if fitted and len(met) == len(fitted) else "is not", "whether every series meets the bar"),
    ]
    return macros


def quiet_macros(fits: dict, quiet: dict) -> list:
    """The same baseline series fitted on each point's 10th percentile (``statistic="p10"``, the
    quiet machine): per role ``<Role>QuietCvMape``/``...CvWithin`` (mean over held-out axes),
    ``<Role>QuietModel`` and ``<Role>QuietNoiseFloor``; the batch crossover against ``Cuda``
    (``XoverQuietBatch...``, ``XoverVmQuietBatch...``)."""
    macros = []
    for role in sorted(fits):
        q = quiet.get(role)
        values = _cv_values(q)[""] if q is not None else (np.nan, np.nan)
        macros += [
            Macro(role + "QuietCvMape", format_quantity(values[0], "%", 2), f"{role}: CV MAPE (mean over axes), 10th percentile"),
            Macro(role + "QuietCvWithin", format_quantity(values[1], "%", 2), f"{role}: % within tolerance, 10th percentile"),
            Macro(role + "QuietModel", NA if q is None else _tt(q.model), f"{role}: model CV picks, 10th percentile"),
            Macro(role + "QuietNoiseFloor", format_quantity(np.nan if q is None else q.noise_floor_pct, "%", 2),
                  f"{role}: mean |one round's 10th percentile / the pooled one - 1|"),
        ]
    gpu = quiet.get("Cuda")
    for cpu_role in ("Host", "Vm"):
        cpu = quiet.get(cpu_role)
        name = "Xover" + ("" if cpu_role == "Host" else cpu_role) + "QuietBatch"
        fixed = dict(d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])
        c = A.crossover(cpu, gpu, "batch_size", **fixed) if cpu is not None and gpu is not None else None
        names = {} if c is None else {cpu.label: "CPU", gpu.label: "GPU"}
        macros += [Macro(name, NA if c is None else (format_number(c.x) if c.x else "none"),
                         f"{cpu_role} vs Cuda along batch_size, 10th percentiles"),
                   Macro(name + "CI", NA if c is None or c.x is None else format_interval(c.low, c.high), "bootstrap interval"),
                   Macro(name + "Text", crossover_text(c, "batch size", names), "the crossover as a phrase")]
    return macros


def run_to_run_macros(frame: pd.DataFrame) -> list:
    """How closely two runs of one machine agree, per statistic: the sizes of the baseline slice
    that two results directories of the same machine and device both measured (the VM's quick and
    paper runs), mean ``|log(a / b)|`` of ``median_s`` and of ``p10_s`` (``RunToRunMedian``,
    ``RunToRunQuiet``, ``RunToRunPoints``, ``RunToRunMachine``)."""
    base = baseline_rows(frame)
    best = None
    for (machine, device), rows in base.groupby(["machine", "device"]):
        dirs = sorted(rows["results_dir"].unique())
        for i, a in enumerate(dirs):
            for b in dirs[i + 1:]:
                per_size = [rows[rows["results_dir"] == r].groupby(list(A.AXES))[["median_s", "p10_s"]].median()
                            for r in (a, b)]
                pair = per_size[0].merge(per_size[1], left_index=True, right_index=True, suffixes=("", "_b"))
                if len(pair) and (best is None or len(pair) > len(best[1])):
                    best = (machine, pair)
    if best is None:
        return [Macro(n, NA, "no two runs of one machine share sizes")
                for n in ("RunToRunMedian", "RunToRunQuiet", "RunToRunPoints", "RunToRunMachine")]
    machine, pair = best
    dev = {c: 100 * float(np.mean(np.abs(np.log(pair[c] / pair[c + "_b"])))) for c in ("median_s", "p10_s")}
    return [Macro("RunToRunMedian", format_quantity(dev["median_s"], "%", 2), "mean |log ratio| of medians, two runs"),
            Macro("RunToRunQuiet", format_quantity(dev["p10_s"], "%", 2), "mean |log ratio| of 10th percentiles, two runs"),
            Macro("RunToRunPoints", format_number(len(pair), 6), "sizes both runs measured"),
            Macro("RunToRunMachine", _tt(machine), "the machine of the two runs")]


#: The refinement that is not a default candidate (see crossover.analysis) and the models it adds.
GEMM_MODELS = ("roofline+gemm", "roofline+hockney+gemm", "roofline+cache+hockney+gemm")


def gemm_macros(fits: dict, with_gemm: dict) -> list:
    """The baseline series refitted with the ``gemm`` candidates added (no bootstrap): per role the
    model CV then picks (``<Role>GemmModel``), its mean CV MAPE (``<Role>GemmCvMape``) and its
    per-layer matrix-matrix cost if it has one (``<Role>GemmCost``); and the batch crossover of the
    host CPU against the GPU with those fits (``XoverGemmBatch``)."""
    macros = []
    for role in sorted(fits):
        g = with_gemm.get(role)
        cost = np.nan
        if g is not None and "gemm_layer_s" in A.model_parameters(g.model):
            cost = float(g.params[A.model_parameters(g.model).index("gemm_layer_s")])
        macros += [Macro(role + "GemmModel", NA if g is None else _tt(g.model), f"{role}: model CV picks with gemm candidates"),
                   Macro(role + "GemmCvMape", format_quantity(np.nan if g is None else g.cv_score(), "%", 2),
                         f"{role}: its mean CV MAPE"),
                   Macro(role + "GemmCost", format_quantity(cost, "s") if np.isfinite(cost) else DASH,
                         f"{role}: per-layer matrix-matrix cost at batch > 1")]
    cpu, gpu = with_gemm.get("Host"), with_gemm.get("Cuda")
    c = A.crossover(cpu, gpu, "batch_size", d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"]) \
        if cpu is not None and gpu is not None else None
    macros.append(Macro("XoverGemmBatch", NA if c is None else (format_number(c.x) if c.x else "none"),
                        "Host vs Cuda along batch_size, fits with gemm candidates"))
    return macros


def crossover_text(c, axis_label: str, names: dict) -> str:
    if c is None:
        return NA
    lo, hi = c.x_range
    if c.x is None:
        share = 1 - c.never_fraction if np.isfinite(c.never_fraction) else np.nan
        return (f"none for {axis_label} {format_number(lo, 4)}--{format_number(hi, 4)}: the "
                f"{names.get(c.winner, c.winner)} is faster throughout (the curves cross in "
                f"{format_quantity(100 * share, '%', 2)} of bootstrap resamples)")
    return f"{format_number(c.x)} {format_interval(c.low, c.high)}"


def crossover_macros(fits: dict, level: float = 0.95) -> list:
    """Crossovers of each CPU role against its GPU (the host and the VM against ``Cuda``, a second GPU
    machine's host against its own ``CudaB``): along batch size at the anchor's d_model and n_layers
    (``Xover<Cpu>Batch...``), and along d_model at batch 1 (``Xover<Cpu>DModel...``); the host CPU's
    macros drop the role (``XoverBatch``), the others keep it (``XoverVmBatch``, ``XoverHostBBatch``)."""
    macros = []
    for cpu_role, gpu_role in (("Host", "Cuda"), ("Vm", "Cuda"), ("HostB", "CudaB")):
        cpu, gpu = fits.get(cpu_role), fits.get(gpu_role)
        prefix = "Xover" + ("" if cpu_role == "Host" else cpu_role)
        names = {}
        if cpu is not None and gpu is not None:
            names = {cpu.label: "CPU", gpu.label: "GPU"}
        for axis, fixed in (("batch_size", dict(d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])),
                            ("d_model", dict(batch_size=ANCHOR["batch_size"], n_layers=ANCHOR["n_layers"]))):
            name = prefix + AXIS_NAMES[axis]
            c = A.crossover(cpu, gpu, axis, **fixed) if cpu is not None and gpu is not None else None
            label = "batch size" if axis == "batch_size" else "d\\_model"
            where = ", ".join(f"{k}={v}" for k, v in fixed.items())
            macros += [
                Macro(name, NA if c is None else (format_number(c.x) if c.x else "none"), f"{cpu_role} vs Cuda along {axis} at {where}"),
                Macro(name + "CI", NA if c is None or c.x is None else format_interval(c.low, c.high), "bootstrap interval"),
                Macro(name + "Never", NA if c is None else format_quantity(100 * c.never_fraction, "%", 2),
                      "share of bootstrap resamples whose curves never cross in range"),
                Macro(name + "Empirical", NA if c is None else (", ".join(format_number(r) for r in c.empirical) or "none"),
                      "crossings between measured points (log-log interpolation)"),
                Macro(name + "Below", NA if c is None or c.x is None else names.get(c.winner_below, _plain(c.winner_below)),
                      "faster device below the crossover"),
                Macro(name + "Above", NA if c is None or c.x is None else names.get(c.winner_above, _plain(c.winner_above)),
                      "faster device above the crossover"),
                Macro(name + "Range", NA if c is None else f"{format_number(c.x_range[0], 4)}--{format_number(c.x_range[1], 4)}",
                      "range searched"),
                Macro(name + "Text", crossover_text(c, label, names), "the crossover as a phrase"),
            ]
    return macros
