"""Where two fitted series meet: crossovers with bootstrap intervals, frontiers, cost, predictions.

One root finder, :func:`crossing`, solves ``log t_a = log t_b`` (latencies times prices) along any
path through the sizes: :func:`crossover` walks one axis with the other two sizes fixed,
:func:`fixed_params_crossover` trades width for depth at a fixed parameter count, and
:func:`crossover_frontier` and :func:`cost_crossover` are repeated or priced crossovers. Each
bootstrap draw of the two fits is solved the same way, and the percentiles of those roots are the
interval. :func:`empirical_crossover` and :func:`curve_crossings` find where measured curves cross,
with no model. :func:`predict` answers the user's question for one configuration.

Pure computation on :class:`crossover.fit.series_fit.SeriesFit` objects; no file I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..crossings import brent_root, log_crossings
from ..errors import AnalysisError
from ..fit.series_fit import SeriesFit
from ..fit.latency_models import AXES
from ..results.columns import SERIES_KEYS

__all__ = ["reported_series", "Crossover", "crossing", "crossover", "fixed_params_crossover", "empirical_crossover",
           "curve_crossings", "crossover_frontier", "cost_per_million_samples", "cost_crossover", "predict"]


@dataclass
class Crossover:
    """Where the latency (or cost) of series ``a`` and ``b`` meet along ``axis``.

    ``x`` is None when the fitted curves never cross in ``x_range``; ``winner`` then names the series
    faster everywhere there. ``low``/``high`` are the bootstrap interval of the crossing,
    ``never_fraction`` the share of bootstrap resamples in which the curves do not cross in range.
    ``empirical`` lists crossings between measured points (log-log interpolation), if both series
    were measured at the same values of ``axis`` with the other sizes as in ``fixed``.
    """

    axis: str
    fixed: dict
    a: str
    b: str
    x: Optional[float]
    roots: list
    low: Optional[float]
    high: Optional[float]
    never_fraction: float
    winner_below: Optional[str]
    winner_above: Optional[str]
    winner: Optional[str]
    x_range: tuple
    empirical: list

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(self).items()}


def _check_comparable(fit_a: SeriesFit, fit_b: SeriesFit) -> None:
    if fit_a.statistic != fit_b.statistic:
        raise AnalysisError(f"{fit_a.label} is fitted on the {fit_a.statistic}, {fit_b.label} on the "
                            f"{fit_b.statistic}: fit both on the same statistic to compare them")


def _brackets(values, grid):
    positive = values > 0
    return [(grid[i], grid[i + 1]) for i in np.flatnonzero(positive[:-1] != positive[1:])]


def _grid_roots(values, grid) -> list:
    """The roots of ``values`` (sampled on ``grid``, log positions) by linear interpolation inside each
    bracketing grid step: a bootstrap draw's crossing without further model evaluations (on the
    default 128-point grid a step is a few percent wide, so the interpolation error is far below the
    spread of the draws)."""
    out = []
    for i in np.flatnonzero((values[:-1] > 0) != (values[1:] > 0)):
        u0, u1, v0, v1 = grid[i], grid[i + 1], values[i], values[i + 1]
        out.append(float(np.exp(u0 - v0 * (u1 - u0) / (v1 - v0))))
    return out


def crossing(fit_a: SeriesFit, fit_b: SeriesFit, path: Callable, x_range: tuple, *, axis: str, fixed: Mapping,
             prices: tuple = (1.0, 1.0), n_grid: int = 128, empirical: Sequence = ()) -> Crossover:
    """Solve ``log(p_a t_a) = log(p_b t_b)`` on the fitted models along a path, with a bootstrap interval.

    Parameters
    ----------
    fit_a, fit_b : SeriesFit
        Any two series fitted on the same statistic.
    path : callable
        ``x -> (d_model, n_layers, batch_size)`` for an array ``x`` of positions (sizes may be
        arrays or scalars, and need not be integers).
    x_range : (float, float)
        Where to look (positive, increasing).
    axis, fixed
        What ``x`` is and what the path holds fixed (reported in the :class:`Crossover`).
    prices : (float, float)
        Multipliers of each latency (prices per hour give the cost crossover).
    n_grid : int
        Log-spaced grid scanned for sign changes before Brent's method (:func:`crossover.crossings.brent_root`) refines a root;
        each bootstrap draw (the first ``min(n_a, n_b)`` draws of the two fits, paired) is solved on the
        grid alone, by linear interpolation inside the bracketing step.
    empirical : sequence
        Measured crossings to report beside the fitted one.

    Returns
    -------
    Crossover
    """
    _check_comparable(fit_a, fit_b)
    lo, hi = map(float, x_range)
    if not 0 < lo < hi:
        raise AnalysisError(f"x_range must be increasing and positive, got {x_range}")
    grid = np.linspace(np.log(lo), np.log(hi), n_grid)

    def log_ratio(u, theta_a=None, theta_b=None):
        sizes = path(np.exp(u))
        return (np.log(fit_a.latency_s(*sizes, theta=theta_a) * prices[0])
                - np.log(fit_b.latency_s(*sizes, theta=theta_b) * prices[1]))

    def roots(values, theta_a=None, theta_b=None):
        return [float(np.exp(brent_root(log_ratio, u0, u1, args=(theta_a, theta_b))))
                for u0, u1 in _brackets(values, grid)]

    values = log_ratio(grid)
    found = roots(values)
    x = found[0] if found else None
    low = high = None
    never = np.nan
    if fit_a.draws is not None and fit_b.draws is not None:
        n = min(len(fit_a.draws), len(fit_b.draws))
        draws_a, draws_b = fit_a.draws[:n], fit_b.draws[:n]
        grids = log_ratio(grid, draws_a, draws_b)  # one row per draw
        picked = []
        for r in range(n):
            if not _brackets(grids[r], grid):
                continue
            draw = _grid_roots(grids[r], grid)
            picked.append(min(draw, key=lambda v: abs(np.log(v / x))) if x else draw[0])
        never = 1 - len(picked) / n
        if picked and x is not None:
            tail = 50 * (1 - min(fit_a.level, fit_b.level))
            low, high = (float(v) for v in np.percentile(picked, [tail, 100 - tail]))
    name = lambda v: fit_a.label if v < 0 else fit_b.label  # noqa: E731 - negative log ratio: a is faster
    return Crossover(axis=axis, fixed=dict(fixed), a=fit_a.label, b=fit_b.label, x=x, roots=found, low=low,
                     high=high, never_fraction=float(never),
                     winner_below=name(values[0]) if found else None,
                     winner_above=name(values[-1]) if found else None,
                     winner=None if found else name(values[0]), x_range=(lo, hi), empirical=list(empirical))


def crossover(fit_a: SeriesFit, fit_b: SeriesFit, axis: str = "batch_size", *, d_model: float = 128,
              n_layers: float = 128, batch_size: float = 1, x_range: Optional[tuple] = None,
              prices: tuple = (1.0, 1.0), n_grid: int = 128) -> Crossover:
    """Solve ``log t_a(x) = log t_b(x)`` along ``axis`` on the fitted models, with a bootstrap interval.

    Parameters
    ----------
    fit_a, fit_b : SeriesFit
        Any two series (e.g. the CPU of one machine and the GPU of another).
    axis : {"batch_size", "d_model", "n_layers"}
        The size that varies (continuously); the other two are fixed by the keyword arguments.
    x_range : (float, float), optional
        Where to look; default: the values of ``axis`` measured in either series.
    prices : (float, float)
        Multipliers of each latency (prices per hour give the cost crossover).
    n_grid : int
        See :func:`crossing`.

    Returns
    -------
    Crossover
        With ``empirical``: where the two series' fitted points cross along ``axis`` at ``fixed``.
    """
    if axis not in AXES:
        raise AnalysisError(f"unknown axis {axis!r}; expected one of {AXES}")
    _check_comparable(fit_a, fit_b)
    fixed = dict(d_model=d_model, n_layers=n_layers, batch_size=batch_size)
    fixed.pop(axis)
    if x_range is None:
        values = np.concatenate([fit_a.points[axis], fit_b.points[axis]])
        x_range = (float(values.min()), float(values.max()))

    def path(x):
        return tuple(x if a == axis else fixed[a] for a in AXES)

    measured = empirical_crossover(fit_a.points, fit_b.points, axis, prices=prices, column="latency_s", **fixed)
    return crossing(fit_a, fit_b, path, x_range, axis=axis, fixed=fixed, prices=prices, n_grid=n_grid,
                    empirical=measured)


def fixed_params_crossover(fit_a: SeriesFit, fit_b: SeriesFit, params: float, *, batch_size: float = 1,
                           x_range: tuple, **options) -> Crossover:
    """The crossover along ``d_model`` at a fixed parameter count (``n_layers = params / d_model²``).

    Solved like :func:`crossover` (see :func:`crossing` for ``options``); ``fixed`` holds ``params``
    and ``batch_size``, and ``empirical`` is empty (the measured rows of such a sweep are the
    caller's: :func:`empirical_crossover` of them along ``d_model``).
    """
    return crossing(fit_a, fit_b, lambda d: (d, params / d**2, batch_size), x_range, axis="d_model",
                    fixed=dict(params=params, batch_size=batch_size), **options)


def empirical_crossover(points_a: pd.DataFrame, points_b: pd.DataFrame, axis: str = "batch_size",
                        prices: tuple = (1.0, 1.0), column: str = "median_s", **fixed) -> list:
    """Crossings between measured points: where ``t_a / t_b`` changes sign in log, interpolated
    linearly in log-log between adjacent values of ``axis`` measured in both series.

    Parameters
    ----------
    points_a, points_b : pandas.DataFrame
        Points with the three sizes and ``column``: measured rows (``median_s``, the default, or the
        column of another statistic of :data:`crossover.results.statistics.STATISTICS`), or a fit's
        ``points`` (``column="latency_s"``).
    axis : str
        The swept size.
    prices : (float, float)
        Multipliers of each series' latency.
    **fixed
        The other two sizes (``d_model=128, n_layers=128``, say); only points there count.

    Returns
    -------
    list of float
        The crossings (see :func:`curve_crossings`).
    """
    curves = []
    for points, price in zip((points_a, points_b), prices):
        mask = np.ones(len(points), bool)
        for name, value in fixed.items():
            mask &= points[name].to_numpy() == value
        curves.append(points[mask].groupby(axis)[column].median() * price)
    return curve_crossings(*curves)


def curve_crossings(first: pd.Series, second: pd.Series) -> list:
    """Where two measured curves (Series indexed by the swept size) cross: the values of the index
    where ``first / second`` changes sign in log, interpolated linearly in log-log between adjacent
    values both curves hold (an exact tie counts as a crossing)."""
    joined = pd.concat([first, second], axis=1, join="inner").dropna().sort_index()
    return log_crossings(joined.index.to_numpy(float), joined.iloc[:, 0].to_numpy(float),
                         joined.iloc[:, 1].to_numpy(float))


def crossover_frontier(fit_a: SeriesFit, fit_b: SeriesFit, d_models: Sequence[float], *,
                       n_layers: float = 128, batch_range: Optional[tuple] = None, **options) -> pd.DataFrame:
    """The 2-D frontier: for each ``d_model``, the crossover batch size (with interval).

    Returns
    -------
    pandas.DataFrame
        d_model, n_layers, params (``n_layers * d_model**2``), batch_size (None where the curves do
        not cross in ``batch_range``), low, high, never_fraction, winner_below, winner_above, winner.
    """
    rows = []
    for d in d_models:
        c = crossover(fit_a, fit_b, "batch_size", d_model=d, n_layers=n_layers, x_range=batch_range, **options)
        rows.append(dict(d_model=d, n_layers=n_layers, params=n_layers * d * d, batch_size=c.x, low=c.low,
                         high=c.high, never_fraction=c.never_fraction, winner_below=c.winner_below,
                         winner_above=c.winner_above, winner=c.winner))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------- cost
def cost_per_million_samples(latency_s, batch_size, price_per_hour):
    """Cost of one million samples: ``latency_s / batch_size * 1e6 * price_per_hour / 3600``."""
    per_sample_s = np.asarray(latency_s, float) / np.asarray(batch_size, float)
    return per_sample_s * 1e6 * np.asarray(price_per_hour, float) / 3600


def cost_crossover(fit_a: SeriesFit, fit_b: SeriesFit, price_a_per_hour: float, price_b_per_hour: float,
                   axis: str = "batch_size", **options) -> Crossover:
    """Where the cost per sample of ``a`` and ``b`` meet (see :func:`crossover` for ``options``)."""
    if not (price_a_per_hour > 0 and price_b_per_hour > 0):
        raise AnalysisError("prices per hour must be positive")
    return crossover(fit_a, fit_b, axis, prices=(price_a_per_hour, price_b_per_hour), **options)


# ------------------------------------------------------------------------------------ predict
def reported_series(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the series :func:`predict` reports on: per (machine, device), the series (see
    :data:`crossover.fit.validation.SERIES_KEYS`) with the most distinct sizes (the first of equals).

    Fitting only these answers ``crossover predict`` without fitting every thread count of every
    machine first.
    """
    if frame.empty:
        return frame
    keys = frame[list(SERIES_KEYS)].astype(str).agg("|".join, axis=1)
    sizes = (frame.assign(_key=keys).drop_duplicates(["_key", "d_model", "n_layers", "batch_size"])
             .groupby("_key", sort=False).size())
    best = {}
    for key, count in sizes.items():
        device = tuple(key.split("|")[:2])  # machine, device: the first two series keys
        if device not in best or count > sizes[best[device]]:
            best[device] = key
    return frame[keys.isin(set(best.values())).to_numpy()]


def predict(fits: Mapping[str, SeriesFit], d_model: int, n_layers: int, batch_size: int, *,
            workload: str = "forward", mode: str = "eager", dtype: str = "float32",
            regime: str = "latency", transfer: str = "device", batch_range: Optional[tuple] = None,
            axis: str = "batch_size") -> dict:
    """Predicted latency of one configuration on every fitted device, the winner and the crossover.

    Per (machine, device), the matching series with the most points is used.

    Returns
    -------
    dict
        ``devices``: one object per device with ``device``, ``machine``, ``series``, ``model``,
        ``latency_s``, its confidence interval ``latency_low_s``/``latency_high_s`` (bootstrap of the
        fitted curve), a prediction interval ``prediction_low_s``/``prediction_high_s`` (spread of the
        errors on each size and interior axis value left out: where a new measurement may land), ``cv_mape_pct`` and ``extrapolated``
        (outside the measured range), ``id`` (the series by its fields, :func:`crossover.fit.series_fit.series_id`,
        beside its label ``series``) and ``transfer_s``/``transfer_included`` (see below); ``winner``
        (series label) and ``winner_id``, ``speedup`` (``rival`` latency / winner latency; ``rival``, ``rival_id``: the fastest series
        of the other kind of device, or the runner-up when all are of one kind), and
        ``crossover``: the batch size where the winner and the fastest series of the other kind of
        device (CPU against GPU; the runner-up if all are of one kind) swap, with interval (``None``
        with fewer than two devices). The crossover is along ``axis`` (default ``batch_size``;
        ``d_model`` or ``n_layers`` hold the other two sizes at the given values, named in ``fixed``
        with the axis itself None), searched over ``batch_range`` (any axis; default: the measured
        range); its value is ``at`` (and ``batch_size``, None along another axis). Every series it
        names by label has its ``*_id`` beside. ``crossovers`` lists the same for every pair of a CPU
        series and a GPU series (your own CPU from a quick run against a shipped GPU, say).

        ``transfer`` is the input's placement asked for (a series key: ``device``, the input already
        on the device; ``pageable``/``pinned``, copied from host memory every step). No fit separates
        the host-to-device copy from the step, so each device's ``transfer_s`` (that copy, seconds)
        is None; ``transfer_included`` says whether ``latency_s`` holds the copy (a CUDA series
        measured with ``pageable`` or ``pinned``).
    """
    for name, value in dict(d_model=d_model, n_layers=n_layers, batch_size=batch_size).items():
        if not value > 0:
            raise AnalysisError(f"{name} must be positive, got {value}")
    wanted = dict(workload=workload, mode=mode, dtype=dtype, regime=regime, transfer=transfer)
    chosen = {}
    for fit in fits.values():
        if all(fit.key[k] == v for k, v in wanted.items()):
            device = (fit.key["machine"], fit.key["device"])
            if device not in chosen or len(fit.points) > len(chosen[device].points):
                chosen[device] = fit
    if not chosen:
        available = sorted({tuple(f.key[k] for k in wanted) for f in fits.values()})
        raise AnalysisError(f"no fitted series for {tuple(wanted.values())}; available: {available}")
    config = dict(d_model=d_model, n_layers=n_layers, batch_size=batch_size)
    devices = sorted((_device_prediction(fit, config) for fit in chosen.values()),
                     key=lambda item: item["latency_s"])
    result = dict(config, workload=workload, mode=mode, dtype=dtype, regime=regime, transfer=transfer, along=axis,
                  devices=devices, winner=devices[0]["series"], winner_id=devices[0]["id"], speedup=None,
                  rival=None, rival_id=None,
                  crossover=None, crossovers=[])
    if len(devices) > 1:
        # The comparison that matters is CPU against GPU: the winner against the fastest series of the
        # other kind of device (the runner-up when every series is of one kind), for the speed-up and
        # the crossover alike.
        kind = lambda item: item["device"].split(":")[0]  # noqa: E731
        rival = next((item for item in devices[1:] if kind(item) != kind(devices[0])), devices[1])
        result["speedup"] = rival["latency_s"] / devices[0]["latency_s"]
        result["rival"], result["rival_id"] = rival["series"], rival["id"]

        def solve(a: str, b: str) -> dict:
            c = crossover(fits[a], fits[b], axis, **config, x_range=batch_range)
            return _crossover_entry(c, {label: fits[label].id for label in (a, b)})

        result["crossover"] = solve(devices[0]["series"], rival["series"])
        # Every CPU against every GPU (e.g. your own CPU, from a quick run, against a shipped GPU).
        result["crossovers"] = [
            result["crossover"] if {a["series"], b["series"]} == set(result["crossover"]["between"])
            else solve(a["series"], b["series"])
            for a in devices if kind(a) == "cpu" for b in devices if kind(b) == "cuda"
        ]
    return result


def _device_prediction(fit: SeriesFit, config: dict) -> dict:
    """One entry of :func:`predict`'s ``devices``."""
    low, high = fit.latency_interval_s(**config)
    p_low, p_high = fit.prediction_interval_s(**config)
    copied = fit.key["device"] != "cpu" and fit.key["transfer"] != "device"
    return dict(device=fit.key["device"], machine=fit.key["machine"], series=fit.label, id=fit.id, model=fit.model,
                latency_s=float(fit.latency_s(**config)), latency_low_s=low, latency_high_s=high,
                prediction_low_s=p_low, prediction_high_s=p_high, cv_mape_pct=fit.cv_score(),
                statistic=fit.statistic, extrapolated=not fit.in_range(**config),
                transfer_s=None, transfer_included=copied)


def _crossover_entry(c: Crossover, ids: Mapping[str, dict]) -> dict:
    """A :class:`Crossover` as :func:`predict` (and ``crossover predict --json``) reports it: the same
    keys along every axis (``fixed`` names all three sizes, the axis None; ``batch_size`` and
    ``batch_range`` are None along another axis), each series label with its id (``ids``: label: id)."""
    along_batch = c.axis == "batch_size"
    return dict(between=[c.a, c.b], between_ids=[ids[c.a], ids[c.b]], axis=c.axis, at=c.x, low=c.low, high=c.high,
                never_fraction=c.never_fraction, winner_below=c.winner_below, winner_below_id=ids.get(c.winner_below),
                winner_above=c.winner_above, winner_above_id=ids.get(c.winner_above),
                winner_everywhere=c.winner, winner_everywhere_id=ids.get(c.winner),
                range=list(c.x_range), empirical=c.empirical, fixed={a: c.fixed.get(a) for a in AXES},
                batch_size=c.x if along_batch else None, batch_range=list(c.x_range) if along_batch else None)
