"""Every number the paper quotes, computed from results and written as LaTeX macros.

``python -m crossover.paper_numbers --results experiments/results --out paper/generated/numbers.tex``
(what ``make paper`` runs) loads the results with :func:`crossover.load_results`, fits the baseline
series (forward pass, eager, float32, latency regime, input on the device, each device's usual
thread count) with :func:`crossover.analysis.fit_series`, solves the crossovers with
:func:`crossover.analysis.crossover`, reads the mode, round and metadata facts straight from the
rows, and writes one ``\\newcommand`` per number, with its unit in the macro text and intervals as
``[lo, hi]``. It also writes ``parameters.tex`` and ``accuracy.tex`` (table rows that only reference
those macros) next to it. The paper types no number by hand.

Series are named by role, so the paper's text does not depend on machine names:

=====  =======================================================================================
Vm     the CPU of a machine without a GPU (the first by name; further ones: VmB, VmC, ...)
Host   the CPU of a machine with a CUDA GPU (its host)
Cuda   that machine's GPU
=====  =======================================================================================

A role the results lack still gets every macro, with the text ``n/a``, so the paper always builds.
Nothing here measures: the timer's agreement with ``torch.utils.benchmark`` is not in the results
and is not reported.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np
import pandas as pd

from . import analysis as A
from .results import REFERENCE_SWEEP, load_metadata, load_results

__all__ = [
    "Macro", "BASELINE", "ANCHOR", "ROLES", "PARAM_NAMES", "BAR_MAPE_PCT", "BAR_WITHIN_PCT", "TOLERANCE_PCT",
    "main_runs", "baseline_rows", "assign_roles", "fit_baseline", "format_number", "format_quantity",
    "format_interval", "parameter_macros", "accuracy_macros", "crossover_macros", "mode_macros",
    "metadata_macros", "round_macros", "design_macros", "compute_macros", "render", "write", "main",
]

#: The setting the paper's main fits and crossovers use (besides each device's usual thread count).
BASELINE = dict(workload="forward", mode="eager", dtype="float32", regime="latency", transfer="device")
#: The anchor configuration of every sweep (DESIGN: defaults when an axis is not swept).
ANCHOR = dict(d_model=128, n_layers=128, batch_size=1)
#: Bootstrap resamples per fit: the same as ``crossover.figures.N_BOOT`` (and the same seeds), so the
#: crossovers the figures draw are the ones the text quotes.
N_BOOT = 100
#: The second batch size of the mode comparison (the mode sweep measures batch 1 and this).
WIDE_BATCH = 64
#: Roles the paper's text refers to (see the module docstring).
ROLES = ("Vm", "Host", "Cuda")
#: The accuracy bar of DESIGN.md, and the tolerance of "within".
BAR_MAPE_PCT = 5.0
BAR_WITHIN_PCT = 95.0
TOLERANCE_PCT = 10.0
#: Macro suffix of every latency-model parameter (``crossover.analysis.PARAMS``).
PARAM_NAMES = {
    "step_s": "Step", "layer_s": "PerLayer", "flops_per_s": "Rate", "bytes_per_s": "Bandwidth",
    "cache_bytes_per_s": "CacheBandwidth", "dram_bytes_per_s": "DramBandwidth", "cache_bytes": "CacheSize",
    "small_bytes_per_s": "SmallBandwidth", "large_bytes_per_s": "LargeBandwidth", "ramp_bytes": "RampSize",
    "act_bytes_per_s": "ActBandwidth", "batch_half": "BatchHalf", "smooth_p": "OverlapP",
}
#: Parameter names as LaTeX text (``crossover.analysis.PARAMS`` labels hold non-ASCII characters).
PARAM_LABELS = {
    "step_s": "per-step overhead", "layer_s": "per-layer overhead", "flops_per_s": "compute rate",
    "bytes_per_s": "bandwidth", "cache_bytes_per_s": "in-cache bandwidth", "dram_bytes_per_s": "out-of-cache bandwidth",
    "cache_bytes": "cache size (bandwidth midpoint)", "small_bytes_per_s": "bandwidth, small layers",
    "large_bytes_per_s": "bandwidth, large layers", "ramp_bytes": "layer size (bandwidth midpoint)",
    "act_bytes_per_s": "activation bandwidth", "batch_half": "Hockney $n_{1/2}$ (batch of half the rate)",
    "smooth_p": "overlap exponent $p$",
}
AXIS_NAMES = {"d_model": "DModel", "n_layers": "NLayers", "batch_size": "Batch"}
#: Figures the text cites from REFERENCES.md (numbers of other people's work, kept here so that the
#: paper's text still types none).
QUOTED = {
    "HabitatErrPct": (11.8, "\\,\\%", "Habitat (USENIX ATC 2021): mean error on training iterations"),
    "NnMeterWithinPct": (99.0, "\\,\\%", "nn-Meter (MobiSys 2021): share of predictions within 10%"),
    "EagerOpOverheadLowUs": (5, "", "pytorch/pytorch#41383: eager per-op overhead, low end (us)"),
    "EagerOpOverheadHighUs": (7, "\\,\\ensuremath{\\mu}s", "pytorch/pytorch#41383: high end"),
    "LeeSpeedup": (2.5, "\\ensuremath{\\times}", "Lee et al. ISCA 2010: GTX 280 vs Core i7-960"),
    "ChngParityDModel": (512, "", "Chng 2024: CPU about equal to the GPU up to this d_model"),
    "ChngParityBatch": (64, "", "Chng 2024: CPU comparable up to this batch"),
    "IndepthCpuFasterLow": (2, "", "indepth.dev: CPU VM 2-3x faster than an L4 (low)"),
    "IndepthCpuFasterHigh": (3, "\\ensuremath{\\times}", "indepth.dev: (high)"),
}
NA = "\\textit{n/a}"
DASH = "---"
MU = "\\ensuremath{\\mu}"
PCT = "\\,\\%"


@dataclass(frozen=True)
class Macro:
    """One ``\\newcommand{\\name}{text}`` with a comment saying where it comes from."""

    name: str
    text: str
    comment: str = ""

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z]+", self.name):
            raise ValueError(f"LaTeX macro names are letters only, got {self.name!r}")


# ------------------------------------------------------------------------------------ formatting
def format_number(x, sig: int = 3) -> str:
    """``x`` rounded to ``sig`` significant figures, as LaTeX text (thin-space thousands groups,
    a power of ten beyond 10^7, integers without a decimal point); ``n/a`` for None or NaN."""
    if x is None or not np.isfinite(x):
        return NA
    x = float(x)
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    if x == round(x) and abs(x) < 1e7 and exponent < sig + 4:  # counts and sizes: all their digits
        return f"{int(round(x)):,d}".replace(",", "\\,") if abs(x) >= 1e4 else str(int(round(x)))
    if abs(x) >= 1e7 or abs(x) < 1e-4:
        mantissa = round(x / 10**exponent, sig - 1)
        if abs(mantissa) >= 10:
            mantissa, exponent = mantissa / 10, exponent + 1
        return f"\\ensuremath{{{mantissa:.{sig - 1}f}\\times10^{{{exponent}}}}}"
    decimals = max(sig - 1 - exponent, 0)
    text = f"{round(x, decimals):,.{decimals}f}" if abs(x) >= 1e4 else f"{round(x, decimals):.{decimals}f}"
    return text.replace(",", "\\,")


#: unit -> ladder of (threshold in that unit, factor, unit to switch to) for readable values.
_LADDERS = {
    "s": [(1e-3, 1e6, MU + "s"), (1.0, 1e3, "ms"), (math.inf, 1.0, "s")],
    "GFLOP/s": [(1e3, 1.0, "GFLOP/s"), (1e6, 1e-3, "TFLOP/s"), (math.inf, 1e-6, "PFLOP/s")],
    "GB/s": [(1e3, 1.0, "GB/s"), (1e6, 1e-3, "TB/s"), (math.inf, 1e-6, "PB/s")],
    "MB": [(1e3, 1.0, "MB"), (math.inf, 1e-3, "GB")],
}


def _scale(value: float, unit: str) -> tuple:
    for threshold, factor, name in _LADDERS.get(unit, [(math.inf, 1.0, unit)]):
        if abs(value) < threshold:
            return factor, name
    return 1.0, unit


def _unit_text(unit: str) -> str:
    if not unit:
        return ""
    if unit in ("%",):
        return PCT
    if unit == "\u00b5s":
        unit = MU + "s"
    return "\\," + unit


def format_quantity(value, unit: str = "", sig: int = 3) -> str:
    """A value with its unit (seconds, GFLOP/s, GB/s and MB get a readable prefix)."""
    if value is None or not np.isfinite(value):
        return NA
    factor, unit = _scale(float(value), unit)
    return format_number(value * factor, sig) + _unit_text(unit)


def format_interval(low, high, unit: str = "", sig: int = 3, like=None) -> str:
    """``[lo, hi] unit``, scaled like ``like`` (default: like ``high``); ``n/a`` without both ends."""
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return NA
    factor, unit = _scale(float(like if like is not None else high), unit)
    return f"[{format_number(low * factor, sig)}, {format_number(high * factor, sig)}]" + _unit_text(unit)


def _tt(text: str) -> str:
    """Text for \\texttt{} (escape the few characters LaTeX treats specially)."""
    return "\\texttt{" + re.sub(r"([_#%&$])", r"\\\1", str(text)) + "}"


def _plain(text: str) -> str:
    return re.sub(r"([_#%&$])", r"\\\1", str(text))


# -------------------------------------------------------------------------------------- data
def main_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (machine, device), the rows of the results directory holding most of its points (so a
    quick run beside a paper run of the same machine is not mixed in)."""
    if frame.empty or "results_dir" not in frame:
        return frame
    keep = []
    for _, rows in frame.groupby(["machine", "device"], sort=True):
        best = rows["results_dir"].value_counts().idxmax()
        keep.append(rows[rows["results_dir"] == best])
    return pd.concat(keep, ignore_index=True)


