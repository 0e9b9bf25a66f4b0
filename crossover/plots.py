"""Plot functions for results (seaborn style): tidy DataFrame in, ``ax`` out.

Every function takes the DataFrame of :func:`crossover.load_results` (or a slice of it) first,
column names as keyword-only arguments, draws on ``ax or plt.gca()`` and returns the axes. Units
are on every axis; latency, FLOPs and sizes that span decades are on log axes. Use :func:`style`
around the calls for the package's one look (colour-blind-safe palette, sizes readable at column
width); :func:`crossover.figures.make_figures` draws every paper figure with it.

Figures that need GPU rows (the speed-up map, the CPU-vs-GPU sweeps) draw what the data holds and
say "no GPU data yet" in the axes when there is none; they never invent points.
"""

from __future__ import annotations

import contextlib
from typing import Mapping, Optional

import numpy as np
import pandas as pd

__all__ = [
    "RC", "PALETTE", "NO_GPU_NOTE", "style", "sweep_plot", "throughput_plot", "speedup_map",
    "overhead_plot", "accuracy_plot", "comparison_plot", "speedup_scatter", "mode_crossover_plot",
    "crossover_label",
]

#: Colour-blind-safe palette (seaborn's "colorblind", Okabe-Ito-like).
PALETTE = "colorblind"
#: Matplotlib settings of every figure: small enough for a column, large enough to read there.
RC = {
    "figure.figsize": (4.2, 3.0),
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "legend.frameon": False,
    "lines.linewidth": 1.4,
    "lines.markersize": 4,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "pdf.fonttype": 42,
}
#: Written in the axes of a figure that would compare with a GPU when the data has none.
NO_GPU_NOTE = "no GPU data yet"

#: Execution modes in the order (and colours) every figure uses.
MODES = ("eager", "compile", "cudagraph")
#: Axis labels with units, by column.
LABELS = {
    "median_s": "latency per step (s)",
    "d_model": "d_model (width, features)",
    "n_layers": "n_layers (depth, layers)",
    "batch_size": "batch size (samples)",
    "params": "parameters (count)",
    "flops": "FLOPs per step (FLOP)",
}


@contextlib.contextmanager
def style():
    """Context manager: the package's plot style (seaborn "ticks", colour-blind palette, ``RC``).

    Examples
    --------
    >>> with style():
    ...     ax = sweep_plot(frame, x="batch_size")  # doctest: +SKIP
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    with plt.rc_context(), sns.axes_style("ticks"), sns.color_palette(PALETTE):
        plt.rcParams.update(RC)
        yield


# ----------------------------------------------------------------------------------- helpers
def _axes(ax):
    import matplotlib.pyplot as plt

    return ax if ax is not None else plt.gca()


def _colors(n: int) -> list:
    import seaborn as sns

    return sns.color_palette(PALETTE, max(n, 1))


def _label(column: str) -> str:
    return LABELS.get(column, column)


def _note(ax, text: str, *, loc: str = "lower right") -> None:
    """A boxed note in the axes (e.g. :data:`NO_GPU_NOTE`), kept as ``ax.texts``."""
    x, ha = (0.97, "right") if "right" in loc else (0.03, "left")
    y, va = (0.04, "bottom") if "lower" in loc else (0.96, "top")
    ax.text(x, y, text, transform=ax.transAxes, ha=ha, va=va, fontsize=7, color="0.25",
            bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="0.6", lw=0.5))


def _has_gpu(data: pd.DataFrame) -> bool:
    return "device" in data and data["device"].astype(str).str.startswith("cuda").any()


def _rate(flops_per_s: float) -> str:
    """FLOP/s in readable units: ``138 GFLOP/s``, ``44.1 TFLOP/s``."""
    for scale, unit in ((1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s")):
        if flops_per_s >= scale:
            return f"{flops_per_s / scale:.3g} {unit}"
    return f"{flops_per_s:.3g} FLOP/s"


def _spans_decades(values) -> bool:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    return len(values) > 1 and values.max() / values.min() >= 10


def _groups(data: pd.DataFrame, columns):
    """(key, rows) per distinct value of ``columns`` (in order of appearance); one group if none."""
    columns = [c for c in columns if c is not None]
    if not columns:
        yield (), data
        return
    for key, rows in data.groupby(columns, sort=False, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), rows


def _per_x(rows: pd.DataFrame, x: str, columns) -> pd.DataFrame:
    """Rows sorted by ``x``; several rows at one ``x`` are combined by their median."""
    return rows.groupby(x, sort=True)[list(columns)].median().reset_index()


def _log_ticks(ax, *, plain=(True, True)) -> None:
    """Readable log ticks: decades as plain numbers (``plain``, per x and y) or powers of ten; the
    in-between ticks labelled (2, 5) only where an axis spans less than two decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    limits = (ax.dataLim.intervalx, ax.dataLim.intervaly)
    for axis, scale, use_plain, (lo, hi) in zip((ax.xaxis, ax.yaxis), (ax.get_xscale(), ax.get_yscale()),
                                                  plain, limits):
        if scale != "log":
            continue
        if use_plain:
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        if lo > 0 and hi / lo < 100:
            axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        else:
            axis.set_minor_formatter(NullFormatter())


