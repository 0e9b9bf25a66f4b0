"""Speed-up maps: where one device beats the other over two sizes at once.

:func:`speedup_map` draws the time ratio ``t_a / t_b`` (CPU over GPU by default) as a heatmap over
a grid of two sizes, each cell centred on its measured value on log axes, with an optional fitted
frontier in the same coordinates; :func:`speedup_scatter` places every point measured on both
devices where the sizes do not form a grid (parameters by batch size). Tidy DataFrame in,
keyword-only column names, ``ax`` out (see :mod:`crossover.plots`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from .theme import NO_GPU_NOTE, _axes, _label, _legend, _log_ticks, _note

__all__ = ["speedup_map", "speedup_scatter"]


# -------------------------------------------------------------------------------- speed-up map
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


# ---------------------------------------------------------------------------- speed-up scatter
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