def _usual_threads(frame: pd.DataFrame) -> dict:
    out = {}
    for (machine, device), rows in frame.groupby(["machine", "device"]):
        threads = rows["threads"].astype("float").fillna(-1)
        out[(machine, device)] = threads.value_counts().idxmax()
    return out


def baseline_rows(frame: pd.DataFrame, *, free: Sequence[str] = (), **override) -> pd.DataFrame:
    """Rows at :data:`BASELINE` (with ``override``) at each device's usual thread count; the
    columns named in ``free`` may take any value (``free=("mode",)``: every execution mode)."""
    if frame.empty:
        return frame
    wanted = {k: v for k, v in {**BASELINE, **override}.items() if k not in free}
    mask = np.ones(len(frame), bool)
    for column, value in wanted.items():
        mask &= (frame[column] == value).to_numpy()
    usual = _usual_threads(frame)
    threads = frame["threads"].astype("float").fillna(-1).to_numpy()
    mask &= np.array([threads[i] == usual[(m, d)] for i, (m, d) in enumerate(zip(frame["machine"], frame["device"]))])
    return frame[mask]


def assign_roles(frame: pd.DataFrame) -> dict:
    """Role tag (``Vm``, ``Host``, ``Cuda``, ``VmB``, ...) -> (machine, device) present in ``frame``."""
    roles = {}
    machines = sorted(frame["machine"].unique())
    gpu = [m for m in machines if frame.loc[frame["machine"] == m, "device"].str.startswith("cuda").any()]
    cpu_only = [m for m in machines if m not in gpu]
    suffix = lambda i: "" if i == 0 else chr(ord("A") + i)  # noqa: E731 - "", B, C, ...
    for i, machine in enumerate(cpu_only):
        roles["Vm" + suffix(i)] = (machine, "cpu")
    for i, machine in enumerate(gpu):
        devices = sorted(frame.loc[frame["machine"] == machine, "device"].unique())
        if "cpu" in devices:
            roles["Host" + suffix(i)] = (machine, "cpu")
        roles["Cuda" + suffix(i)] = (machine, next(d for d in devices if d.startswith("cuda")))
    return roles


