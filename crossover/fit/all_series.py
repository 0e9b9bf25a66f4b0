"""Fitting every series of a results frame: one :func:`crossover.fit.series_fit.fit_series` per
series, from the fit cache where it holds one, in parallel processes where several series need
fitting and the machine has cores for them.

The processes are the one pool of :func:`fitting_pool`: a caller that knows it will fit (``crossover
predict`` with the cache off) opens the block before loading its data, so the processes start and
import what fitting imports on first use meanwhile; :func:`fit_results` (and the paper's prefetched
fits, :func:`crossover.analysis.reference_study.prefetching`) use the enclosing block's pool, or open
one for their own fits.
"""

from __future__ import annotations

import contextlib
import inspect
from concurrent.futures import ProcessPoolExecutor
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from . import cache as fit_cache
from ..errors import AnalysisError
from ..results.columns import SERIES_KEYS
from ..results.statistics import DEFAULT_STATISTIC
from .series_fit import Fits, _labels, _series_key, fit_costs, fit_series, series_id, series_seed
from .validation import check_frame

__all__ = ["fit_results", "default_jobs", "fitting_pool", "finish_refits", "REFITS_PER_TASK"]


def default_jobs() -> int:
    """Processes :func:`fit_results` fits in by default: the cores this process may use."""
    from ..measurement.procfs import usable_cores

    return max(1, usable_cores())


#: The pool of the enclosing :func:`fitting_pool` block (empty outside one).
_POOL: list = []


def _warm_up() -> None:
    """In a fitting process: import what fitting imports on first use (LAPACK's SVD for the least
    squares, ``expit`` for the models), while the parent still loads the data."""
    import importlib

    for module in ("scipy.linalg", "scipy.special"):
        importlib.import_module(module)


@contextlib.contextmanager
def fitting_pool(jobs: Optional[int] = None):
    """A block whose series fits run in one pool of processes, started at its opening.

    Parameters
    ----------
    jobs : int, optional
        Processes (default :func:`default_jobs`); below two, no pool: the fits are made one after
        another in this process. Inside another block, that block's pool is used.

    Yields
    ------
    concurrent.futures.ProcessPoolExecutor or None
        The pool :func:`fit_results` submits to inside the block (None: no pool).
    """
    jobs = default_jobs() if jobs is None else jobs
    if _POOL or jobs < 2:
        yield _POOL[-1] if _POOL else None
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for _ in range(jobs):  # starts every process now; each imports while the caller goes on
            pool.submit(_warm_up)
        _POOL.append(pool)
        try:
            yield pool
        finally:
            _POOL.remove(pool)


def _on_fit(bar, label, rows, models, planning, later):
    """:func:`fit_series`' ``on_fit`` for :func:`fit_results`' bar: one step per fit; once the model is
    chosen, the plan of what is left holds its bootstrap's real cost, then the ``later`` series'."""
    def on_fit(stage, model):
        bar.update(f"{label}: {stage} {model}")
        if stage == "fit":
            costs = fit_costs(rows, models, **planning, chosen=model)
            left = len(costs) - len(fit_costs(rows, models, **dict(planning, n_boot=0, refits=False), chosen=model))
            bar.replan(costs[len(costs) - left:] + later)
    return on_fit


#: Bootstrap resamples refitted in one task of the pool: four tasks for the default 100, so one long
#: series' refits are shared out among the processes instead of keeping one busy alone at the end.
REFITS_PER_TASK = 25


def _fit_one(task):
    rows, models, label, seed, options = task
    return fit_series(rows, models, label=label, seed=seed, **options)


def _refit(refits):
    return refits.run()


def finish_refits(fit, draws):
    """``fit`` (of :func:`crossover.fit.series_fit.fit_series` with ``defer_refits=True``) with the
    ``draws`` its pending refits gave (their :meth:`crossover.fit.bootstrap.Refits.run`, in order), stored
    in the fit cache."""
    refits, key = fit.pending_refits
    if len(draws) != len(refits.latencies):
        raise AnalysisError(f"{fit.label}: {len(draws)} bootstrap draws for {len(refits.latencies)} resamples")
    fit.draws, fit.pending_refits = np.asarray(draws), None
    if key:
        fit_cache.store(key, fit)
    return fit


