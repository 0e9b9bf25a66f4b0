"""Fitting a latency model to each series: model choice, parameters and their bootstrap intervals.

A *series* is the set of rows sharing :data:`SERIES_KEYS` (one machine's device in one
workload/mode/dtype/regime/transfer/thread setting); every series gets its own fit
(:func:`fit_series`, or :func:`crossover.fit.all_series.fit_results` for every series of a results frame). A fit reads each
point's latency from one statistic (:mod:`crossover.results.statistics`, the 10th percentile by default)
into ``latency_s``, cross-validates the candidate models (:mod:`crossover.fit.validation`), keeps the
one with the lowest held-out error on interior folds (:func:`crossover.fit.validation.selection_score`)
and bootstraps its parameters.

Parameter intervals come from a bootstrap: by default (``auto``) over whole rounds where the series
was measured in six rounds or more, else over the fit's residuals (:func:`scipy.stats.bootstrap`:
each point's measured time is replaced by the fitted time times a log residual drawn with
replacement from all points' residuals, and the model refitted). The residuals hold everything the
model does not explain: drift between runs and rounds on a shared machine as well as misfit, which
on real machines is far larger than the noise within one measurement. ``bootstrap="repeats"``
resamples each point's raw repeats instead (the statistic retaken, model refitted): intervals that
reflect only the noise within a run, and are much narrower. ``bootstrap="rounds"`` resamples whole
rounds (:func:`crossover.fit.bootstrap.round_draws`): a shared machine's slow spell moves every point
of a round together, which the residuals' bootstrap treats as independent moves. On the three shipped
paired runs (the H200's two, the H100's) the fitted crossover at d_model=128, n_layers=128 holds the
paired rounds' median in 5 of 6 (run × statistic p10/median) with it, 1 of 6 with the residuals' (the
miss: the H100 at p10, whose fit puts the crossover at 106 against a paired 118). The
cross-validation error remains the
honest measure of how far a prediction for an unmeasured size may be off. A parameter the data do
not pin down is marked (``identified`` in :meth:`SeriesFit.parameters`).

The bootstrap's random draws are seeded by the series' label (:func:`series_seed`), so every entry
point (``crossover fit``/``predict``, the figures, the paper's numbers, the notebook) that fits the
same rows of a series on the same statistic quotes the same interval.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from . import cache as fit_cache
from .calibrated_model import profile_digest, resolve_calibration
from ..axes import BYTES_PER_ELEMENT
from ..errors import AnalysisError
from .latency_models import (AXES, CALIBRATED_MODELS, MODELS, PARAMS, default_models, evaluate, features,
                             fit_parameters, model_parameters, upper_bounds)
from .latency_models import initial_guesses  # how many starts a fit tries: its cost, for the ETA
from .bootstrap import BOOTSTRAPS, DEFAULT_BOOTSTRAP, Refits, bootstrap_draws, resolve_bootstrap, round_latencies
from ..results.statistics import DEFAULT_STATISTIC, statistic_named
from .validation import (SERIES_KEYS, candidate_models, check_frame, cv_folds, cv_summary, frame_features,
                         heldout_predictions, interior_log_errors, leave_one_out_log_errors, model_features,
                         remembered_held_out_predictions, selection_score, split_heldout)

__all__ = ["SERIES_KEYS", "SeriesFit", "Fits", "fit_series", "one_row_per_size", "series_seed",
           "series_id", "fit_costs"]


def series_seed(label: str, seed: int = 0) -> tuple:
    """The bootstrap seed of the series called ``label``: ``(seed, crc32(label))``.

    Derived from the label, not from a series' position among others, so the same series gets the
    same draws whichever other series are fitted beside it.

    Examples
    --------
    >>> series_seed("my-vm/cpu")
    (0, 1461308366)
    """
    return (seed, zlib.crc32(label.encode()))


def series_id(key) -> dict:
    """A series named by its fields: every one of :data:`SERIES_KEYS`, always all present.

    The label (``machine/device [threads=16]``) names a series among those fitted beside it and
    changes with them; this does not. ``threads`` is None where the rows record none (-1 in a
    :attr:`SeriesFit.key`); numpy scalars become Python ones.

    Examples
    --------
    >>> series_id(dict(machine="vm", device="cpu", workload="forward", mode="eager", dtype="float32",
    ...                regime="latency", transfer="device", threads=-1))["threads"] is None
    True
    """
    out = {}
    for name in SERIES_KEYS:
        value = key.get(name)
        value = value.item() if hasattr(value, "item") else value
        if name == "threads" and (value is None or value == -1 or value != value):
            value = None
        out[name] = int(value) if name == "threads" and value is not None else value
    return out


def one_row_per_size(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (d_model, n_layers, batch_size) of a series.

    A size measured by two sweeps (the anchor in the batch sweep and again in the threads sweep,
    say) gets the median of their ``latency_s``, pooled ``raw_times_s`` and the mean
    ``latency_deviation``; other columns from the first. Each size then counts once in a fit, its CV
    folds and the plotted curves. ``frame`` holds ``latency_s`` (see
    :func:`crossover.results.statistics.with_latency`).
    """
    keys = list(AXES)
    repeated = frame.duplicated(keys, keep=False)
    if not repeated.any():
        return frame
    out = frame.drop_duplicates(keys, keep="first").copy()  # each size's first row, in order of appearance
    where = {key: i for i, key in enumerate(out[keys].itertuples(index=False, name=None))}
    columns = {c: out[c].to_numpy(dtype=object if c in ("raw_times_s", "round_raw_s") else None, copy=True)
               for c in ("latency_s", "raw_times_s", "round_raw_s", "latency_deviation") if c in out}
    for key, group in frame[repeated].groupby(keys, sort=False):  # only the sizes measured more than once
        i = where[key if isinstance(key, tuple) else (key,)]  # its row's position (set column by column below)
        columns["latency_s"][i] = float(group["latency_s"].median())
        if "raw_times_s" in group:
            columns["raw_times_s"][i] = tuple(v for raw in group["raw_times_s"] for v in raw)
        if "round_raw_s" in group:  # a round's repeats of both sweeps belong to that round
            columns["round_raw_s"][i] = tuple(pair for pairs in group["round_raw_s"] if isinstance(pairs, tuple)
                                              for pair in pairs)
        if "latency_deviation" in group:
            columns["latency_deviation"][i] = float(group["latency_deviation"].mean())
    out = out.reset_index(drop=True)
    for column, values in columns.items():
        out[column] = values
    return out