#: Legend placement below the axes (long series names never cover the data).
BELOW = dict(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)


def _latency_axes(ax, data: pd.DataFrame, x: str) -> None:
    """Latency against ``x``: log scales where the data span decades, labels with units, ticks."""
    if _spans_decades(data[x]):
        ax.set_xscale("log")
    if _spans_decades(data["median_s"]):
        ax.set_yscale("log")
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label("median_s"))
    _log_ticks(ax)


def _legend(ax, note: Optional[str] = None, **kwargs) -> None:
    """The legend, with ``note`` (e.g. :data:`NO_GPU_NOTE`) as its title so it never hides data;
    without a legend the note goes in the axes. ``loc="below"``: under the axes (:data:`BELOW`)."""
    handles, labels = ax.get_legend_handles_labels()
    if kwargs.get("loc") == "below":
        kwargs = {**BELOW, **{k: v for k, v in kwargs.items() if k != "loc"}}
    if handles:
        legend = ax.legend(title=note, **kwargs)
        if note:
            legend.get_title().set_color("0.3")
            legend.get_title().set_fontstyle("italic")
    elif note:
        _note(ax, note)


# ------------------------------------------------------------------------------------ sweeps
def _fit_grid(data: pd.DataFrame, x: str, n: int = 200) -> dict:
    """The three sizes along a dense grid of ``x``; the other two follow the data (constant, or
    interpolated in log-log, e.g. ``n_layers`` along a fixed-parameter-count sweep)."""
    from .latency_models import AXES

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


def _short(label) -> str:
    """A series label without the bracketed key fields fit_results adds (``m/cpu [threads=16]``)."""
    return str(label).split(" [")[0]


