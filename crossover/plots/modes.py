"""Settings beside the baseline: execution modes, forward vs training step, dtypes.

:func:`overhead_plot` draws the time per layer against depth per execution mode (eager,
``torch.compile``, CUDA graphs); :func:`mode_crossover_plot` draws both devices in every mode
against batch size with the eager-vs-eager and fastest-mode crossovers; :func:`comparison_plot`
draws latency per value of one setting (workload, dtype, ...). Tidy DataFrame in, keyword-only
column names, ``ax`` out (see :mod:`crossover.plots`).
"""

from __future__ import annotations

from typing import Optional

import pandas as pd

from .theme import (MODES, NO_GPU_NOTE, _axes, _colors, _groups, _has_gpu, _label, _latency_axes, _legend,
                    _log_ticks, _num, _per_x, display_name, series_colors, single_machine)
from .sweeps import _mark_crossovers

__all__ = ["overhead_plot", "mode_crossover_plot", "comparison_plot"]


# ------------------------------------------------------------------------------------ overhead
def overhead_plot(data: pd.DataFrame, *, hue: str = "mode", style: Optional[str] = "batch_size",
                  gpu_note: bool = True, legend: str = "best", ax=None):
    """Per-layer time (``median_s / n_layers``, in µs) against ``n_layers``, one line per mode.

    Parameters
    ----------
    data : pandas.DataFrame
        Rows of one device with ``n_layers``, ``median_s`` and ``hue`` (``eager``, ``compile``,
        ``cudagraph``); several rows at one depth of a line are combined by their median.
    hue : str
        Column naming the colour of the lines (default ``mode``; the modes keep fixed colours, so
        panels of different devices match).
    style : str or None
        Column giving each of its values its own line style (default ``batch_size``, when it has
        more than one value).
    gpu_note : bool
        Without ``cudagraph`` rows, say why in the legend title ("no GPU data yet" when ``data`` has
        no GPU rows); False for a CPU panel next to a GPU one.
    legend : str
        Legend location (``"below"``: under the axes).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        One line per (``hue``, ``style``) pair, x = n_layers, y = microseconds per layer.
    """
    ax = _axes(ax)
    if style is not None and (style not in data or data[style].nunique() < 2):
        style = None
    hues = list(dict.fromkeys(data[hue]))
    if hue == "mode":
        order = [m for m in MODES if m in hues]
        hues = order + [h for h in hues if h not in order]
        palette = dict(zip(MODES, _colors(len(MODES))))
        colors = {h: palette.get(h, c) for h, c in zip(hues, _colors(len(MODES) + len(hues))[len(MODES):])}
    else:
        colors = series_colors(hues)
    dashes = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D"]
    styles = sorted(dict.fromkeys(data[style])) if style else [None]
    per_layer = data.assign(_per_layer_us=1e6 * data["median_s"] / data["n_layers"])
    groups = dict(_groups(per_layer, [hue, style]))
    for key in [(h, s) if style else (h,) for h in hues for s in styles]:
        if key not in groups:
            continue
        line = _per_x(groups[key], "n_layers", ["_per_layer_us"])
        index = styles.index(key[1]) if style else 0
        label = display_name(key[0]) + (f", {style}={key[1]}" if style else "")
        ax.plot(line["n_layers"], line["_per_layer_us"], marker=markers[index % len(markers)], color=colors[key[0]],
                linestyle=dashes[index % len(dashes)], label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(_label("n_layers"))
    ax.set_ylabel("time per layer (µs)")
    note = None
    if hue == "mode" and "cudagraph" not in set(data[hue]) and gpu_note:
        note = "CUDA graphs: " + (NO_GPU_NOTE if not _has_gpu(data) else "not measured")
    _log_ticks(ax)
    _legend(ax, note, loc=legend, **({"ncol": 2} if legend == "below" else {}))
    return ax


# -------------------------------------------------------------------- modes against batch size
def _best(rows: pd.DataFrame, x: str, style: str) -> pd.Series:
    """Per ``x`` measured in two or more ``style`` values of ``rows`` (all of them, if only one):
    the fastest median latency."""
    table = rows.pivot_table(index=x, columns=style, values="median_s", aggfunc="median")
    enough = table.notna().sum(axis=1) >= min(2, table.shape[1])
    return table[enough].min(axis=1)


def _crossings(first: pd.Series, second: pd.Series) -> list:
    """Where two measured curves (indexed by x) cross (see :func:`crossover.analysis.crossovers.curve_crossings`)."""
    from ..analysis.crossovers import curve_crossings

    return curve_crossings(first, second)


def mode_crossover_plot(data: pd.DataFrame, *, x: str = "batch_size", a: str = "cpu", b: str = "cuda",
                        hue: str = "device", style: str = "mode", crossover=None, legend: str = "below",
                        ax=None):
    """Latency against ``x`` per device and execution mode, with the crossover when each device runs
    eager and when each runs its fastest mode.

    Parameters
    ----------
    data : pandas.DataFrame
        Rows of one machine's two devices (``hue`` values ``a`` and ``b``), each in one or more
        ``style`` values (``eager``, ``compile``, ``cudagraph``), with ``x`` and ``median_s``.
    x : str
        The size on the horizontal axis.
    a, b : str
        The two ``hue`` values compared (default CPU and GPU).
    crossover : crossover.analysis.Crossover, optional
        The fitted eager-vs-eager crossover (with its bootstrap interval) to mark; without it the
        eager crossing is taken from the measured points.
    legend : str
        Legend location (default below the axes).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        ``ax.lines``: one line per (``hue``, ``style``) pair (``a`` first, eager first), then the
        crossover lines: eager vs eager, then best vs best (the fastest mode of each device at every
        ``x`` where two or more of its modes were measured; every crossing, interpolated in log-log
        between measured points). Pairs that do not cross are stated in the legend title.
    """
    ax = _axes(ax)
    devices = [d for d in (a, b) if (data[hue] == d).any()]
    machine = single_machine(data) if hue == "device" else None
    colors = series_colors((a, b), machine)
    names = {d: display_name(f"{machine}/{d}" if machine else d) for d in (a, b)}
    modes = [m for m in MODES if m in set(data[style])] + sorted(set(data[style]) - set(MODES))
    markers = dict(zip(modes, ["o", "s", "^", "D", "v"]))
    dashes = dict(zip(modes, ["-", "--", ":", "-."] * 2))
    band = {"q1_s", "q3_s"} <= set(data.columns)
    curves = {}
    for device in devices:
        for mode in modes:
            rows = data[(data[hue] == device) & (data[style] == mode)]
            if rows.empty:
                continue
            line = _per_x(rows, x, ["median_s"] + (["q1_s", "q3_s"] if band else []))
            curves[device, mode] = line.set_index(x)["median_s"]
            ax.plot(line[x], line["median_s"], color=colors[device], marker=markers[mode], linestyle=dashes[mode],
                    label=f"{names[device]} {mode}")
            if band:
                ax.fill_between(line[x], line["q1_s"], line["q3_s"], color=colors[device], alpha=0.15, lw=0)
    notes = []
    if len(devices) == 2:
        if crossover is not None:
            notes += _mark_crossovers(ax, [crossover], x, styles=(":",), prefix="eager (fit): ")
        elif (a, "eager") in curves and (b, "eager") in curves:
            roots = _crossings(curves[a, "eager"], curves[b, "eager"])
            if roots:
                ax.axvline(roots[0], color="0.15", linestyle=":", linewidth=1.1,
                           label=f"eager: {names[a]} = {names[b]} at {x.replace('_', ' ')} {_num(roots[0])} (measured)")
            else:
                notes.append(_everywhere(curves[a, "eager"], curves[b, "eager"], names[a], names[b], x, "eager"))
        best = {d: _best(data[data[hue] == d], x, style) for d in devices}
        if all(len(v) for v in best.values()):
            roots = _crossings(best[a], best[b])
            for i, root in enumerate(roots):
                ax.axvline(root, color="0.15", linestyle="-.", linewidth=1.1,
                           label="_best" if i else f"fastest modes: {names[a]} = {names[b]} at {x.replace('_', ' ')} "
                                                   + ", ".join(_num(r) for r in roots) + " (measured)")
            if not roots:
                notes.append(_everywhere(best[a], best[b], names[a], names[b], x, "fastest modes"))
    _latency_axes(ax, data, x)
    _legend(ax, "\n".join(notes) or None, loc=legend)
    return ax


def _everywhere(first: pd.Series, second: pd.Series, a: str, b: str, x: str, what: str) -> str:
    joined = pd.concat([first, second], axis=1, join="inner").dropna()
    if joined.empty:
        return f"{what}: no common {x} measured"
    faster = a if (joined.iloc[:, 0] < joined.iloc[:, 1]).all() else b if (joined.iloc[:, 1] < joined.iloc[:, 0]).all() else None
    values = joined.index.to_numpy(float)
    where = f"every {x} measured ({values.min():g}–{values.max():g})"
    return f"{what}: {faster} faster at {where}" if faster else f"{what}: no crossing between measured {x}"




# --------------------------------------------------------------------------------- comparisons
def comparison_plot(data: pd.DataFrame, *, by: str = "workload", x: str = "batch_size",
                    style: Optional[str] = None, gpu_note: bool = True, ax=None):
    """Latency against ``x``, one line per value of ``by`` (forward vs train, or dtypes).

    Parameters
    ----------
    data : pandas.DataFrame
        Rows with ``by``, ``x``, ``median_s`` (and ``q1_s``/``q3_s`` for the error bars).
    by : str
        Column compared (``workload``, ``dtype``, ``mode``, ``threads``...).
    x : str
        The size on the horizontal axis.
    style : str, optional
        A second column (e.g. ``n_layers``): each of its values gets its own line style.
    gpu_note : bool
        Title the legend "no GPU data yet" when ``data`` has no GPU rows (False for a CPU panel next
        to a GPU one).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        One line per (``by``, ``style``) pair, y = the median latency at each ``x``.
    """
    ax = _axes(ax)
    if style is not None and data[style].nunique() < 2:
        style = None
    hues = list(dict.fromkeys(data[by]))
    colors = series_colors(hues)
    markers = ["o", "s", "^", "D"]
    styles = sorted(dict.fromkeys(data[style])) if style else [None]
    band = {"q1_s", "q3_s"} <= set(data.columns)
    groups = dict(_groups(data, [by, style]))
    for key in [(h, s) if style else (h,) for h in hues for s in styles]:
        if key not in groups:
            continue
        rows = groups[key]
        line = _per_x(rows, x, ["median_s"] + (["q1_s", "q3_s"] if band else []))
        label = display_name(key[0]) + (f", {style}={key[1]}" if style else "")
        index = styles.index(key[1]) if style else 0
        ax.plot(line[x], line["median_s"], color=colors[key[0]], marker=markers[index % len(markers)],
                linestyle=["-", "--", ":", "-."][index % 4], label=label)
        if band:
            ax.fill_between(line[x], line["q1_s"], line["q3_s"], color=colors[key[0]], alpha=0.2, lw=0)
    _latency_axes(ax, data, x)
    _legend(ax, None if _has_gpu(data) or not gpu_note else NO_GPU_NOTE + " (CPU only)",
            loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    return ax