def _series_key(row) -> tuple:
    return tuple(-1 if k == "threads" and pd.isna(row[k]) else row[k] for k in SERIES_KEYS)


# -------------------------------------------------------------------------------------- fits
@dataclass
class SeriesFit:
    """One series' fitted latency model, its bootstrap draws and its cross-validated accuracy."""

    key: dict
    label: str
    model: str
    params: np.ndarray  # SI units, in the order of model_parameters(model)
    draws: Optional[np.ndarray]  # bootstrap parameter draws, (n_boot, n_params), or None
    level: float
    workload: str
    bytes_per_element: int
    points: pd.DataFrame  # d_model, n_layers, batch_size, latency_s (of `statistic`) of the fitted points
    cv: pd.DataFrame = field(default_factory=pd.DataFrame)  # accuracy per (model, axis)
    cv_log_errors: np.ndarray = field(default_factory=lambda: np.empty(0))  # log(measured / predicted), left out
    bootstrap: str = "residuals"  # what the draws resampled: "residuals", "repeats" or "rounds"
    noise_floor_pct: float = np.nan  # mean |one round / combined value - 1| (%), points with >= 2 rounds
    noise_floor_points: int = 0  # how many points that mean is over
    statistic: str = DEFAULT_STATISTIC  # what each point's latency is (see crossover.results.statistics)
    heldout: pd.DataFrame = field(default_factory=pd.DataFrame)  # predictions of held-out sizes (never fitted)
    peaks: dict = field(default_factory=dict)  # the device's peaks that bounded the fit (crossover.fit.peaks)
    calibration: Optional[object] = None  # the Profile the "calibrated" model costs steps on (crossover.fit.calibrated_model)
    # (Refits, cache key) of a fit whose rounds bootstrap is drawn but not refitted (fit_series(...,
    # defer_refits=True)): draws is None until finish_refits
    pending_refits: Optional[tuple] = field(default=None, repr=False, compare=False)

    def latency_s(self, d_model, n_layers, batch_size, draws: bool = False, theta=None) -> np.ndarray:
        """Predicted seconds per step; with ``draws=True`` one row per bootstrap draw.

        ``theta`` overrides the parameters (SI units, one row per parameter set).
        """
        calibration = self.calibration if self.model in CALIBRATED_MODELS else None
        X = features(d_model, n_layers, batch_size, self.workload, self.bytes_per_element,
                     calibration=calibration, dtype=str(self.key.get("dtype", "float32")))
        if draws and self.draws is None:
            raise AnalysisError(f"{self.label}: fitted without bootstrap draws (n_boot=0)")
        if theta is None:
            theta = self.draws if draws else self.params
        return evaluate(self.model, theta, X)

    def latency_interval_s(self, d_model, n_layers, batch_size) -> tuple:
        """(low, high) percentile interval of the predicted latency at ``level``; NaN without draws."""
        if self.draws is None:
            return np.nan, np.nan
        values = self.latency_s(d_model, n_layers, batch_size, draws=True)
        tail = 50 * (1 - self.level)
        return tuple(float(np.percentile(values, q)) for q in (tail, 100 - tail))

    def prediction_interval_s(self, d_model, n_layers, batch_size) -> tuple:
        """(low, high) where a new measurement may fall: the prediction scaled by the ``level``
        percentiles of ``cv_log_errors`` (each size, and each interior axis value, left out; NaN without
        them). Within the fitted run's conditions: a later run on a shared machine moves by its noise floor too."""
        if not len(self.cv_log_errors):
            return np.nan, np.nan
        tail = 50 * (1 - self.level)
        value = float(self.latency_s(d_model, n_layers, batch_size))
        return tuple(value * float(np.exp(np.percentile(self.cv_log_errors, q))) for q in (tail, 100 - tail))

    def parameters(self) -> pd.DataFrame:
        """Parameters in display units with their bootstrap interval (percentile, ``level``).

        ``at_bound`` is True where the estimate lies within 5% of the bound the fit searches within
        (``PARAMS``, lowered to the device's peak where one bounds the parameter: a rate pressed against
        the peak is the fit wanting more than the device can give); ``identified`` is False then, also
        where the interval spans more than two decades, and where no resample moved it (``flat``: the
        data do not depend on it, e.g. a warm size above the cache that caps it). The data do not pin
        such a parameter down (a per-step overhead too small to matter, a compute rate of launch-bound
        points): its value and interval mean nothing physical.
        """
        rows = []
        upper = upper_bounds(self.model, self.peaks)  # a rate held at the device's peak is on a bound too
        for i, name in enumerate(model_parameters(self.model)):
            spec = PARAMS[name]
            low = high = np.nan
            if self.draws is not None:
                tail = 50 * (1 - self.level)
                low, high = np.percentile(self.draws[:, i], [tail, 100 - tail]) * spec.scale
            value = self.params[i]
            at_bound = bool(abs(np.log(value / spec.lo)) < 0.05 or abs(np.log(upper.get(name, spec.hi) / value)) < 0.05)
            wide = bool(np.isfinite(low) and np.isfinite(high) and low > 0 and high / low > 100)
            flat = bool(self.draws is not None and len(self.draws) > 1 and np.ptp(self.draws[:, i]) <= 1e-9 * abs(value))
            rows.append(dict(series=self.label, model=self.model, param=name, label=spec.label,
                             unit=spec.unit, value=value * spec.scale, low=low, high=high, at_bound=at_bound,
                             flat=flat, identified=not (at_bound or wide or flat)))
        return pd.DataFrame(rows)

    @property
    def id(self) -> dict:
        """The series named by its fields (:func:`series_id`), whichever series are fitted beside it."""
        return series_id(self.key)

    def heldout_summary(self) -> dict:
        """Accuracy on the held-out sizes (:func:`split_heldout`): ``n``, ``median_abs_pct``,
        ``worst_abs_pct``, ``within_10_pct`` (NaN when there are none)."""
        errors = np.abs(self.heldout["rel_error"].to_numpy(dtype=float)) if len(self.heldout) else np.empty(0)
        if not len(errors):
            return dict(n=0, median_abs_pct=np.nan, worst_abs_pct=np.nan, within_10_pct=np.nan)
        return dict(n=len(errors), median_abs_pct=100 * float(np.median(errors)),
                    worst_abs_pct=100 * float(errors.max()), within_10_pct=100 * float((errors <= 0.10).mean()))

    def cv_score(self) -> float:
        """Mean over held-out axes of the chosen model's CV MAPE (%), NaN if not cross-validated."""
        rows = self.cv[self.cv["model"] == self.model] if len(self.cv) else self.cv
        return float(rows["mape_pct"].mean()) if len(rows) else np.nan

    def in_range(self, **config) -> bool:
        """Whether each given axis value lies within the measured range of this series."""
        return all(self.points[a].min() <= v <= self.points[a].max() for a, v in config.items())


