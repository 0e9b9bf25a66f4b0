"""The package's one look for plots, and the helpers every plot module shares.

:func:`style` (seaborn "ticks", the colour-blind :data:`PALETTE`, :data:`RC` sized for a paper
column) wraps every figure :mod:`crossover.plots.figures` draws. The private helpers (axes, colours, unit
labels, log ticks, legends and notes, grouping rows into lines, the short names and numbers of
legend text) are used by the plot families :mod:`crossover.plots.sweeps`,
:mod:`crossover.plots.maps`, :mod:`crossover.plots.modes` and :mod:`crossover.plots.checks`; the
public names are re-exported by :mod:`crossover.plots`.
"""

from __future__ import annotations

import contextlib
from typing import Optional

import numpy as np
import pandas as pd

__all__ = ["RC", "PALETTE", "NO_GPU_NOTE", "MODES", "LABELS", "BELOW", "style"]

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


def _short(label) -> str:
    """A series label without the bracketed key fields fit_results adds (``m/cpu [threads=16]``)."""
    return str(label).split(" [")[0]


def _num(value: float) -> str:
    """A size for a legend: whole numbers from 100 on (``1030``, not ``1.03e+03``), else 3 digits."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