#: The statistic the paper's (and its figures') fits read: the median of rounds, as in the first
#: edition, whose text compares it with the 10th percentile (the tool's default) where that matters;
#: ``crossover predict --statistic median`` quotes the same fits.
PAPER_STATISTIC = "median"


def _fit_one(args):
    rows, models, n_boot, seed, label, statistic = args
    return A.fit_series(rows, models, n_boot=n_boot, seed=seed, label=label, statistic=statistic)


def fit_baseline(frame: pd.DataFrame, roles: dict, *, models: Sequence[str] = tuple(A.MODELS), n_boot: int = N_BOOT,
                 seed: int = 0, jobs: int = 1, min_points: int = 8, statistic: str = PAPER_STATISTIC) -> dict:
    """Role -> :class:`crossover.analysis.SeriesFit` of its baseline series (None: too few points).

    Every role is fitted with the candidate ``models`` (grouped CV picks one), ``n_boot`` seeded
    bootstrap resamples and each point's latency ``statistic``; ``jobs`` > 1 fits the series in
    parallel processes (same results).
    """
    base = baseline_rows(frame)
    tasks, names = [], []
    for i, (role, (machine, device)) in enumerate(sorted(roles.items())):
        rows = base[(base["machine"] == machine) & (base["device"] == device)]
        if len(rows) >= min_points:
            label = f"{machine}/{device}"  # seeded by its label, as every entry point seeds it: same draws
            tasks.append((rows.reset_index(drop=True), tuple(models), n_boot, A.series_seed(label, seed), label,
                          statistic))
            names.append(role)
    fits = dict.fromkeys(roles)
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
            results = list(pool.map(_fit_one, tasks))
    else:
        results = [_fit_one(t) for t in tasks]
    fits.update(zip(names, results))
    return fits


# ------------------------------------------------------------------------------------ macros
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
                   Macro(name + "Text", _crossover_text(c, "batch size", names), "the crossover as a phrase")]
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


def _crossover_text(c, axis_label: str, names: dict) -> str:
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
    """Crossovers of each CPU role against ``Cuda``: along batch size at the anchor's d_model and
    n_layers (``Xover<Cpu>Batch...``), and along d_model at batch 1 (``Xover<Cpu>DModel...``); the
    host CPU's macros drop the role (``XoverBatch``), the 2-core VM's keep it (``XoverVmBatch``)."""
    macros = []
    gpu = fits.get("Cuda")
    for cpu_role in ("Host", "Vm"):
        cpu = fits.get(cpu_role)
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
                Macro(name + "Text", _crossover_text(c, label, names), "the crossover as a phrase"),
            ]
    return macros