def _fit_in_parallel(fits, todo, cached, missing, models, seed, options, bar, plans, planning, jobs) -> None:
    """Fill ``fits`` in ``todo``'s order: the ``cached`` ones as found, the ``missing`` ones fitted in
    ``jobs`` processes (the bar advances by a series' planned fits when it is done).

    The series start longest first (by their planned fits, :func:`fit_costs`): a long series started
    last keeps one process busy alone at the end (on two cores, the H100's host series, started third,
    made cold ``predict`` 0.2 s slower). A series bootstrapped over rounds comes back with its resamples
    drawn (``defer_refits``); their refits go to the pool in tasks of :data:`REFITS_PER_TASK`, after the
    series not yet started, and the draws are the same as one process's."""
    from concurrent.futures import FIRST_COMPLETED, wait

    planned = dict(zip([label for label, _ in todo], plans)) if plans else {}
    cost = {label: sum(planned[label] if label in planned else fit_costs(rows, models, **planning))
            for label, rows in missing}
    order = sorted(missing, key=lambda item: -cost[item[0]])
    deferred = dict(options, defer_refits=True)
    with fitting_pool(min(jobs, len(order))) as pool:  # the enclosing block's pool, else one for these
        running = {pool.submit(_fit_one, (rows, models, label, series_seed(label, seed), deferred)): (label, None)
                   for label, rows in order}
        done, pieces = {}, {}
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                label, index = running.pop(future)
                if index is None:  # a series fitted: its refits still to make, or none
                    fit = future.result()
                    if fit.pending_refits is None:
                        done[label] = fit
                        continue
                    done[label], parts = fit, fit.pending_refits[0].pieces(REFITS_PER_TASK)
                    pieces[label] = [None] * len(parts)
                    running.update({pool.submit(_refit, part): (label, i) for i, part in enumerate(parts)})
                else:
                    pieces[label][index] = future.result()
                    if all(piece is not None for piece in pieces[label]):
                        finish_refits(done[label], np.concatenate(pieces.pop(label)))
    for i, (label, _) in enumerate(todo):
        fits[label] = cached.get(label) or done[label]
        if bar is not None:
            bar.update(label, count=len(plans[i]))


def fit_results(frame: pd.DataFrame, models: Optional[Sequence[str]] = None, *, min_points: int = 8,
                progress=None, seed: int = 0, jobs: Optional[int] = None, **options) -> Fits:
    """Fit every series of a results frame.

    Parameters
    ----------
    frame : pandas.DataFrame
        Results (``load_results(..., raw=True)``), any number of series.
    models : sequence of str
        Candidate models, see :func:`fit_series`.
    min_points : int
        Series with fewer points are left out and listed in ``Fits.skipped``.
    progress : callable, optional
        ``progress(costs)`` returns a bar (:func:`crossover.progress.progress_bar` makes one): called
        once with the expected cost of every least-squares fit planned (:func:`fit_costs` of each
        series, in order). The bar's ``update(text)`` is called after each fit, its
        ``replan(costs)`` with the costs left whenever the plan changes (a series found in the
        cache needs no fit; a series' chosen model sets its bootstrap's cost), ``close()`` at the end.
    seed : int
        Each series' bootstrap is seeded with :func:`series_seed` of its label and ``seed``: the
        same draws as :func:`fit_series` of that series alone.
    jobs : int, optional
        Processes to fit in (default :func:`default_jobs`): the series the cache does not hold are
        fitted in parallel when there are two or more (the same fits as one after another; the
        progress bar then moves a series at a time).
    **options
        Passed to :func:`fit_series` (``statistic``, ``n_boot``, ``axes``, ...).

    Returns
    -------
    Fits
    """
    frame = check_frame(frame, options.get("statistic", DEFAULT_STATISTIC))  # each fit_series rereads it
    keys = [_series_key(row) for _, row in frame[list(SERIES_KEYS)].iterrows()]
    frame = frame.assign(_key=keys)
    unique = list(dict.fromkeys(keys))
    fits, fits.skipped, fits.skipped_ids = Fits(), {}, {}
    todo = []
    for key, label in zip(unique, _labels(unique)):
        rows = frame[frame["_key"] == key].drop(columns="_key")
        if len(rows) < min_points:
            fits.skipped[label] = f"{len(rows)} points (< {min_points})"
            fits.skipped_ids[label] = series_id(dict(zip(SERIES_KEYS, key)))
        else:
            todo.append((label, rows))
    defaults = {k: v.default for k, v in inspect.signature(fit_series).parameters.items()}
    planning = {k: options.get(k, defaults[k]) for k in ("axes", "n_boot", "max_held_out_fraction", "statistic")}
    plans = [fit_costs(rows, models, **planning) for _, rows in todo] if progress else []
    bar = progress([c for plan in plans for c in plan]) if progress else None
    jobs = default_jobs() if jobs is None else jobs
    cached = {label: fit_series(rows, models, label=label, seed=series_seed(label, seed), only_cached=True, **options)
              for label, rows in todo} if jobs > 1 and fit_cache.enabled() else {}  # nothing to find with it off
    missing = [(label, rows) for label, rows in todo if cached.get(label) is None]
    try:
        if jobs > 1 and len(missing) > 1:
            _fit_in_parallel(fits, todo, cached, missing, models, seed, options, bar, plans, planning, jobs)
            todo = []
        for i, (label, rows) in enumerate(todo):
            later = [c for plan in plans[i + 1:] for c in plan]
            if cached.get(label) is not None:  # found in the cache above: not looked up twice
                fits[label] = cached[label]
                if bar is not None:
                    bar.replan(later)
                continue
            on_fit = _on_fit(bar, label, rows, models, planning, later) if bar is not None else None
            fits[label] = fit_series(rows, models, label=label, seed=series_seed(label, seed), on_fit=on_fit,
                                     **options)
            if bar is not None:
                bar.replan(later)  # whatever was not done (a fit found in the cache) leaves the plan
    finally:
        if bar is not None:
            bar.close()
    if not fits:
        raise AnalysisError(f"no series has {min_points} or more points to fit ({fits.skipped})")
    return fits
