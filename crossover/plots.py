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
    "overhead_plot", "accuracy_plot", "comparison_plot",
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


def _legend(ax, note: Optional[str] = None, **kwargs) -> None:
    """The legend, with ``note`` (e.g. :data:`NO_GPU_NOTE`) as its title so it never hides data;
    without a legend the note goes in the axes."""
    handles, labels = ax.get_legend_handles_labels()
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
    from .analysis import AXES

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


def sweep_plot(data: pd.DataFrame, *, x: str, y: str = "median_s", hue: Optional[str] = "device",
               fits: Optional[Mapping] = None, crossover=None, ax=None):
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
        the data's values (interpolated in log-log where they vary with ``x``).
    crossover : crossover.analysis.Crossover, optional
        Marked as a vertical line at ``crossover.x`` with its interval (``low``, ``high``) shaded.
        Nothing is drawn when ``crossover.x`` is None.
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: the current axes).

    Returns
    -------
    matplotlib.axes.Axes

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
    for i, (label, fit) in enumerate((fits or {}).items()):
        match = [k for k in colors if hue and k and str(k[0]) == str(fit.key.get(hue))]
        color = colors[match[0]] if match else fit_colors[i]
        sizes = _fit_grid(data, x)
        values = fit.latency_s(sizes["d_model"], sizes["n_layers"], sizes["batch_size"])
        ax.plot(sizes[x], values, linestyle="--", linewidth=1.0, color=color, label=label)
    if crossover is not None and crossover.x is not None:
        ax.axvline(crossover.x, color="0.2", linestyle=":", linewidth=1.0,
                   label=f"crossover {x} = {crossover.x:.3g}")
        if crossover.low is not None and crossover.high is not None:
            ax.axvspan(crossover.low, crossover.high, color="0.5", alpha=0.15, lw=0)
    if _spans_decades(data[x]):
        ax.set_xscale("log")
    if _spans_decades(data[y]) or fits:
        ax.set_yscale("log")
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label(y))
    _log_ticks(ax)
    _legend(ax, NO_GPU_NOTE if hue == "device" and not _has_gpu(data) else None, loc="best")
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
                   label=f"{name} {'measured ' if measured else ''}peak {peak / 1e9:.3g} GFLOP/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(_label("flops"))
    ax.set_ylabel("achieved throughput (FLOP/s)")
    if peaks:
        low, _ = ax.get_ylim()
        ax.set_ylim(low, 3 * max(peaks))
    _log_ticks(ax, plain=(False, False))
    _legend(ax, NO_GPU_NOTE if hue == "device" and not _has_gpu(data) else None,
            loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    return ax


# ------------------------------------------------------------------------------- speed-up map
def speedup_map(data: pd.DataFrame, *, x: str = "d_model", y: str = "batch_size", a: str = "cpu",
                b: str = "cuda", frontier: Optional[pd.DataFrame] = None, hue: str = "device",
                annotate: bool = True, ax=None):
    """Heatmap of the speed-up ``t_a / t_b`` over the ``x`` by ``y`` grid (above 1: ``b`` is faster).

    Parameters
    ----------
    data : pandas.DataFrame
        Rows of both devices with ``x``, ``y``, ``median_s`` and ``hue``; several rows per cell and
        device are combined by their median. Cells measured on only one device stay blank.
    x, y : str
        Grid columns (cells in measured order, labelled with their values).
    a, b : str
        Values of ``hue`` compared (default: CPU time over GPU time).
    frontier : pandas.DataFrame, optional
        A crossover frontier with columns ``x`` and ``y`` (e.g. from
        :func:`crossover.analysis.crossover_frontier`), drawn as a line over the cells (positions
        interpolated in log between the grid's values; rows with no ``y`` are left out).
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
    from matplotlib.colors import LogNorm

    ax = _axes(ax)
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label(y))
    missing = [v for v in (a, b) if not (data[hue] == v).any()] if hue in data else [a, b]
    if missing:
        gpu = any(str(v).startswith("cuda") for v in missing)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
        text = (f"{NO_GPU_NOTE}: " if gpu else "") + f"no {' or '.join(map(str, missing))} rows to compare"
        if not missing == [a, b] and (data[hue] == a).any():
            cells = data[data[hue] == a]
            text += f"\n({a} measured at {cells[[x, y]].drop_duplicates().shape[0]} cells of this grid)"
        _note(ax, text, loc="upper left")
        return ax
    times = {v: data[data[hue] == v].pivot_table(index=y, columns=x, values="median_s", aggfunc="median")
             for v in (a, b)}
    ratio = times[a] / times[b]
    ratio = ratio.reindex(index=sorted(ratio.index), columns=sorted(ratio.columns))
    values = ratio.to_numpy(float)
    finite = values[np.isfinite(values) & (values > 0)]
    top = float(np.exp(np.abs(np.log(finite)).max())) if len(finite) else 2.0
    top = max(top, 1.5)
    mesh = ax.pcolormesh(np.ma.masked_invalid(values), cmap="RdBu_r", norm=LogNorm(1 / top, top),
                         edgecolors="white", linewidth=0.5)
    cols, rows = ratio.columns.to_numpy(float), ratio.index.to_numpy(float)
    ax.set_xticks(np.arange(len(cols)) + 0.5, [f"{v:g}" for v in cols])
    ax.set_yticks(np.arange(len(rows)) + 0.5, [f"{v:g}" for v in rows])
    ax.grid(False)
    if annotate:
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                if np.isfinite(values[i, j]):
                    dark = abs(np.log(values[i, j])) > 0.6 * np.log(top)
                    ax.text(j + 0.5, i + 0.5, f"{values[i, j]:.2g}", ha="center", va="center", fontsize=6,
                            color="white" if dark else "black")
    bar = ax.figure.colorbar(mesh, ax=ax)
    bar.set_label(f"speed-up t_{a} / t_{b} (×, >1: {b} faster)")
    if frontier is not None and len(frontier):
        line = frontier.dropna(subset=[x, y]).sort_values(x)
        line = line[(line[x] > 0) & (line[y] > 0)]
        if len(line):
            def position(v, levels):
                return np.interp(np.log(np.asarray(v, float)), np.log(levels), np.arange(len(levels))) + 0.5

            ax.plot(position(line[x], cols), position(line[y], rows), color="black", marker=".",
                    linewidth=1.5, label="fitted frontier (t_a = t_b)")
            _legend(ax, loc="upper left", bbox_to_anchor=(0, -0.18))
    return ax


# -------------------------------------------------------------------------------- overhead
def overhead_plot(data: pd.DataFrame, *, hue: str = "mode", style: Optional[str] = "batch_size", ax=None):
    """Per-layer time (``median_s / n_layers``) against ``n_layers``, one line per mode.

    Parameters
    ----------
    data : pandas.DataFrame
        Rows with ``n_layers``, ``median_s`` and ``hue`` (``eager``, ``compile``, ``cudagraph``);
        several rows at one depth of a line are combined by their median.
    hue : str
        Column naming the colour of the lines (default ``mode``).
    style : str or None
        Column giving each of its values its own line style (default ``batch_size``, when it has
        more than one value).
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        One line per (``hue``, ``style``) pair, x = n_layers, y = seconds per layer.
    """
    ax = _axes(ax)
    if style is not None and (style not in data or data[style].nunique() < 2):
        style = None
    hues = list(dict.fromkeys(data[hue]))
    colors = dict(zip(hues, _colors(len(hues))))
    dashes = ["-", "--", ":", "-."]
    styles = list(dict.fromkeys(data[style])) if style else [None]
    for key, rows in _groups(data.assign(_per_layer_s=data["median_s"] / data["n_layers"]), [hue, style]):
        line = _per_x(rows, "n_layers", ["_per_layer_s"])
        label = str(key[0]) + (f", {style}={key[1]}" if style else "")
        ax.plot(line["n_layers"], line["_per_layer_s"], marker="o", color=colors[key[0]],
                linestyle=dashes[styles.index(key[1]) % len(dashes)] if style else "-", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(_label("n_layers"))
    ax.set_ylabel("time per layer (s)")
    note = None
    if hue == "mode" and "cudagraph" not in set(data[hue]):
        note = "CUDA graphs: " + (NO_GPU_NOTE if not _has_gpu(data) else "not measured")
    _log_ticks(ax)
    _legend(ax, note, loc="best")
    return ax


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
                    style: Optional[str] = None, ax=None):
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
    styles = list(dict.fromkeys(data[style])) if style else [None]
    band = {"q1_s", "q3_s"} <= set(data.columns)
    for key, rows in _groups(data, [by, style]):
        line = _per_x(rows, x, ["median_s"] + (["q1_s", "q3_s"] if band else []))
        label = str(key[0]) + (f", {style}={key[1]}" if style else "")
        index = styles.index(key[1]) if style else 0
        ax.plot(line[x], line["median_s"], color=colors[key[0]], marker=markers[index % len(markers)],
                linestyle=["-", "--", ":", "-."][index % 4], label=label)
        if band:
            ax.fill_between(line[x], line["q1_s"], line["q3_s"], color=colors[key[0]], alpha=0.2, lw=0)
    if _spans_decades(data[x]):
        ax.set_xscale("log")
    if _spans_decades(data["median_s"]):
        ax.set_yscale("log")
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label("median_s"))
    _log_ticks(ax)
    _legend(ax, None if _has_gpu(data) else NO_GPU_NOTE + " (CPU only)",
            loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    return ax