def _num(value: float) -> str:
    """A size for a legend: whole numbers from 100 on (``1030``, not ``1.03e+03``), else 3 digits."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def crossover_label(crossover, x: Optional[str] = None) -> str:
    """Legend text of a crossover: the pair (the machine once when both sides share it), where the
    curves meet with its bootstrap interval, and the other roots if any.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> crossover_label(NS(a="m/cpu", b="m/cuda", axis="batch_size", x=393.4, low=310, high=464, roots=[393.4]))
    'm: cpu = cuda at batch_size 393 [310, 464]'
    """
    a, b = _short(crossover.a), _short(crossover.b)
    (ma, _, da), (mb, _, db) = a.rpartition("/"), b.rpartition("/")
    pair = f"{ma}: {da} = {db}" if ma and ma == mb else f"{a} = {b}"
    text = f"{pair} at {x or crossover.axis} {_num(crossover.x)}"
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
    winner = _short(crossover.winner or "?")
    other = _short(crossover.b if crossover.winner == crossover.a else crossover.a)
    (mw, _, dw), (mo, _, do) = winner.rpartition("/"), other.rpartition("/")
    lo, hi = crossover.x_range
    pair = f"{mw}: {dw} faster than {do}" if mw and mw == mo else f"{winner} faster than {other}"
    return f"{pair}\nat every {x} in {lo:g}–{hi:g} (fit, no crossover)"


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
    colors = dict(zip([k for k, _ in groups], _colors(len(groups))))
    for key, rows in groups:
        line = _per_x(rows, x, columns)
        label = str(key[0]) if key else None
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
        The peak of each ``hue`` value (FLOP/s); default: the highest rate achieved in ``data``
        ("measured peak"). A value missing from the mapping falls back to that default.
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
    colors = _colors(len(groups))
    peaks = []
    for (key, rows), color in zip(groups, colors):
        rows = rows.sort_values("flops")
        rate = rows["flops"].to_numpy(float) / rows["median_s"].to_numpy(float)
        name = str(key[0])
        ax.plot(rows["flops"], rate, linestyle="none", marker="o", alpha=0.8, color=color, label=name)
        peak = (peak_flops_per_s or {}).get(key[0])
        measured = peak is None
        peak = float(rate.max()) if measured else float(peak)
        peaks.append(peak)
        ax.axhline(peak, color=color, linestyle="--", linewidth=1.0,
                   label=f"{name} {'measured ' if measured else ''}peak {_rate(peak)}")
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


# ------------------------------------------------------------------------------- speed-up map
def _edges(values) -> np.ndarray:
    """Cell edges around sorted positive ``values`` on a log axis: geometric midpoints, the outer
    cells as wide (in log) as their neighbour's half-gap (a factor 2 each way for one value)."""
    u = np.log(np.asarray(values, float))
    if len(u) == 1:
        return np.exp(np.array([u[0] - np.log(2), u[0] + np.log(2)]))
    middle = (u[:-1] + u[1:]) / 2
    return np.exp(np.concatenate([[u[0] - (middle[0] - u[0])], middle, [u[-1] + (u[-1] - middle[-1])]]))


def _ratio_norm(values):
    from matplotlib.colors import LogNorm

    values = np.asarray(values, float)
    finite = values[np.isfinite(values) & (values > 0)]
    top = float(np.exp(np.abs(np.log(finite)).max())) if len(finite) else 2.0
    top = max(top, 1.5)
    return LogNorm(1 / top, top), top


def _missing_note(ax, data, a, b, hue, x, y) -> bool:
    """Note and True when ``a`` or ``b`` has no rows (nothing else is drawn)."""
    missing = [v for v in (a, b) if not (data[hue] == v).any()] if hue in data else [a, b]
    if not missing:
        return False
    gpu = any(str(v).startswith("cuda") for v in missing)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    text = (f"{NO_GPU_NOTE}: " if gpu else "") + f"no {' or '.join(map(str, missing))} rows to compare"
    if not missing == [a, b] and (data[hue] == a).any():
        cells = data[data[hue] == a]
        text += f"\n({a} measured at {cells[[x, y]].drop_duplicates().shape[0]} cells of this grid)"
    _note(ax, text, loc="upper left")
    return True