def _point(frame, machine, device, *, mode="eager", **config):
    """The measured point at ``config``; a size measured by several sweeps (the anchor in the batch
    and threads sweeps) gets their median, as the fits and figures take it."""
    rows = frame[(frame["machine"] == machine) & (frame["device"] == device) & (frame["mode"] == mode)]
    for column, value in {**{k: v for k, v in BASELINE.items() if k != "mode"}, **config}.items():
        rows = rows[rows[column] == value]
    if "threads" in rows and len(rows) > 1:  # the device's usual thread count, as baseline_rows keeps
        usual = rows["threads"].astype("float").fillna(-1).value_counts().idxmax()
        rows = rows[rows["threads"].astype("float").fillna(-1) == usual]
    if not len(rows):
        return None
    point = rows.iloc[0].copy()
    for column in ("median_s", "compile_s", "device_busy_s"):
        if column in rows:
            point[column] = rows[column].median()
    return point


def mode_macros(frame: pd.DataFrame, roles: dict) -> list:
    """Execution modes at the anchor (and at batch 64) from the measured rows: time per layer, eager
    vs CUDA graphs on the GPU, eager vs ``torch.compile`` on each CPU, compile time, best modes."""
    macros = []
    L = ANCHOR["n_layers"]
    anchor = dict(ANCHOR)
    wide = dict(ANCHOR, batch_size=WIDE_BATCH)

    def ratio(a, b):
        return float(a["median_s"] / b["median_s"]) if a is not None and b is not None else np.nan

    for role in sorted(roles):
        machine, device = roles[role]
        eager, eager64 = _point(frame, machine, device, **anchor), _point(frame, machine, device, **wide)
        macros += [Macro(role + "AnchorLatency", format_quantity(None if eager is None else eager["median_s"], "s"),
                         f"{role}: measured latency at {anchor}"),
                   Macro(role + "EagerPerLayer", format_quantity(None if eager is None else eager["median_s"] / L, "s"),
                         f"{role}: measured latency / n_layers at the anchor, eager")]
        other = "cudagraph" if device.startswith("cuda") else "compile"
        name = "Graph" if other == "cudagraph" else "Compile"
        fast, fast64 = (_point(frame, machine, device, mode=other, **c) for c in (anchor, wide))
        macros += [
            Macro(role + name + "Latency", format_quantity(None if fast is None else fast["median_s"], "s"), f"{role}: {other} at the anchor"),
            Macro(role + name + "PerLayer", format_quantity(None if fast is None else fast["median_s"] / L, "s"),
                  f"{role}: {other} latency / n_layers at the anchor"),
            Macro(role + name + "Speedup", format_quantity(ratio(eager, fast), "\\ensuremath{\\times}", 2).replace("\\,\\ensuremath", "\\ensuremath"),
                  f"{role}: eager / {other} at the anchor"),
            Macro(role + name + "SpeedupWide", format_quantity(ratio(eager64, fast64), "\\ensuremath{\\times}", 2).replace("\\,\\ensuremath", "\\ensuremath"),
                  f"{role}: eager / {other} at batch 64"),
        ]
        if other == "compile":
            macros.append(Macro(role + "CompileTime", format_quantity(None if fast is None else fast["compile_s"], "s", 2),
                                f"{role}: torch.compile time at the anchor (not in the latency)"))
    if "Host" in roles and "Cuda" in roles:
        cpu = _point(frame, *roles["Host"], mode="compile", **anchor)
        gpu = _point(frame, *roles["Cuda"], mode="cudagraph", **anchor)
        macros.append(Macro("BestModeRatio", format_quantity(ratio(cpu, gpu), "\\ensuremath{\\times}", 2).replace("\\,\\ensuremath", "\\ensuremath"),
                            "host CPU compiled / GPU with CUDA graphs at the anchor (>1: the GPU wins)"))
    else:
        macros.append(Macro("BestModeRatio", NA, "host CPU compiled / GPU with CUDA graphs at the anchor"))
    macros += _graph_outlier_macros(frame, roles)
    return macros