def fit_series(frame: pd.DataFrame, models: Optional[Sequence[str]] = None, *, axes: Sequence[str] = AXES,
               n_boot: int = 200, level: float = 0.95, seed=None, loss: str = "soft_l1",
               f_scale: float = 0.1, max_held_out_fraction: float = 0.5,
               label: Optional[str] = None, bootstrap: str = DEFAULT_BOOTSTRAP,
               statistic: str = DEFAULT_STATISTIC, cache: bool = True, on_fit=None,
               peaks="auto", calibration="auto", only_cached: bool = False,
               defer_refits: bool = False) -> Optional[SeriesFit]:
    """Fit one series: cross-validate each model, keep the best, bootstrap its parameters.

    A fit is computed once and reused (:mod:`crossover.fit.cache`): the same rows, options and
    fitting code give the stored :class:`SeriesFit` back, so ``crossover predict``, the figures, the
    paper's numbers and the notebook share their fits (``cache=False`` or ``CROSSOVER_NO_CACHE=1``
    recompute).

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of one series (``load_results(..., raw=True)``; without ``raw_times_s`` there is no
        sampling noise to resample and intervals collapse to the point estimate).
    models : sequence of str
        Candidates (default: :func:`crossover.fit.latency_models.default_models` of the series' device);
        the lowest :func:`crossover.fit.validation.selection_score` wins (with a
        single candidate, CV is still computed for the report; ``axes=()`` skips it).
    n_boot : int
        Bootstrap resamples (0: no intervals).
    bootstrap : {"auto", "residuals", "repeats", "rounds"}
        What is resampled: the fit's log residuals across points (covers model misfit; treats each
        point's drift as independent), each point's raw repeats (only the noise within a
        measurement), whole rounds (rows need ``round_raw_s``: ``load_results(..., raw=True)``), or
        ``auto`` (default): whole rounds where the series has
        :data:`crossover.fit.bootstrap.MIN_BOOTSTRAP_ROUNDS` or more, else the residuals. The fit
        records which it used.
    level : float
        Confidence level of the percentile intervals.
    seed : optional
        Seed of the bootstrap's generator (anything :func:`numpy.random.default_rng` takes); default
        :func:`series_seed` of the label, so the series' draws do not depend on who fits it.
    loss, f_scale
        Robust loss on log residuals, see :func:`scipy.optimize.least_squares`.
    max_held_out_fraction : float
        See :func:`crossover.fit.validation.cv_splits`.
    label : str, optional
        Name of the series (default ``machine/device``).
    statistic : {"p10", "median", "min"}
        Each point's latency (see :data:`crossover.results.statistics.STATISTICS`): the 10th percentile of
        its pooled repeats (default; the quiet machine), the median of its rounds' medians, or the
        fastest repeat. ``points`` (its ``latency_s``), the noise floor and the predictions are then
        of that statistic.
    on_fit : callable, optional
        ``on_fit(stage, model)`` after each least-squares fit (``stage``: ``"cv"`` for a fold,
        ``"fit"`` for the chosen model's fit, ``"bootstrap"`` for a resample): a progress bar (see
        :func:`fit_costs`). Not called for a fit taken from the cache; no part of the cache key.
    peaks : "auto", dict or None
        The device's peaks (SI): no fitted rate or bandwidth goes above the peak that bounds it
        (:func:`crossover.fit.latency_models.upper_bounds`). ``"auto"`` (default): the rows' own
        (:func:`crossover.fit.peaks.peaks_of_rows`: the ``peaks.json`` beside their results, else the
        device's spec sheet), so every entry point bounds a series alike; None: only
        :data:`crossover.fit.latency_models.PARAMS`' wide bounds. Kept as ``SeriesFit.peaks``.
    calibration : "auto", Profile or None
        The device's calibration profile, which makes the ``calibrated`` model a candidate (a CPU
        series only). ``"auto"`` (default): :func:`crossover.fit.calibrated_model.calibration_for_rows` (the
        run's own ``calibration/``, else a shipped one of the rows' machine), looked up only where
        ``models`` is the default or names ``calibrated``; None: none.
        Kept as ``SeriesFit.calibration``.
    only_cached : bool
        Return the fit only if the cache holds it, else None (nothing is fitted).
    defer_refits : bool
        With the ``rounds`` bootstrap, draw the resamples but leave their refits undone: the fit comes
        back without ``draws`` and with ``pending_refits``, whose refits can be made in pieces in other
        processes, then handed to :func:`crossover.fit.all_series.finish_refits` (which stores the fit in
        the cache). The draws
        are the same as without. Not part of the cache key.

    Returns
    -------
    SeriesFit
    """
    frame = check_frame(frame, statistic)
    keys = {k: v for k, v in zip(SERIES_KEYS, _series_key(frame.iloc[0]))}
    if len({_series_key(row) for _, row in frame.iterrows()}) > 1:
        raise AnalysisError("fit_series needs the rows of one series; use crossover.fit.all_series.fit_results for several")
    if isinstance(peaks, str) and peaks == "auto":
        from .peaks import peaks_of_rows

        peaks = peaks_of_rows(frame)
    calibration = resolve_calibration(calibration, frame) if models is None or set(CALIBRATED_MODELS) & set(models) else None
    frame, heldout = split_heldout(frame)
    frame = one_row_per_size(frame)
    models = default_models(keys["device"], calibration is not None) if models is None else models
    if not models:
        raise AnalysisError(f"no candidate models; expected some of {list(MODELS)}")
    for m in models:
        model_parameters(m)
    if bootstrap not in BOOTSTRAPS:
        raise AnalysisError(f"unknown bootstrap {bootstrap!r}; expected one of {', '.join(BOOTSTRAPS)}")
    bootstrap = resolve_bootstrap(bootstrap, frame)
    label = label or f"{keys['machine']}/{keys['device']}"
    seed = series_seed(label) if seed is None else seed
    options = dict(models=tuple(models), axes=tuple(axes), n_boot=n_boot, level=level, seed=seed, loss=loss,
                   f_scale=f_scale, max_held_out_fraction=max_held_out_fraction, label=label, bootstrap=bootstrap,
                   statistic=statistic, peaks=_peak_values(peaks))
    digest = profile_digest(calibration) if set(CALIBRATED_MODELS) & set(models) else ""
    key = fit_cache.key_of(frame, keys, dict(options, calibration=digest)) if cache and fit_cache.enabled() else None
    fit = fit_cache.load(key) if key else None
    if fit is None and only_cached:
        return None
    if fit is None:
        fit = _fit_series(frame, keys, **options, on_fit=on_fit, defer_refits=defer_refits,
                          calibration=calibration if set(CALIBRATED_MODELS) & set(models) else None)
        if fit.pending_refits is not None:
            fit.pending_refits = (fit.pending_refits, key)
        elif key:
            fit_cache.store(key, fit)
    fit.peaks = dict(peaks or {})
    fit.heldout = heldout_predictions(fit, one_row_per_size(heldout) if len(heldout) else heldout)
    return fit


