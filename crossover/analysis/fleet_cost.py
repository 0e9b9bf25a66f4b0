"""Across a fleet: every machine kind's latency for one model size, and the cheapest device per batch
size at the prices of the fleet's targets.

Each machine kind of the results (a machine label: the nodes of one partition pool into it, put on one
scale by their anchor, :mod:`crossover.results.anchors`) and each of its devices is one fitted series
(the one ``crossover predict`` reports on). At each batch size, a device's cost of a million samples
is its machine's price per hour times the time a million samples take, one batch after another
(:func:`crossover.analysis.crossovers.cost_per_million_samples`). A machine is priced whole (a GPU node's host
CPU costs the node), as the prices file does. The latency's bootstrap interval gives the cost's.
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from ..errors import AnalysisError

__all__ = ["cost_table", "usd_per_million"]


def usd_per_million(usd_per_hour: float, latency_s: float, batch_size: int) -> float:
    """What a million samples cost on a machine of ``usd_per_hour`` taking ``latency_s`` a batch
    (:func:`crossover.analysis.crossovers.cost_per_million_samples`, as a float)."""
    from .crossovers import cost_per_million_samples

    return float(cost_per_million_samples(latency_s, batch_size, usd_per_hour))


def cost_table(fits: dict, prices: dict, *, d_model: int, n_layers: int, batch_sizes: Sequence[int]) -> pd.DataFrame:
    """Every fitted series' latency and cost at each batch size.

    Parameters
    ----------
    fits : dict
        Label -> fitted series (:class:`crossover.fit.series_fit.SeriesFit`: ``key``, ``latency_s``,
        ``latency_interval_s``).
    prices : dict
        Machine label -> ``{"usd_per_hour": float, "source": str}``.
    d_model, n_layers : int
        The model's sizes.
    batch_sizes : sequence of int

    Returns
    -------
    DataFrame
        One row per (batch size, series): ``batch_size``, ``series``, ``machine``, ``device``,
        ``latency_s`` with ``latency_low_s``/``latency_high_s``, ``usd_per_hour``, ``usd_per_million``
        with its ``_low``/``_high``, ``cheapest`` (True for the lowest cost at that batch size) and
        ``fastest``; sorted by batch size, then cost.

    Raises
    ------
    AnalysisError
        A machine of the fits without a price (naming it, and how to give one).
    """
    unpriced = sorted({str(fit.key["machine"]) for fit in fits.values()} - set(prices))
    if unpriced:
        raise AnalysisError(f"no price for machine {', '.join(unpriced)}: give its target a usd_per_hour "
                            "(with its source) in the targets file, or pass --price MACHINE=USD_PER_HOUR")
    rows = []
    for batch in batch_sizes:
        for label, fit in fits.items():
            size = dict(d_model=d_model, n_layers=n_layers, batch_size=int(batch))
            latency = float(fit.latency_s(**size))
            low, high = fit.latency_interval_s(**size)
            price = float(prices[str(fit.key["machine"])]["usd_per_hour"])
            rows.append(dict(batch_size=int(batch), series=label, machine=fit.key["machine"], device=fit.key["device"],
                             latency_s=latency, latency_low_s=low, latency_high_s=high, usd_per_hour=price,
                             usd_per_million=usd_per_million(price, latency, batch),
                             usd_per_million_low=usd_per_million(price, low, batch) if math.isfinite(low) else math.nan,
                             usd_per_million_high=usd_per_million(price, high, batch) if math.isfinite(high) else math.nan,
                             extrapolated=not fit.in_range(**size)))
    table = pd.DataFrame(rows).sort_values(["batch_size", "usd_per_million"], kind="stable").reset_index(drop=True)
    table["cheapest"] = table.groupby("batch_size")["usd_per_million"].transform("min") == table["usd_per_million"]
    table["fastest"] = table.groupby("batch_size")["latency_s"].transform("min") == table["latency_s"]
    return table
