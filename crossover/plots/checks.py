"""How far to trust the numbers: held-out accuracy of the fitted model, and the drift of each run.

:func:`accuracy_plot` draws predicted against measured latency for held-out points (grouped
cross-validation) with a ±10% band; :func:`drift_plot` draws each run's drift-reference readings
over its quiet level through the run (the table comes from :func:`crossover.results.drift.drift_table`).
Tidy DataFrame in, keyword-only column names, ``ax`` out (see :mod:`crossover.plots`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from .theme import _axes, _colors, _groups, _legend, _log_ticks
from ..results.statistics import DRIFT_LIMIT

__all__ = ["accuracy_plot", "drift_plot"]


# ------------------------------------------------------------------------------------ accuracy
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


# --------------------------------------------------------------------------------------- drift
def drift_plot(data: pd.DataFrame, *, x: str = "elapsed_min", y: str = "drift", hue: str = "run",
               ax=None):
    """Each run's reference readings over its run, relative to its quiet level.

    Parameters
    ----------
    data : pandas.DataFrame
        As from :func:`crossover.results.drift.drift_table`.
    x, y, hue : str
        Columns: time (minutes since the run's start), the reading over the quiet level, the run.
    ax : matplotlib.axes.Axes, optional
        Where to draw (default: the current axes).

    Returns
    -------
    matplotlib.axes.Axes
        One line (with markers) per run, and a dotted line at :data:`crossover.results.statistics.DRIFT_LIMIT`:
        rows measured above it are flagged ``drifted``.
    """
    ax = _axes(ax)
    for run, group in data.groupby(hue, sort=True):
        ax.plot(group[x], group[y], marker="o", markersize=3, linewidth=1, label=str(run))
    ax.axhline(DRIFT_LIMIT, color="0.4", linestyle=":", linewidth=1, label=f"drifted above {DRIFT_LIMIT:g}x")
    ax.axhline(1.0, color="0.7", linewidth=0.8)
    ax.set_xlabel("minutes since the run started")
    ax.set_ylabel("reference reading / run's quiet level")
    ax.legend(fontsize="small")
    return ax