def _graph_outlier_macros(frame: pd.DataFrame, roles: dict) -> list:
    """The slowest CUDA-graph point of the GPU's batch sweep at the anchor's size, against the median
    of the others: with launches gone, a slow kernel choice shows (``GraphOutlier...``)."""
    names = ("Batch", "Latency", "Busy", "Others", "Ratio")
    rows = None
    if "Cuda" in roles:
        machine, device = roles["Cuda"]
        rows = frame[(frame["machine"] == machine) & (frame["device"] == device) & (frame["mode"] == "cudagraph")]
        for column, value in {**{k: v for k, v in BASELINE.items() if k != "mode"},
                              "d_model": ANCHOR["d_model"], "n_layers": ANCHOR["n_layers"]}.items():
            rows = rows[rows[column] == value]
    if rows is None or len(rows) < 3:
        return [Macro("GraphOutlier" + n, NA, "slowest CUDA-graph point of the batch sweep") for n in names]
    rows = rows.sort_values("batch_size")
    worst = rows.loc[rows["median_s"].idxmax()]
    others = float(rows.loc[rows.index != worst.name, "median_s"].median())
    busy = worst.get("device_busy_s", np.nan)
    return [
        Macro("GraphOutlierBatch", format_number(worst["batch_size"]), "batch size of the slowest CUDA-graph point"),
        Macro("GraphOutlierLatency", format_quantity(worst["median_s"], "s"), "its latency"),
        Macro("GraphOutlierBusy", format_quantity(busy if pd.notna(busy) else None, "s"), "its summed kernel time per step"),
        Macro("GraphOutlierOthers", format_quantity(others, "s"), "median latency of the other batch sizes"),
        Macro("GraphOutlierRatio", format_quantity(worst["median_s"] / others, "\\ensuremath{\\times}", 2)
              .replace("\\,\\ensuremath", "\\ensuremath"), "slowest / median of the others"),
    ]


def round_macros(frame_rounds: pd.DataFrame, roles: dict, superseded: Optional[pd.DataFrame] = None) -> list:
    """Run-to-run variation from the rows of each round (``load_results(combine_rounds=False)``):
    per role, the mean deviation of one round's median from the median of its rounds, and the largest
    max/min ratio over a point's rounds; the GPU's batch-sweep range over all rounds and the range
    of the superseded rows (``superseded_rows.csv``), if shipped."""
    macros = []
    for role in sorted(roles):
        machine, device = roles[role]
        rows = baseline_rows(frame_rounds[(frame_rounds["machine"] == machine) & (frame_rounds["device"] == device)])
        rows = rows[rows["status"] == "ok"]
        # one point = one row of a sweep (the anchor measured by two sweeps is two points)
        key = [c for c in ("sweep", "threads_requested", "d_model", "n_layers", "batch_size") if c in rows]
        grouped = rows.groupby(key)["median_s"]
        multi = grouped.transform("size") > 1
        deviation = (rows["median_s"] / grouped.transform("median") - 1).abs()[multi]
        spread = (grouped.max() / grouped.min())[grouped.size() > 1]
        macros += [
            Macro(role + "RoundDeviation", format_quantity(100 * deviation.mean() if len(deviation) else np.nan, "%", 2),
                  f"{role}: mean |round median / median of rounds - 1|"),
            Macro(role + "RoundSpreadMax", format_quantity(spread.max() if len(spread) else np.nan, "\\ensuremath{\\times}", 2).replace("\\,\\ensuremath", "\\ensuremath"),
                  f"{role}: largest max/min over a point's rounds"),
            Macro(role + "MaxRounds", format_number(rows["round"].nunique() if len(rows) else np.nan), f"{role}: rounds"),
        ]
        if device.startswith("cuda"):
            sweep = rows[(rows["sweep"] == "batch_size")]
            macros += [Macro(role + "BatchSweepLow", format_quantity(sweep["median_s"].min() if len(sweep) else np.nan, "s", 2), "min over rounds and batches"),
                       Macro(role + "BatchSweepHigh", format_quantity(sweep["median_s"].max() if len(sweep) else np.nan, "s", 2), "max over rounds and batches")]
    have = superseded is not None and len(superseded) > 0
    macros += [
        Macro("SupersededRows", format_number(len(superseded) if have else np.nan), "CUDA rows re-measured (superseded_rows.csv)"),
        Macro("SupersededLow", format_quantity(superseded["median_s"].min() if have else np.nan, "s", 2), "their fastest median"),
        Macro("SupersededHigh", format_quantity(superseded["median_s"].max() if have else np.nan, "s", 2), "their slowest median"),
    ]
    return macros


def protocol_macros(results: Sequence, dirs: set, roles: dict) -> list:
    """The measuring protocol per role: drift references measured, the share of rows measured above
    the drift limit, rows measured on a busy machine; and the machine's noise floor (``noise.json``,
    written by ``crossover noise``): one window's estimate against the mean over windows, per
    statistic."""
    from .noise import read_noise
    from .results import DRIFT_LIMIT

    rounds = load_results(results, combine_rounds=False, include_reference=True)
    rounds = rounds[rounds["results_dir"].isin(dirs)]
    floors = {data.get("machine"): data["summary"] for data in read_noise(results)}
    macros = [Macro("DriftLimit", format_quantity(DRIFT_LIMIT, "\\ensuremath{\\times}", 3).replace("\\,\\ensuremath", "\\ensuremath"),
                    "a row is drifted above this reference reading over the run's quiet level")]
    for role in sorted(roles):
        machine, device = roles[role]
        rows = rounds[(rounds["machine"] == machine) & (rounds["device"] == device)]
        refs = rows[rows["sweep"] == REFERENCE_SWEEP]
        measured = rows[rows["sweep"] != REFERENCE_SWEEP]
        paired = len(refs) > 0
        macros += [
            Macro(role + "References", format_number(len(refs) if paired else np.nan, 6), f"{role}: drift-reference readings"),
            Macro(role + "DriftedShare", format_quantity(100 * measured["drifted"].mean() if paired else np.nan, "%", 2),
                  f"{role}: share of rows measured above the drift limit"),
            Macro(role + "BusyRows", format_number(int(measured["busy"].fillna(0).sum()) if paired else np.nan, 6),
                  f"{role}: rows measured on a busy machine"),
        ]
        floor = floors.get(machine) if device == "cpu" else None
        for name, statistic in (("NoiseMedian", "median"), ("NoiseQuiet", "p10"), ("NoiseMin", "min")):
            value = floor[statistic]["all"] if floor else np.nan
            macros.append(Macro(role + name, format_quantity(100 * value, "%", 2),
                                f"{role}: run-to-run deviation of the {statistic} (crossover noise)"))
        value = floor["p10"]["compute_bound"] if floor else np.nan
        macros.append(Macro(role + "NoiseQuietCompute", format_quantity(100 * value, "%", 2),
                            f"{role}: run-to-run deviation of the p10, compute-bound sizes"))
    return macros


