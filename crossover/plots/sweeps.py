"""Latency along the sweeps: lines per series with their fitted curves and crossovers, and throughput.

:func:`sweep_plot` draws latency against one swept size (one line per device or series, IQR
bands, dashed fitted curves, the CPU-vs-GPU crossover with its bootstrap interval);
:func:`crossover_label` is the legend text of a crossover (also used by
:func:`crossover.plots.modes.mode_crossover_plot`); :func:`throughput_plot` draws achieved FLOP/s
against the work per step. Tidy DataFrame in, keyword-only column names, ``ax`` out (see
:mod:`crossover.plots`).
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
import pandas as pd

from ..units import format_quantity
from .theme import (NO_GPU_NOTE, _axes, _colors, _groups, _has_gpu, _label, _legend, _log_ticks, _num,
                    _per_x, _short, _spans_decades, display_name, series_colors)

__all__ = ["sweep_plot", "throughput_plot", "crossover_label"]


def _fit_grid(data: pd.DataFrame, x: str, n: int = 200) -> dict:
    """The three sizes along a dense grid of ``x``; the other two follow the data (constant, or
    interpolated in log-log, e.g. ``n_layers`` along a fixed-parameter-count sweep)."""
    from ..fit.latency_models import AXES

    xs = np.asarray(data[x], dtype=float)
    grid = np.geomspace(xs.min(), xs.max(), n) if xs.min() > 0 else np.linspace(xs.min(), xs.max(), n)
    order = np.argsort(xs)
    sizes = {x: grid}
    for axis in AXES:
        if axis == x:
            continue
        values = np.asarray(data[axis], dtype=float)
        if np.unique(values).size == 1:
            sizes[axis] = np.full_like(grid, values[0])
        else:
            sizes[axis] = np.exp(np.interp(np.log(grid), np.log(xs[order]), np.log(values[order])))
    return sizes


# ----------------------------------------------------------------------------- crossover marks
def crossover_label(crossover, x: Optional[str] = None) -> str:
    """Legend text of a crossover: the pair (the machine once when both sides share it), where the
    curves meet with its bootstrap interval, and the other roots if any.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> crossover_label(NS(a="nvidia-h200-16c/cpu", b="nvidia-h200-16c/cuda", axis="batch_size", x=393.4,
    ...                    low=310, high=464, roots=[393.4]))
    'H200 host CPU = H200 GPU at batch size 393 [310, 464]'
    """
    pair = f"{display_name(crossover.a)} = {display_name(crossover.b)}"
    text = f"{pair} at {(x or crossover.axis).replace('_', ' ')} {_num(crossover.x)}"
    if crossover.low is not None and crossover.high is not None:
        text += f" [{_num(crossover.low)}, {_num(crossover.high)}]"
    others = [r for r in (getattr(crossover, "roots", None) or []) if r != crossover.x]
    if others:
        text += " (also " + ", ".join(_num(r) for r in others) + ")"
    measured = getattr(crossover, "empirical", None) or []
    if measured:
        text += "; measured points cross at " + ", ".join(_num(r) for r in measured)
    return text


def _never_label(crossover, x: str) -> str:
    """Text for curves that do not meet in range: who is faster everywhere."""
    winner = display_name(crossover.winner or "?")
    other = display_name(crossover.b if crossover.winner == crossover.a else crossover.a)
    lo, hi = crossover.x_range
    return f"{winner} faster than {other}\nat every {x.replace('_', ' ')} in {lo:g}–{hi:g} (fit, no crossover)"


def _crossovers(crossover) -> list:
    """A Crossover, a sequence of them, or None -> list."""
    if crossover is None:
        return []
    if isinstance(crossover, (list, tuple)):
        return [c for c in crossover if c is not None]
    return [crossover]


def _mark_crossovers(ax, crossovers, x: str, *, styles=(":", "-."), prefix: str = "") -> list:
    """Vertical line(s) at each crossover's roots with the bootstrap interval shaded; curves that never
    meet get a note instead. Returns the notes."""
    notes = []
    for i, c in enumerate(crossovers):
        if c.x is None:
            if getattr(c, "winner", None):
                notes.append(prefix + _never_label(c, x))
            continue
        style = styles[i % len(styles)]
        label = crossover_label(c, x)
        if prefix:  # the pair is named by the prefix: keep only where
            label = prefix + label.split(": ", 1)[-1]
        ax.axvline(c.x, color="0.15", linestyle=style, linewidth=1.1, label=label)
        for root in (getattr(c, "roots", None) or []):
            if root != c.x:
                ax.axvline(root, color="0.15", linestyle=style, linewidth=1.1)
        if c.low is not None and c.high is not None:
            ax.axvspan(c.low, c.high, color="0.5", alpha=0.18, lw=0)
    return notes


# -------------------------------------------------------------------------------------- sweeps
def sweep_plot(data: pd.DataFrame, *, x: str, y: str = "median_s", hue: Optional[str] = "device",
               fits: Optional[Mapping] = None, crossover=None, fit_legend: Optional[str] = None,
               legend: str = "best", ax=None):
    """Latency against the swept size: one line per ``hue`` value with its IQR band.

    Parameters
    ----------
    data : pandas.DataFrame
        Rows of one sweep (as from :func:`crossover.load_results`): ``x``, ``y`` and, for the band,
        ``q1_s`` and ``q3_s``. Several rows at one ``x`` of a line are combined by their median.
    x : str
        The swept column (``batch_size``, ``d_model``, ``n_layers``, ...).
    y : str
        The latency column (seconds).
    hue : str or None
        Column naming the lines (default ``device``); None: one line.
    fits : mapping of str to crossover.analysis.SeriesFit, optional
        Fitted models to overlay (legend label -> fit), each as a dashed curve evaluated with
        :meth:`~crossover.analysis.SeriesFit.latency_s` along ``x`` with the other two sizes held at
        the data's values (interpolated in log-log where they vary with ``x``). A fit whose series is a
        ``hue`` line takes its colour and spans that line's range of ``x``.
    crossover : crossover.analysis.Crossover or sequence of them, optional
        Each marked as a vertical line at ``crossover.x`` (and its other roots) with its interval
        (``low``, ``high``) shaded, labelled by :func:`crossover_label` (which pair, where, interval).
        One whose ``x`` is None (the curves do not meet) is stated in the legend title instead.
    fit_legend : str, optional
        One legend entry (a grey dashed line with this text) for all fitted curves instead of one each.
    legend : str
        Legend location (``"below"``: under the axes, for long series names).
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: the current axes).

    Returns
    -------
    matplotlib.axes.Axes
        ``ax.lines``: the data lines (per ``hue``), the fitted curves, then the crossover lines.

    See Also
    --------
    crossover.analysis.fit_results, crossover.analysis.crossover
    """
    ax = _axes(ax)
    band = {"q1_s", "q3_s"} <= set(data.columns)
    columns = [y] + (["q1_s", "q3_s"] if band else [])
    groups = list(_groups(data, [hue]))
    named = series_colors([k[0] if k else "" for k, _ in groups])
    colors = {k: named[k[0] if k else ""] for k, _ in groups}
    for key, rows in groups:
        line = _per_x(rows, x, columns)
        label = display_name(key[0]) if key else None
        ax.plot(line[x], line[y], marker="o", color=colors[key], label=label)
        if band:
            ax.fill_between(line[x], line["q1_s"], line["q3_s"], color=colors[key], alpha=0.25, lw=0)
    fit_colors = _colors(len(groups) + len(fits or {}))[len(groups):]
    members = dict(groups)
    for i, (label, fit) in enumerate((fits or {}).items()):
        name = fit.key.get(hue, _short(getattr(fit, "label", "")))
        match = [k for k in colors if hue and k and str(k[0]) == str(name)]
        color = colors[match[0]] if match else fit_colors[i]
        sizes = _fit_grid(members[match[0]] if match else data, x)
        values = fit.latency_s(sizes["d_model"], sizes["n_layers"], sizes["batch_size"])
        ax.plot(sizes[x], values, linestyle="--", linewidth=1.0, color=color,
                label=label if fit_legend is None else "_fit")
    if fits and fit_legend:
        ax.plot([], [], linestyle="--", linewidth=1.0, color="0.4", label=fit_legend)
    notes = _mark_crossovers(ax, _crossovers(crossover), x)
    if _spans_decades(data[x]):
        ax.set_xscale("log")
    if _spans_decades(data[y]) or fits:
        ax.set_yscale("log")
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label(y))
    _log_ticks(ax)
    if hue == "device" and not _has_gpu(data):
        notes.append(NO_GPU_NOTE)
    _legend(ax, "\n".join(notes) or None, loc=legend)
    return ax


# -------------------------------------------------------------------------------- throughput
def throughput_plot(data: pd.DataFrame, *, peak_flops_per_s: Optional[Mapping] = None,
                    hue: str = "device", ax=None):
    """Achieved FLOP/s (``flops / median_s``) against FLOPs per step, one series per device, with a
    horizontal line at each device's peak.

    Parameters
    ----------
    data : pandas.DataFrame
        Measured rows with ``flops``, ``median_s`` and ``hue``.
    peak_flops_per_s : mapping of str to float, optional
        The peak of each ``hue`` value (FLOP/s; ``crossover peaks``' matrix products); default: the
        highest rate achieved in ``data`` (labelled so). A value missing from the mapping falls back to it.
    hue : str
        Column naming the series (default ``device``).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        ``ax.lines`` holds, per series, the points (sorted by FLOPs) then its peak line.
    """
    ax = _axes(ax)
    groups = list(_groups(data, [hue]))
    named = series_colors([key[0] for key, _ in groups])
    peaks = []
    for key, rows in groups:
        color = named[key[0]]
        rows = rows.sort_values("flops")
        rate = rows["flops"].to_numpy(float) / rows["median_s"].to_numpy(float)
        name = display_name(key[0])
        ax.plot(rows["flops"], rate, linestyle="none", marker="o", alpha=0.8, color=color, label=name)
        peak = (peak_flops_per_s or {}).get(key[0])
        measured = peak is None
        peak = float(rate.max()) if measured else float(peak)
        peaks.append(peak)
        ax.axhline(peak, color=color, linestyle="--", linewidth=1.0,
                   label=(f"{name} highest achieved {format_quantity(peak, 'FLOP/s')}" if measured
                          else f"{name} peak {format_quantity(peak, 'FLOP/s')}"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(_label("flops"))
    ax.set_ylabel("achieved throughput (FLOP/s)")
    if peaks:
        low, _ = ax.get_ylim()
        ax.set_ylim(low, 3 * max(peaks))
    _log_ticks(ax, plain=(False, False))
    _legend(ax, NO_GPU_NOTE if hue == "device" and not _has_gpu(data) else None,
            loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=1 if len(groups) > 2 else 2)
    return ax