def speedup_map(data: pd.DataFrame, *, x: str = "d_model", y: str = "batch_size", a: str = "cpu",
                b: str = "cuda", frontier: Optional[pd.DataFrame] = None, hue: str = "device",
                annotate: bool = True, ax=None):
    """Heatmap of the speed-up ``t_a / t_b`` over the ``x`` by ``y`` grid (above 1: ``b`` is faster).

    Both axes are logarithmic in the sizes themselves: each cell is centred on its measured value and
    reaches halfway (in log) to its neighbours, so a frontier is drawn in the cells' own coordinates.

    Parameters
    ----------
    data : pandas.DataFrame
        Rows of both devices with ``x``, ``y``, ``median_s`` and ``hue``; several rows per cell and
        device are combined by their median. Cells measured on only one device stay blank.
    x, y : str
        Grid columns (every value measured on both devices gets a column/row, labelled with it).
    a, b : str
        Values of ``hue`` compared (default: CPU time over GPU time).
    frontier : pandas.DataFrame, optional
        A crossover frontier with columns ``x`` and ``y`` (e.g. from
        :func:`crossover.analysis.crossover_frontier` on a fine grid of ``x``), drawn as a line in
        data coordinates (rows with no ``y`` are left out), with its ``low``-``high`` interval shaded
        where given.
    hue : str
        Column holding ``a`` and ``b``.
    annotate : bool
        Write each cell's speed-up in it.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        With the mesh in ``ax.collections[0]`` (its array: the speed-ups, row = ``y``, column = ``x``).
        Without rows of ``a`` or ``b`` nothing is drawn but a note naming what is missing.
    """
    from matplotlib.ticker import FixedLocator, NullLocator

    ax = _axes(ax)
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label(y))
    if _missing_note(ax, data, a, b, hue, x, y):
        return ax
    times = {v: data[data[hue] == v].pivot_table(index=y, columns=x, values="median_s", aggfunc="median")
             for v in (a, b)}
    ratio = times[a] / times[b]
    ratio = ratio.dropna(how="all").dropna(axis=1, how="all")
    ratio = ratio.reindex(index=sorted(ratio.index), columns=sorted(ratio.columns))
    values = ratio.to_numpy(float)
    norm, top = _ratio_norm(values)
    cols, rows = ratio.columns.to_numpy(float), ratio.index.to_numpy(float)
    mesh = ax.pcolormesh(_edges(cols), _edges(rows), np.ma.masked_invalid(values), cmap="RdBu_r", norm=norm,
                         edgecolors="white", linewidth=0.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(_edges(cols)[[0, -1]])
    ax.set_ylim(_edges(rows)[[0, -1]])
    for axis, levels in ((ax.xaxis, cols), (ax.yaxis, rows)):
        axis.set_major_locator(FixedLocator(levels))
        axis.set_minor_locator(NullLocator())
        axis.set_ticklabels([f"{v:g}" for v in levels])
    if len(cols) > 6:
        ax.tick_params(axis="x", labelrotation=45)
    ax.grid(False)
    if annotate:
        size = 6 if values.size <= 40 else 4.5
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                if np.isfinite(values[i, j]):
                    dark = abs(np.log(values[i, j])) > 0.6 * np.log(top)
                    ax.text(cols[j], rows[i], f"{values[i, j]:.2g}", ha="center", va="center", fontsize=size,
                            color="white" if dark else "black")
    bar = ax.figure.colorbar(mesh, ax=ax)
    bar.set_label(f"speed-up t_{a} / t_{b} (×, >1: {b} faster)")
    if frontier is not None and len(frontier):
        line = frontier.dropna(subset=[x, y]).sort_values(x)
        line = line[(line[x] > 0) & (line[y] > 0)]
        if len(line):
            if {"low", "high"} <= set(line.columns) and line[["low", "high"]].notna().all().all():
                ax.fill_between(line[x].to_numpy(float), line["low"].to_numpy(float),
                                line["high"].to_numpy(float), color="black", alpha=0.2, lw=0,
                                label="frontier interval")
            ax.plot(line[x].to_numpy(float), line[y].to_numpy(float), color="black", linewidth=1.5,
                    label=f"fitted frontier (t_{a} = t_{b})")
            _legend(ax, loc="upper left", bbox_to_anchor=(0, -0.18))
    return ax


def speedup_scatter(data: pd.DataFrame, *, x: str = "params", y: str = "batch_size", a: str = "cpu",
                    b: str = "cuda", hue: str = "device", annotate: bool = True, ax=None):
    """Speed-up ``t_a / t_b`` of every point measured on both devices, placed at (``x``, ``y``).

    For axes that do not form a grid (e.g. parameters ``n_layers * d_model**2`` by batch size, where
    several shapes share one parameter count). Points are matched on ``d_model``, ``n_layers`` and
    ``batch_size``; points that land on one (``x``, ``y``) are set side by side along ``x`` (narrowest
    first). Only points with no neighbour within a factor 2.5 along ``x`` get their value written.

    Parameters
    ----------
    data : pandas.DataFrame
        Rows of both devices with the three sizes, ``x``, ``y``, ``median_s`` and ``hue``.
    x, y : str
        Columns placed on the (log) axes.
    a, b : str
        Values of ``hue`` compared.
    annotate : bool
        Write each point's speed-up next to it.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        ``ax.collections[0]``: the points (offsets: positions, array: the speed-ups).
    """
    ax = _axes(ax)
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label(y))
    if _missing_note(ax, data, a, b, hue, x, y):
        return ax
    keys = ["d_model", "n_layers", "batch_size"]
    extra = [c for c in (x, y) if c not in keys]
    times = [data[data[hue] == v].groupby(keys)[["median_s"] + extra].median() for v in (a, b)]
    joined = times[0].merge(times[1][["median_s"]].rename(columns={"median_s": "median_s_b"}),
                            left_index=True, right_index=True, how="inner").reset_index()
    joined["ratio"] = joined["median_s"] / joined["median_s_b"]
    joined = joined.sort_values([x, y, "d_model"]).reset_index(drop=True)
    rank = joined.groupby([x, y]).cumcount().to_numpy()
    count = joined.groupby([x, y])["ratio"].transform("size").to_numpy()
    shift = 1.35 ** (rank - (count - 1) / 2)
    px, py = joined[x].to_numpy(float) * shift, joined[y].to_numpy(float)
    norm, top = _ratio_norm(joined["ratio"])
    points = ax.scatter(px, py, c=joined["ratio"].to_numpy(float), cmap="RdBu_r", norm=norm, s=36,
                        edgecolors="0.3", linewidths=0.4, zorder=3)
    if annotate:
        order = np.lexsort((px, py))
        gap = np.full(len(px), np.inf)  # log distance to the nearest point of the same row
        for left, right in zip(order[:-1], order[1:]):
            if py[left] == py[right]:
                d = abs(np.log(px[right] / px[left]))
                gap[left], gap[right] = min(gap[left], d), min(gap[right], d)
        for i, row in joined.iterrows():
            if gap[i] < np.log(2.5):
                continue
            text = f"{row['ratio']:.2g}"
            ax.annotate(text, (px[i], py[i]), xytext=(0, 5), textcoords="offset points", ha="center",
                        va="bottom", fontsize=4.5, color="0.2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.margins(0.08)
    _log_ticks(ax, plain=(False, True))
    bar = ax.figure.colorbar(points, ax=ax)
    bar.set_label(f"speed-up t_{a} / t_{b} (×, >1: {b} faster)")
    return ax


# -------------------------------------------------------------------------------- overhead
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
        colors = dict(zip(hues, _colors(len(hues))))
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
        label = str(key[0]) + (f", {style}={key[1]}" if style else "")
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


def _best(rows: pd.DataFrame, x: str, style: str) -> pd.Series:
    """Per ``x`` measured in two or more ``style`` values of ``rows`` (all of them, if only one):
    the fastest median latency."""
    table = rows.pivot_table(index=x, columns=style, values="median_s", aggfunc="median")
    enough = table.notna().sum(axis=1) >= min(2, table.shape[1])
    return table[enough].min(axis=1)


def _crossings(first: pd.Series, second: pd.Series) -> list:
    """Where two measured curves (indexed by x) cross (see :func:`crossover.crossovers.curve_crossings`)."""
    from .crossovers import curve_crossings

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
    colors = dict(zip((a, b), _colors(2)))
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
                    label=f"{device} {mode}")
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
                           label=f"eager: {a} = {b} at {x} {_num(roots[0])} (measured)")
            else:
                notes.append(_everywhere(curves[a, "eager"], curves[b, "eager"], a, b, x, "eager"))
        best = {d: _best(data[data[hue] == d], x, style) for d in devices}
        if all(len(v) for v in best.values()):
            roots = _crossings(best[a], best[b])
            for i, root in enumerate(roots):
                ax.axvline(root, color="0.15", linestyle="-.", linewidth=1.1,
                           label="_best" if i else f"fastest modes: {a} = {b} at {x} "
                                                   + ", ".join(_num(r) for r in roots) + " (measured)")
            if not roots:
                notes.append(_everywhere(best[a], best[b], a, b, x, "fastest modes"))
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