def metadata_macros(frame: pd.DataFrame, frame_rounds: pd.DataFrame, roles: dict) -> list:
    """Counts (points, measurements, rounds, machines, runs), dates, versions and hardware per role."""
    macros = [
        Macro("NumMachines", format_number(frame["machine"].nunique()), "machines in the main runs"),
        Macro("NumPoints", format_number(len(frame), 6), "measured points (rounds combined)"),
        Macro("NumMeasurements", format_number(int((frame_rounds["status"] == "ok").sum()), 6), "measured points counting every round"),
        Macro("NumBaselinePoints", format_number(len(baseline_rows(frame)), 6), "points in the baseline setting"),
    ]
    for role in sorted(roles):
        machine, device = roles[role]
        rows = frame[(frame["machine"] == machine) & (frame["device"] == device)]
        runs = {}
        every = frame_rounds[(frame_rounds["machine"] == machine) & (frame_rounds["device"] == device)]
        for directory in rows["results_dir"].unique():
            metadata = load_metadata(directory)
            used = set(every["run_id"]) if "run_id" in every else set(metadata["runs"])
            matched = {k: v for k, v in metadata["runs"].items() if k in used}
            runs.update(matched or metadata["runs"])  # rows without a run_id: every run of the directory
        env = next(iter(runs.values()), {}) if runs else {}
        dates = sorted(str(r.get("date_utc", ""))[:10] for r in runs.values() if r.get("date_utc"))
        date = NA if not dates else dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        torch_versions = sorted({str(r.get("torch")) for r in runs.values() if r.get("torch")})
        threads = _usual_threads(rows).get((machine, device), np.nan) if len(rows) else np.nan
        macros += [
            Macro(role + "Machine", _tt(machine), f"{role}: machine label"),
            Macro(role + "Label", _role_label(role), f"{role}: short name in tables"),
            Macro(role + "FigureTag", f"{machine}_{device}", f"{role}: file-name tag of its figures (not for typesetting)"),
            Macro(role + "Points", format_number(len(rows), 6), f"{role}: measured points"),
            Macro(role + "Runs", format_number(len(runs)), f"{role}: runs (metadata.json)"),
            Macro(role + "Date", date, f"{role}: measurement dates (UTC)"),
            Macro(role + "Torch", _plain(", ".join(torch_versions)) or NA, f"{role}: torch version"),
            Macro(role + "CpuModel", _plain(env.get("cpu_model", "")) or NA, f"{role}: CPU model"),
            Macro(role + "Cores", format_number(env.get("cpu_usable_cores", np.nan)), f"{role}: usable CPU cores"),
            Macro(role + "Threads", format_number(threads if threads != -1 else np.nan), f"{role}: usual thread count"),
        ]
        if device.startswith("cuda"):
            macros += [Macro(role + "GpuName", _plain(env.get("gpu_name", "")) or NA, "GPU name"),
                       Macro(role + "Driver", _plain(env.get("gpu_driver", "")) or NA, "GPU driver"),
                       Macro(role + "Runtime", _plain(env.get("cuda_runtime", "")) or NA, "CUDA runtime")]
    return macros