def fit_costs(frame: pd.DataFrame, models: Optional[Sequence[str]] = None, *, axes: Sequence[str] = AXES,
              n_boot: int = 200, max_held_out_fraction: float = 0.5, statistic: str = DEFAULT_STATISTIC,
              chosen: Optional[str] = None, refits: bool = True) -> list:
    """The least-squares fits :func:`fit_series` runs on the rows of one series, in order, each as its
    expected cost (for an ETA): every CV fold of every candidate (:func:`crossover.fit.validation.cv_folds`),
    the chosen model's fit, then its refits leaving out one size at a time, then its ``n_boot``
    bootstrap refits.

    A fit's cost is its parameters times the starts it tries (a refit starts once, from the fit).
    Before cross-validation the chosen model is unknown: the mean over the candidates stands in for
    it unless ``chosen`` names it; ``refits=False`` leaves out the leave-one-size-out refits.
    Arguments as in :func:`fit_series`.

    Returns
    -------
    list of float
        One cost per fit: as many as ``fit_series`` reports to its ``on_fit``.
    """
    checked = check_frame(frame, statistic)
    frame = one_row_per_size(split_heldout(checked)[0])
    X, t = frame_features(frame), frame["latency_s"].to_numpy()
    models = candidate_models(checked) if models is None else models

    def cost(model, starts=None):
        n_starts = len(initial_guesses(model, X, t)) if starts is None else starts
        return float(len(model_parameters(model)) * n_starts)

    costs = [cost(m, 1) for m in models for _ in cv_folds(frame, m, axes, max_held_out_fraction)]  # one start each
    final = [chosen] if chosen else list(models)
    costs.append(float(np.mean([cost(m) for m in final])))
    costs += [float(np.mean([cost(m, 1) for m in final]))] * ((len(frame) if refits else 0) + n_boot)
    return costs


