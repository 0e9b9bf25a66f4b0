"""The paper's coverage table: every run whose CPU and GPU were measured in paired rounds, its measured
crossover (the median of the rounds' own crossings) against the crossover fitted on the same run and the
fit's interval, with the interval's width (a wide interval covers anything). Pure: the runs' crossing
distributions and fits come from :mod:`crossover.paper.headline`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .latex import NA, Macro, format_interval, format_number

__all__ = ["CoverageRun", "coverage_macros", "coverage_table", "gpu_name", "batch_text"]


@dataclass(frozen=True)
class CoverageRun:
    """One paired run: its machine, results directory, crossing distribution and fitted crossover (the
    objects of :func:`crossover.analysis.paired_rounds.crossover_distribution` and
    :func:`crossover.analysis.crossovers.crossover`; ``fitted`` None where a device has no fit)."""

    machine: str
    run: str
    dist: object
    fitted: Optional[object]


def gpu_name(machine: str) -> str:
    """A machine slug as a reader names it: ``nvidia-h200-16c`` -> ``H200``, ``nvidia-h100-80gb-hbm3-16c``
    -> ``H100``; other slugs unchanged."""
    parts = machine.split("-")
    if parts[0] == "nvidia" and len(parts) > 1:
        return parts[1].upper()
    return machine


def _run_name(run: str, machine: str) -> str:
    """The run's folder below its machine's: ``.../nvidia-h100.../run2/gpu-paired`` -> ``run2/gpu-paired``
    (the last folder where the machine's is not in the path)."""
    parts = str(run).replace("\\", "/").rstrip("/").split("/")
    if machine in parts[:-1]:
        return "/".join(parts[parts.index(machine) + 1:])
    return parts[-1]


def batch_text(x) -> str:
    """A crossing batch size: three significant figures, whole from 10 on (99, not 99.0)."""
    return format_number(x, 2) if x is not None and np.isfinite(x) and 10 <= abs(x) < 100 else format_number(x)


def _letters(i: int) -> str:
    return string.ascii_uppercase[i] if i < 26 else string.ascii_uppercase[i // 26 - 1] + string.ascii_uppercase[i % 26]


def coverage_macros(runs: list) -> list:
    """Per run (letters A, B, ...): ``Coverage<L>Machine``, ``Run``, ``Median``, ``Quartiles``, ``Crossing``
    (rounds whose curves cross, of ``RoundCount``), ``Fit``, ``FitCI``, ``Bias`` (fitted / measured - 1, %),
    ``Width`` (the interval's width in % of the fitted crossover) and ``Holds``; then ``CoverageRuns``,
    ``CoverageHolds`` (runs whose interval holds the measured median), ``CoverageBelow`` (fitted below the
    measured), ``CoverageMedianBias`` and ``CoverageMedianWidth`` (%)."""
    _batch = batch_text
    macros, holds, widths, biases = [], 0, [], []
    usable = [r for r in runs if r.dist is not None and r.dist.n_rounds]
    for i, r in enumerate(usable):
        p = f"Coverage{_letters(i)}"
        what = f"paired run {r.run}"
        fit = r.fitted
        has_fit = fit is not None and fit.x is not None and fit.low is not None
        width = 100 * (fit.high - fit.low) / fit.x if has_fit and fit.x else np.nan
        verdict, bias = NA, np.nan
        if has_fit and r.dist.n_crossing:
            bias = 100 * (fit.x / r.dist.median - 1)
            biases.append(bias)
            verdict = "holds" if fit.low <= r.dist.median <= fit.high else "misses"
            holds += verdict == "holds"
            widths.append(width)
        macros += [
            Macro(p + "Machine", gpu_name(r.machine), f"{what}: machine"),
            Macro(p + "Run", _run_name(r.run, r.machine).replace("_", "\\_"), f"{what}: results directory"),
            Macro(p + "Median", _batch(r.dist.median) if r.dist.n_crossing else NA, f"{what}: measured crossover"),
            Macro(p + "Quartiles", f"[{_batch(r.dist.q25)}, {_batch(r.dist.q75)}]" if r.dist.n_crossing else NA,
                  f"{what}: quartiles of the rounds' crossings"),
            Macro(p + "Crossing", format_number(r.dist.n_crossing), f"{what}: rounds that cross"),
            Macro(p + "RoundCount", format_number(r.dist.n_rounds), f"{what}: paired rounds"),
            Macro(p + "Fit", format_number(fit.x) if has_fit else NA, f"{what}: fitted crossover"),
            Macro(p + "FitCI", format_interval(fit.low, fit.high) if has_fit else NA, f"{what}: its interval"),
            Macro(p + "Width", format_number(width, 2) if np.isfinite(width) else NA,
                  f"{what}: the interval's width, % of the fitted crossover"),
            Macro(p + "Holds", verdict, f"{what}: whether the interval holds the measured crossover"),
            Macro(p + "Bias", f"{bias:+.0f}" if np.isfinite(bias) else NA,
                  f"{what}: fitted / measured crossover - 1 (%)"),
        ]
    macros += [Macro("CoverageRuns", str(len(widths)), "paired runs with a fitted interval"),
               Macro("CoverageHolds", str(holds), "of them, intervals that hold the measured crossover"),
               Macro("CoverageBelow", str(sum(b < 0 for b in biases)), "runs whose fitted crossover is below the measured"),
               Macro("CoverageMedianBias", f"{np.median(biases):+.0f}" if biases else NA,
                     "median of fitted / measured crossover - 1 (%)"),
               Macro("CoverageMedianWidth", format_number(float(np.median(widths)), 2) if widths else NA,
                     "median interval width, % of the fitted crossover")]
    return macros


def coverage_table(macros: list) -> str:
    """A tabular with one row per run that :func:`coverage_macros` described (its cells reference them)."""
    names = {m.name for m in macros}
    rows = []
    i = 0
    while f"Coverage{_letters(i)}Machine" in names:
        p = f"\\Coverage{_letters(i)}"
        rows.append(f"{p}Machine & {p}Run & {p}Median & {p}Quartiles & {p}Crossing/{p}RoundCount & {p}Fit & "
                    f"{p}FitCI & {p}Bias & {p}Width & {p}Holds \\\\")
        i += 1
    head = ("machine & run & measured & quartiles & rounds crossing & fitted & interval & bias (\\%) & "
            "width (\\%) & interval \\\\")
    return "\n".join(["\\begin{tabular}{llrlcrlrrl}", "\\toprule", head, "\\midrule", *rows, "\\bottomrule",
                      "\\end{tabular}"]) + "\n"