def design_macros(frame: pd.DataFrame) -> list:
    """Anchor, sweep ranges (from the rows of each sweep), the bar and the quoted figures."""
    macros = [Macro("Anchor" + AXIS_NAMES[k], format_number(v), f"anchor {k}") for k, v in ANCHOR.items()]
    macros.append(Macro("WideBatch", format_number(WIDE_BATCH), "second batch size of the mode comparison"))
    macros.append(Macro("AnchorParams", format_number(ANCHOR["n_layers"] * ANCHOR["d_model"] ** 2, 7), "parameters at the anchor"))
    for sweep, axis in (("batch_size", "batch_size"), ("d_model", "d_model"), ("n_layers", "n_layers")):
        values = frame.loc[frame.get("sweep", pd.Series(dtype=str)) == sweep, axis] if "sweep" in frame else pd.Series(dtype=float)
        name = "Sweep" + AXIS_NAMES[axis]
        macros += [Macro(name + "Min", format_number(values.min() if len(values) else np.nan, 6), f"{sweep} sweep: smallest"),
                   Macro(name + "Max", format_number(values.max() if len(values) else np.nan, 6), f"{sweep} sweep: largest")]
    fixed = frame[frame["sweep"] == "fixed_params"]["params"] if "sweep" in frame else pd.Series(dtype=float)
    total = fixed.median() if len(fixed) else np.nan
    exponent = math.log2(total) if np.isfinite(total) and total > 0 else np.nan
    text = f"$2^{{{round(exponent)}}}$" if np.isfinite(exponent) and abs(exponent - round(exponent)) < 0.01 else format_number(total)
    macros += [
        Macro("FixedParams", text, "parameter count of the fixed-parameter sweep"),
        Macro("BarMape", format_quantity(BAR_MAPE_PCT, "%", 2), "DESIGN.md bar: MAPE at most"),
        Macro("BarWithin", format_quantity(BAR_WITHIN_PCT, "%", 2), "DESIGN.md bar: share within tolerance at least"),
        Macro("Tolerance", format_quantity(TOLERANCE_PCT, "%", 2), "tolerance of 'within'"),
        Macro("TrainFlopFactor", "3", "training step ~ 3x forward FLOPs (2 B d^2 (3L - 1))"),
        Macro("ActAccesses", "7", "activation accesses per layer in the byte count"),
    ]
    for name, (value, unit, comment) in QUOTED.items():
        macros.append(Macro(name, format_number(value) + unit, comment + " (REFERENCES.md)"))
    return macros


def compute_macros(results: Sequence, *, n_boot: int = N_BOOT, seed: int = 0, jobs: int = 1,
                   models: Sequence[str] = tuple(A.MODELS), level: float = 0.95) -> list:
    """Every macro the paper uses, from the results directories ``results`` (see module docstring)."""
    if isinstance(results, (str, Path)):
        results = [results]
    everything = load_results(results, raw=True)
    frame = main_runs(everything)
    if frame.empty:
        raise A.AnalysisError(f"no measured points in {', '.join(map(str, results))}")
    dirs = set(frame["results_dir"])
    rounds = load_results(results, combine_rounds=False)
    rounds = rounds[rounds["results_dir"].isin(dirs)]
    superseded = None
    for directory in sorted(dirs):
        path = Path(directory) / "superseded_rows.csv"
        if path.exists():
            superseded = pd.read_csv(path, usecols=lambda c: c in ("median_s", "device"))
    roles = assign_roles(frame)
    fits = fit_baseline(frame, roles, models=models, n_boot=n_boot, seed=seed, jobs=jobs)
    for role in ROLES:  # the paper's roles always exist, as n/a if absent
        fits.setdefault(role, None)
    macros = [Macro("NBoot", format_number(n_boot), "bootstrap resamples per fit"),
              Macro("Level", format_quantity(100 * level, "%", 2), "confidence level of intervals")]
    macros += design_macros(frame)
    macros += metadata_macros(frame, rounds, roles)
    for role in ROLES:
        if role not in roles:
            macros += _absent_role_macros(role)
    for role, fit in sorted(fits.items()):
        macros += parameter_macros(role, fit)
    macros += accuracy_macros(fits)
    macros += crossover_macros(fits, level)
    quiet = fit_baseline(frame, roles, models=models, n_boot=n_boot, seed=seed, jobs=jobs, statistic="p10")
    macros += quiet_macros(fits, {r: quiet.get(r) for r in fits})
    macros += run_to_run_macros(everything)
    with_gemm = fit_baseline(frame, roles, models=tuple(models) + GEMM_MODELS, n_boot=0, seed=seed, jobs=jobs)
    macros += gemm_macros(fits, {r: with_gemm.get(r) for r in fits})
    macros += mode_macros(frame, {**{r: ("", "cuda" if r.startswith("Cuda") else "cpu") for r in ROLES}, **roles})
    macros += round_macros(rounds, {**{r: ("", "cuda" if r.startswith("Cuda") else "cpu") for r in ROLES}, **roles}, superseded)
    macros += protocol_macros(results, dirs, {**{r: ("", "cuda" if r.startswith("Cuda") else "cpu") for r in ROLES}, **roles})
    return macros


def _role_label(role: str) -> str:
    base = {"Vm": "CPU VM", "Host": "host CPU", "Cuda": "GPU"}[re.match(r"Vm|Host|Cuda", role).group(0)]
    return base + (f" {role[-1]}" if role[-1] in "BCDEFGHIJ" and len(role) > 2 and role[-2].islower() else "")