def _peak_values(peaks: Optional[dict]) -> dict:
    """The numeric entries of ``peaks`` (what bounds a fit, so part of its cache key), sorted."""
    return {k: float(v) for k, v in sorted((peaks or {}).items()) if isinstance(v, (int, float))}


def impossible_parameters(model: str, theta, peaks: Optional[dict]) -> list:
    """The parameters of ``model`` fitted at ``theta`` (SI units) that no device can have: above the
    device's measured peak, or an out-of-cache bandwidth above the same fit's in-cache one
    (:func:`crossover.fit.peaks.check_parameters`). A model whose fit needs them is not chosen while a
    physical candidate remains: on the H100's paired GPU series, grouped CV scored such a fit best and it
    missed a held-out size by 238%."""
    from .peaks import check_parameters

    table = pd.DataFrame([dict(param=name, value=float(theta[i]) * PARAMS[name].scale, identified=True)
                          for i, name in enumerate(model_parameters(model))])
    checked = check_parameters(table, peaks or {})
    return list(checked.loc[checked["above_peak"], "param"])


def _fit_series(frame, keys, *, models, axes, n_boot, level, seed, loss, f_scale, max_held_out_fraction, label,
                bootstrap, statistic, peaks, on_fit=None, calibration=None, defer_refits=False) -> SeriesFit:
    """:func:`fit_series` on checked rows, one per size, without the cache."""
    t = frame["latency_s"].to_numpy()
    tell = on_fit or (lambda stage, model: None)
    deviations = frame["latency_deviation"].dropna()
    predictions = [remembered_held_out_predictions(frame, m, axes, loss=loss, f_scale=f_scale, max_held_out_fraction=max_held_out_fraction,
                             peaks=peaks, on_fit=lambda m=m: tell("cv", m), calibration=calibration) for m in models]
    cv = cv_summary(pd.concat(predictions + [pd.DataFrame()]))
    scores = {m: selection_score(cv, m) for m in models}
    scored = sorted((m for m in models if np.isfinite(scores[m])), key=scores.get) or [models[0]]
    fitted = {}
    for model in scored:  # the best score whose fit is physical; the best one if none is
        X = model_features(frame, model, calibration)
        fitted[model] = X, fit_parameters(model, X, t, loss=loss, f_scale=f_scale, peaks=peaks)
        tell("fit", model)
        if not impossible_parameters(model, fitted[model][1], peaks):
            break
    else:
        model = scored[0]
    X, theta = fitted[model]
    log_errors = np.concatenate([leave_one_out_log_errors(model, X, t, theta, loss=loss, f_scale=f_scale, peaks=peaks,
                                                          on_fit=lambda: tell("loo", model)),
                                 interior_log_errors(predictions[list(models).index(model)])])
    draws = pending = None
    if n_boot > 0:
        rng, quantile = np.random.default_rng(seed), statistic_named(statistic).quantile
        if defer_refits and bootstrap == "rounds":
            pending = Refits(model, theta, X, round_latencies(frame, t, quantile, n_boot=n_boot, rng=rng), loss, f_scale,
                             peaks)
        else:
            draws = bootstrap_draws(model, theta, frame, X, t, bootstrap, quantile, n_boot=n_boot, level=level, rng=rng,
                                    loss=loss, f_scale=f_scale, peaks=peaks, on_refit=lambda: tell("bootstrap", model))
    return SeriesFit(pending_refits=pending, key=keys, label=label, model=model,
                     params=theta, draws=draws, level=level, workload=keys["workload"],
                     bytes_per_element=BYTES_PER_ELEMENT.get(keys["dtype"], 4), bootstrap=bootstrap,
                     noise_floor_pct=100 * float(deviations.mean()) if len(deviations) else np.nan,
                     noise_floor_points=len(deviations), statistic=statistic,
                     points=frame[list(AXES) + ["latency_s"]].reset_index(drop=True), cv=cv,
                     cv_log_errors=log_errors, calibration=calibration if model in CALIBRATED_MODELS else None)


class Fits(dict):
    """Fitted series by label (see :func:`crossover.fit.all_series.fit_results`), with the skipped ones in ``skipped`` (label:
    reason) and ``skipped_ids`` (label: :func:`series_id`)."""

    skipped: dict
    skipped_ids: dict

    def parameters(self) -> pd.DataFrame:
        """Every series' parameters with units and intervals."""
        return pd.concat([f.parameters() for f in self.values()], ignore_index=True)

    def accuracy(self) -> pd.DataFrame:
        """Every series' grouped-CV accuracy per (model, held-out axis); ``chosen`` marks the model used."""
        frames = [f.cv.assign(series=f.label, chosen=f.cv["model"] == f.model) for f in self.values()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _labels(keys: list) -> list:
    """``machine/device``, plus the key fields that tell apart series of the same machine and device."""
    labels = []
    for key in keys:
        same = [k for k in keys if k[:2] == key[:2]]
        extra = [f"{name}={value}" for i, (name, value) in enumerate(zip(SERIES_KEYS, key))
                 if i >= 2 and len({k[i] for k in same}) > 1]
        labels.append(f"{key[0]}/{key[1]}" + (f" [{', '.join(extra)}]" if extra else ""))
    return labels