# -------------------------------------------------------------------------------- accuracy
def accuracy_plot(predictions: pd.DataFrame, *, hue: Optional[str] = "axis", band: float = 0.10, ax=None):
    """Predicted against measured latency (log-log) for held-out points, with y = x and a ±band.

    Parameters
    ----------
    predictions : pandas.DataFrame
        Held-out predictions with ``measured_s``, ``predicted_s`` and ``hue`` (as from
        :func:`crossover.analysis.cross_validate`, where ``axis`` is the held-out size).
    hue : str or None
        Column naming the point series (default ``axis``).
    band : float
        Relative half-width of the shaded band (default 0.10, i.e. ±10%).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        ``ax.lines``: one marker series per ``hue`` value (in order of appearance), then y = x.

    See Also
    --------
    crossover.analysis.cross_validate
    """
    ax = _axes(ax)
    groups = list(_groups(predictions, [hue]))
    for (key, rows), color in zip(groups, _colors(len(groups))):
        within = 100 * float(((rows["predicted_s"] / rows["measured_s"] - 1).abs() <= band).mean())
        label = (f"{key[0]} held out" if key else "held out") + f": {within:.0f}% within ±{band:.0%}"
        ax.plot(rows["measured_s"], rows["predicted_s"], linestyle="none", marker="o", alpha=0.7,
                markersize=3, color=color, label=label)
    values = np.concatenate([predictions["measured_s"], predictions["predicted_s"]]).astype(float)
    values = values[np.isfinite(values) & (values > 0)]
    lo, hi = (values.min() / 1.5, values.max() * 1.5) if len(values) else (1e-4, 1.0)
    diagonal = np.array([lo, hi])
    ax.plot(diagonal, diagonal, color="0.2", linewidth=1.0, label="predicted = measured")
    ax.fill_between(diagonal, diagonal * (1 - band), diagonal * (1 + band), color="0.5", alpha=0.2, lw=0,
                    label=f"±{band:.0%}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("measured latency (s)")
    ax.set_ylabel("predicted latency, held out (s)")
    _log_ticks(ax)
    _legend(ax, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return ax


# ------------------------------------------------------------------------------ comparisons
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
    colors = dict(zip(hues, _colors(len(hues))))
    markers = ["o", "s", "^", "D"]
    styles = sorted(dict.fromkeys(data[style])) if style else [None]
    band = {"q1_s", "q3_s"} <= set(data.columns)
    groups = dict(_groups(data, [by, style]))
    for key in [(h, s) if style else (h,) for h in hues for s in styles]:
        if key not in groups:
            continue
        rows = groups[key]
        line = _per_x(rows, x, ["median_s"] + (["q1_s", "q3_s"] if band else []))
        label = str(key[0]) + (f", {style}={key[1]}" if style else "")
        index = styles.index(key[1]) if style else 0
        ax.plot(line[x], line["median_s"], color=colors[key[0]], marker=markers[index % len(markers)],
                linestyle=["-", "--", ":", "-."][index % 4], label=label)
        if band:
            ax.fill_between(line[x], line["q1_s"], line["q3_s"], color=colors[key[0]], alpha=0.2, lw=0)
    _latency_axes(ax, data, x)
    _legend(ax, None if _has_gpu(data) or not gpu_note else NO_GPU_NOTE + " (CPU only)",
            loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    return ax
