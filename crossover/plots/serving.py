"""Serving: each device's latency against throughput, with the target, the request rate and the chosen
point (``crossover advise --plot FILE``).

:func:`serving_plot` draws :meth:`crossover.analysis.advice.Advice.by_rate` (tidy: one row per
device and rate): per device, the lowest latency bound it reaches at each rate, over its batch sizes
with the fewest replicas that carry the rate (:func:`crossover.analysis.advice.lowest_bound_by_rate`).
At low rates a batch takes long to fill (the bound falls as ``1/λ``); at high rates replicas are
added and the bound levels off near ``t/0.8 + t_high`` of the best batch. The target is a horizontal
line, the rate a vertical one: each device's line crosses the rate at the lowest bound it reaches
there. The choice (the cheapest, not always the fastest) is a star at (the rate, its bound),
labelled with its batch, replicas and cost.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from ..units import format_quantity, format_seconds
from .theme import _axes, _colors, _legend, _note

__all__ = ["serving_plot"]


def _ticks(ax) -> None:
    """Log ticks as quantities: seconds with their prefix (``50 µs``, ``10 ms``), rates with theirs
    (``10 k``); the in-between ticks (2, 5) labelled too where an axis spans under two decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    rate = FuncFormatter(lambda v, _: format_quantity(v, "req/s")[: -len("req/s")].strip())
    seconds = FuncFormatter(lambda v, _: format_seconds(v))
    for axis, formatter, (lo, hi) in ((ax.xaxis, rate, ax.get_xlim()), (ax.yaxis, seconds, ax.get_ylim())):
        axis.set_major_formatter(formatter)
        axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        axis.set_minor_formatter(formatter if hi / lo < 100 else NullFormatter())


def serving_plot(data: pd.DataFrame, *, slo_s: float, rate_per_s: float, choice: Optional[dict] = None,
                 note: Optional[str] = None, ax=None):
    """Each device's lowest latency bound against the request rate; target, rate and choice drawn.

    Parameters
    ----------
    data : DataFrame
        :meth:`crossover.analysis.advice.Advice.by_rate`: ``label``, ``rate_per_s`` and
        ``latency_bound_s`` per device and rate.
    slo_s : float
        The latency target, seconds (a horizontal line).
    rate_per_s : float
        The request rate (a vertical line).
    choice : dict, optional
        The chosen point (``Advice.choice``: ``label``, ``batch_size``, ``replicas``,
        ``latency_bound_s``, ``usd_per_hour``); None: nothing meets the target (said in the axes).
    note : str, optional
        The legend's title (e.g. what was asked).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        One line per device (``gid``: its ``label``; x the rates, y the bounds, in ``data``'s order
        per device), the target (``gid`` ``"target"``), the rate (``gid`` ``"rate"``) and the choice, a
        star (``gid`` ``"choice"``).
    """
    ax = _axes(ax)
    labels = list(dict.fromkeys(data["label"]))
    colors = dict(zip(labels, _colors(len(labels))))
    chosen = choice["label"] if choice is not None else None
    for label in labels:
        rows = data[data["label"] == label]
        line, = ax.plot(rows["rate_per_s"].to_numpy(float), rows["latency_bound_s"].to_numpy(float),
                        color=colors[label], lw=1.8 if label == chosen else 1.0, label=label)
        line.set_gid(label)
    target = ax.axhline(slo_s, color="0.2", ls="--", lw=0.8, label=f"target {format_seconds(slo_s)}")
    target.set_gid("target")
    rate = ax.axvline(rate_per_s, color="0.2", ls=":", lw=0.9, label=f"rate {format_quantity(rate_per_s, 'req/s')}")
    rate.set_gid("rate")
    if choice is not None:
        n = int(choice["replicas"])
        star, = ax.plot([rate_per_s], [choice["latency_bound_s"]], marker="*", markersize=12, color="black",
                        markerfacecolor=colors[chosen], ls="none", zorder=5,
                        label=f"choice: {chosen}, batch {choice['batch_size']}, {n} replica{'' if n == 1 else 's'}, "
                              f"{format_quantity(choice['usd_per_hour'], 'USD/h')}")
        star.set_gid("choice")
    else:
        _note(ax, "no choice meets the target at this rate", loc="upper right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ys = np.concatenate([data["latency_bound_s"].to_numpy(float), [slo_s]])
    ax.set_ylim(ys.min() / 1.5, ys.max() * 1.5)
    ax.set_xlim(data["rate_per_s"].min(), data["rate_per_s"].max())
    ax.set_xlabel("requests per second")
    ax.set_ylabel("lowest latency bound, B·n/λ + t_high")
    _ticks(ax)
    _legend(ax, note, loc="below", ncol=2)
    return ax