def _absent_role_macros(role: str) -> list:
    macros = [Macro(role + "Label", _role_label(role), f"{role}: short name in tables")]
    names = ["Machine", "FigureTag", "Points", "Runs", "Date", "Torch", "CpuModel", "Cores", "Threads"]
    if role.startswith("Cuda"):
        names += ["GpuName", "Driver", "Runtime"]
    return macros + [Macro(role + n, NA, f"{role}: absent from the results") for n in names]


# ------------------------------------------------------------------------------------ writing
def render(macros: Iterable[Macro], source: str = "") -> str:
    """The text of ``numbers.tex``; raises ValueError on a duplicate name or a NaN in a value."""
    lines = ["% Generated by crossover.paper_numbers" + (f" from {source}" if source else "") + ": do not edit.",
             "% Every number the paper's text quotes; regenerate with `make paper`."]
    seen = set()
    for m in macros:
        if m.name in seen:
            raise ValueError(f"macro \\{m.name} defined twice")
        if re.search(r"\bnan\b|\binf\b", m.text, re.IGNORECASE):
            raise ValueError(f"macro \\{m.name} has no number: {m.text!r}")
        seen.add(m.name)
        comment = f"  % {m.comment}" if m.comment else ""
        lines.append(f"\\newcommand{{\\{m.name}}}{{{m.text}}}{comment}")
    return "\n".join(lines) + "\n"


def _table_rows(macros: list) -> tuple:
    params, accuracy = [], []
    roles = sorted({m.name[:-len("Model")] for m in macros if re.fullmatch(r"(Vm|Host|Cuda)[B-Z]?Model", m.name)})
    text = {m.name: m.text for m in macros}
    for role in roles:
        shown = [s for s in PARAM_NAMES.values() if text.get(role + s) not in (DASH, NA, None)]
        for i, suffix in enumerate(shown):
            label = next(PARAM_LABELS[k] for k, v in PARAM_NAMES.items() if v == suffix)
            head = f"\\{role}Label" if i == 0 else (f"\\{role}Model" if i == 1 else "")
            params.append(f"{head} & {label} & \\{role}{suffix} & \\{role}{suffix}CI \\\\")
        if shown:
            params.append("\\addlinespace")
        accuracy.append(f"\\{role}Label & \\{role}Model & "
                        + " & ".join(f"\\{role}CvMape{a} / \\{role}CvWithin{a}" for a in ("DModel", "NLayers", "Batch", ""))
                        + f" & \\{role}AffineCvMape \\\\")
    while params and params[-1] == "\\addlinespace":
        params.pop()
    params = ["\\begin{tabular}{lllr}", "\\toprule", "series / model & parameter & value & interval \\\\",
              "\\midrule", *params, "\\bottomrule", "\\end{tabular}"]
    accuracy = ["\\begin{tabular}{llccccc}", "\\toprule",
                "series & model & \\texttt{d\\_model} & \\texttt{n\\_layers} & batch size & mean & affine \\\\",
                "\\midrule", *accuracy, "\\bottomrule", "\\end{tabular}"]
    return "\n".join(params) + "\n", "\n".join(accuracy) + "\n"


def write(macros: list, out: Path, source: str = "") -> list:
    """Write ``out`` (numbers.tex) and, beside it, ``parameters.tex`` and ``accuracy.tex`` (tabulars
    whose cells reference the macros). Returns the paths written."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    params, accuracy = _table_rows(macros)
    paths = [out, out.parent / "parameters.tex", out.parent / "accuracy.tex"]
    header = "% Generated by crossover.paper_numbers: a table whose cells are macros of numbers.tex.\n"
    for path, text in zip(paths, (render(macros, source), header + params, header + accuracy)):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return paths


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m crossover.paper_numbers",
        description="Compute every number the paper quotes from results and write them as LaTeX macros "
                    "(numbers.tex, plus parameters.tex and accuracy.tex table rows beside it).",
        epilog="example: python -m crossover.paper_numbers --results experiments/results "
               "--out paper/generated/numbers.tex")
    parser.add_argument("--results", type=Path, nargs="+", default=[Path("experiments/results")], metavar="DIR",
                        help="results directories (default experiments/results)")
    parser.add_argument("--out", type=Path, default=Path("paper/generated/numbers.tex"), help="macro file to write")
    parser.add_argument("--n-boot", type=int, default=N_BOOT,
                        help=f"bootstrap resamples per fit (default {N_BOOT}, as crossover figures uses: "
                             "another value makes the text's intervals differ from the figures')")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--jobs", type=int, default=2, help="series fitted in parallel (default 2)")
    args = parser.parse_args(argv)
    from .errors import CrossoverError

    try:
        macros = compute_macros(args.results, n_boot=args.n_boot, seed=args.seed, jobs=args.jobs)
        paths = write(macros, args.out, ", ".join(map(str, args.results)))
    except (CrossoverError, ValueError) as exc:
        print(f"paper_numbers: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(macros)} macros to {paths[0]} (and {', '.join(p.name for p in paths[1:])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
