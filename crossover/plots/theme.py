"""The package's one look for plots, and the helpers every plot module shares.

:func:`style` (seaborn "ticks", the colour-blind :data:`PALETTE`, :data:`RC` sized for a paper
column) wraps every figure :mod:`crossover.plots.figures` draws. The private helpers (axes, colours, unit
labels, log ticks, legends and notes, grouping rows into lines, the short names and numbers of
legend text) are used by the plot families :mod:`crossover.plots.sweeps`,
:mod:`crossover.plots.maps`, :mod:`crossover.plots.modes` and :mod:`crossover.plots.checks`; the
public names are re-exported by :mod:`crossover.plots`.
"""

from __future__ import annotations

import re

import contextlib
from typing import Optional

import numpy as np
import pandas as pd

__all__ = ["RC", "PALETTE", "NO_GPU_NOTE", "MODES", "LABELS", "BELOW", "style", "display_name",
           "assign_series_colors", "series_colors", "single_machine"]

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


#: The palette's colours in the order series get them: blue, orange, green, then pink before vermilion
#: (so the second GPU machine's host is not a near-orange beside the first's).
_SERIES_PALETTE_ORDER = (0, 1, 2, 4, 3, 5, 9, 7, 8, 6)
#: The series (``machine/device``) of the figures being drawn, in colour order (:func:`assign_series_colors`).
_SERIES_ORDER: list = []


def _machine_device(label) -> Optional[tuple]:
    text = _short(label)
    machine, sep, device = text.partition("/")
    return (machine, device) if sep and machine and device else None


def display_name(label) -> str:
    """A series as a reader names it: ``nvidia-h200-16c/cpu`` -> ``H200 host CPU``, ``.../cuda`` ->
    ``H200 GPU``, ``amd-epyc-2c/cpu`` -> ``AMD EPYC 2-core CPU``; anything not ``machine/device`` (a
    device, a mode) unchanged."""
    parts = _machine_device(label)
    if parts is None:
        return str(label)
    machine, device = parts
    if machine.startswith("nvidia-") and len(machine.split("-")) > 1:
        gpu = machine.split("-")[1].upper()
        return f"{gpu} GPU" if device.startswith("cuda") else f"{gpu} host {device.upper()}"
    return f"{_machine_words(machine)} {'GPU' if device.startswith('cuda') else device.upper()}"


_WORDS = {"amd": "AMD", "epyc": "EPYC", "intel": "Intel", "xeon": "Xeon", "arm": "Arm", "apple": "Apple"}


def _machine_words(machine: str) -> str:
    """A CPU machine's slug in words: ``amd-epyc-2c`` -> ``AMD EPYC 2-core``, ``intel-xeon-16c`` ->
    ``Intel Xeon 16-core``; a slug of another form unchanged."""
    parts = machine.split("-")
    if len(parts) < 2 or not re.fullmatch(r"\d+c", parts[-1]):
        return machine
    words = [_WORDS.get(w, w.capitalize()) for w in parts[:-1]]
    return " ".join(words + [f"{parts[-1][:-1]}-core"])


def assign_series_colors(labels) -> None:
    """Fix each series' colour for the figures drawn next (one colour per device across all of them):
    CPU-only machines first, then each GPU machine's host CPU and GPU, by machine name."""
    pairs = {str(label): _machine_device(label) for label in labels}
    gpu_machines = {p[0] for p in pairs.values() if p and p[1].startswith("cuda")}
    order = sorted(pairs, key=lambda label: (pairs[label] is None, (pairs[label] or ("",))[0] in gpu_machines,
                                             pairs[label] or (label,)))
    _SERIES_ORDER[:] = order


def single_machine(data: pd.DataFrame) -> Optional[str]:
    """The one machine ``data`` holds (its ``machine`` column), else None."""
    if "machine" in data and data["machine"].nunique() == 1:
        return str(data["machine"].iloc[0])
    return None


def series_colors(keys, machine: Optional[str] = None) -> dict:
    """A colour per key: the series' fixed colour (:func:`assign_series_colors`) where it has one (a bare
    device name as ``machine``'s series when ``machine`` is given), else the palette's next in order."""
    keys = list(keys)
    if machine:
        named = series_colors([f"{machine}/{k}" if _machine_device(k) is None else k for k in keys])
        return dict(zip(keys, named.values()))
    base = _colors(10)
    order = [base[i] for i in _SERIES_PALETTE_ORDER]
    palette = (order * (1 + (len(_SERIES_ORDER) + len(keys)) // len(order))) if _SERIES_ORDER \
        else _colors(max(len(keys), 1))
    fixed = {label: palette[i] for i, label in enumerate(_SERIES_ORDER)}
    spare = iter(palette[len(_SERIES_ORDER):])
    return {k: fixed[str(k)] if str(k) in fixed else next(spare) for k in keys}


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
