"""Each device's step latency against the batch size, for :func:`crossover.analysis.advice.advise`:
measured where the data hold the point, predicted elsewhere, and said which.

- The toy model (:func:`toy_points`, :func:`toy_curves`): per machine and device the series
  ``crossover predict`` reports on (:func:`crossover.analysis.crossovers.reported_series`), fitted as
  :func:`crossover.decide` fits it. At a measured batch size (at the asked ``d_model`` and
  ``n_layers``) the latency is the measured one (the fitted statistic, default the 10th percentile)
  and its upper end the slowest of the point's rounds (the same statistic per round; on a machine
  measured in paired rounds, the CPU's and GPU's rounds are the same seconds); elsewhere, up to the
  series' largest measured batch, the fit's prediction and the upper end of its prediction interval
  (where a new measurement may land). A CPU's other thread counts measured at those sizes give
  measured-only curves.
- Your own module (:func:`module_curves`): every calibration profile's prediction
  (:func:`crossover.decide` with ``model=``) and the upper end of its interval, each CPU at the thread
  count it was calibrated with.

Batch sizes considered: every integer up to 64, then 16 a doubling (:func:`candidate_batch_sizes`),
and every measured one.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd

from ..errors import AnalysisError

__all__ = ["MODULE_MAX_BATCH", "candidate_batch_sizes", "toy_points", "toy_curves", "profiles_for", "module_curves"]

#: The largest batch size considered for a module (profiles predict any; the toy stops at its data).
MODULE_MAX_BATCH = 1024
#: Every batch size up to this one is considered; above it, :data:`PER_DOUBLING` per doubling.
ALL_UP_TO = 64
PER_DOUBLING = 16


def candidate_batch_sizes(max_batch_size: int, include: Sequence[int] = ()) -> np.ndarray:
    """The batch sizes considered up to ``max_batch_size``: every integer to :data:`ALL_UP_TO`, then
    :data:`PER_DOUBLING` a doubling (rounded), ``max_batch_size`` itself and ``include`` (measured
    sizes) within it; sorted, unique."""
    top = int(max_batch_size)
    if top < 1:
        raise AnalysisError(f"the largest batch size must be at least 1, got {max_batch_size}")
    sizes = set(range(1, min(top, ALL_UP_TO) + 1)) | {top}
    if top > ALL_UP_TO:
        steps = int(np.ceil(np.log2(top / ALL_UP_TO) * PER_DOUBLING))
        sizes |= {int(round(b)) for b in np.geomspace(ALL_UP_TO, top, steps + 1)}
    sizes |= {int(b) for b in include if 1 <= b <= top}
    return np.array(sorted(sizes), dtype=int)


# ------------------------------------------------------------------------------------------- toy
def toy_points(results=None, *, d_model: int, n_layers: int, workload: str = "forward", mode: str = "eager",
               dtype: str = "float32", machine: Optional[str] = None) -> tuple:
    """The measured points that answer for the toy (raw repeats kept), and the results paths.

    Every size of the matching series (the fits need them all), in the latency regime with the input
    on the device; only series that measured (``d_model``, ``n_layers``) at some batch size.

    Raises
    ------
    AnalysisError
        No series measured those sizes (naming what was asked).
    """
    from ..results.columns import SERIES_KEYS
    from ..shipped_data import shipped_results_dir
    from .decision import load_points

    paths = [str(p) for p in (results or [shipped_results_dir()])]
    only = {"machine": machine} if machine else {}
    frame = load_points(paths, workload=workload, mode=mode, dtype=dtype, regime="latency", transfer="device", **only)
    here = frame[(frame["d_model"] == d_model) & (frame["n_layers"] == n_layers)]
    if here.empty:
        raise AnalysisError(f"no series in {', '.join(paths)} measured d_model={d_model}, n_layers={n_layers} "
                            f"({workload}, {mode}, {dtype}); advise answers for measured sizes of the toy (or a module)")
    keys = list(SERIES_KEYS)
    wanted = set(map(tuple, here[keys].astype(str).to_numpy()))
    keep = [tuple(row) in wanted for row in frame[keys].astype(str).to_numpy()]
    return frame[np.asarray(keep, bool)], paths


def _round_spread(paths, frame: pd.DataFrame, d_model: int, n_layers: int, statistic: str) -> pd.DataFrame:
    """Per series and batch size at (``d_model``, ``n_layers``): the statistic of each round's repeats,
    its lowest and highest over the rounds (``round_low_s``, ``round_high_s``) and ``n_rounds``."""
    from ..results.columns import SERIES_KEYS
    from ..results.statistics import statistic_named
    from ..results.store import load_results

    quantile = statistic_named(statistic).quantile
    rounds = load_results(paths, raw=True, combine_rounds=False)
    rounds = rounds[(rounds["d_model"] == d_model) & (rounds["n_layers"] == n_layers) & (rounds["status"] == "ok")]
    keys = list(SERIES_KEYS)
    series = set(map(tuple, frame[keys].astype(str).to_numpy()))
    rounds = rounds[[tuple(r) in series for r in rounds[keys].astype(str).to_numpy()]]
    if rounds.empty:
        return pd.DataFrame(columns=["_key", "batch_size", "round_low_s", "round_high_s", "n_rounds"])
    values = [float(np.quantile(np.asarray(raw, float), quantile)) if raw is not None and len(raw) else np.nan
              for raw in rounds["raw_times_s"]]
    rounds = rounds.assign(_value=values, _key=rounds[keys].astype(str).agg("|".join, axis=1))
    out = rounds.groupby(["_key", "batch_size"])["_value"].agg(["min", "max", "count"]).reset_index()
    return out.rename(columns={"min": "round_low_s", "max": "round_high_s", "count": "n_rounds"})


def _key(row_or_dict) -> str:
    from ..results.columns import SERIES_KEYS

    return "|".join(str(row_or_dict[k]) for k in SERIES_KEYS)


def _measured(points: pd.DataFrame, spread: pd.DataFrame, key: str, single_round: float = 1.0) -> pd.DataFrame:
    """The measured batch sizes of one series (``points``: d_model, n_layers, batch_size, latency_s at the
    asked sizes) with each one's upper end: its slowest round, or for a point of one round its latency
    times ``single_round`` (see :func:`_single_round_factors`)."""
    rows = spread[spread["_key"] == key].set_index("batch_size")
    out = points.groupby("batch_size", as_index=False)["latency_s"].median().sort_values("batch_size")
    latency = out["latency_s"].to_numpy(float)
    n_rounds = rows["n_rounds"].reindex(out["batch_size"]).fillna(1).astype(int).to_numpy()
    high = rows["round_high_s"].reindex(out["batch_size"]).to_numpy(float)
    high = np.where(n_rounds >= 2, np.nan_to_num(high, nan=0.0), latency * single_round)
    out["latency_high_s"] = np.fmax(high, latency)
    out["n_rounds"] = n_rounds
    return out


def _single_round_factors(here: pd.DataFrame, spread: pd.DataFrame) -> dict:
    """(machine, device) → the median of (slowest round / latency) over its points measured in two
    rounds or more: the upper end given to a point of one round (no spread of its own)."""
    keyed = here[["machine", "device", "batch_size", "latency_s"]].assign(_key=[_key(row) for _, row in here.iterrows()])
    keyed = keyed.groupby(["_key", "machine", "device", "batch_size"], as_index=False)["latency_s"].median()  # one per size
    merged = keyed.merge(spread, on=["_key", "batch_size"])
    merged = merged[merged["n_rounds"] >= 2]
    if merged.empty:
        return {}
    ratio = (merged["round_high_s"] / merged["latency_s"]).groupby([merged["machine"], merged["device"]]).median()
    return {key: max(1.0, float(value)) for key, value in ratio.items()}


def _paired_machines(frame: pd.DataFrame) -> set:
    """Machines whose CPU and GPU were measured in the same (paired) rounds: rows with a ``sequence``
    (the paired protocol) on both kinds of device."""
    if "sequence" not in frame:
        return set()
    rows = frame[frame["sequence"].notna()]
    kinds = rows.assign(_gpu=rows["device"].astype(str) != "cpu").groupby("machine")["_gpu"].agg(["any", "all"])
    return set(kinds.index[kinds["any"] & ~kinds["all"]])


def _rounds_text(measured: pd.DataFrame, paired: bool, single_round: float = 1.0) -> str:
    """How many rounds each measured point has, and what its upper end is, in words."""
    lo, hi = int(measured["n_rounds"].min()), int(measured["n_rounds"].max())
    count = f"{lo}" if lo == hi else f"{lo}-{hi}"
    kind = "paired CPU/GPU round" if paired else "round"
    text = f"{count} {kind}{'' if hi == 1 else 's'} each"
    if hi > 1:
        text += ", high: the slowest round"
    if lo == 1:
        text += f"{'; a point of one round' if hi > 1 else ':'} no spread of its own, high = latency" + (
            f" x {single_round:.2f} (the median slowest round / latency of this device's points of several rounds)"
            if single_round > 1 else "")
    return text


def _predicted_high(fit, d_model, n_layers, grid, latency_s) -> tuple:
    """The upper end of a fit's interval at ``grid``: its prediction interval (errors of each size
    left out), else its bootstrap interval, else the prediction itself; and what it is, in words."""
    tail = 50 * (1 - fit.level)
    if len(fit.cv_log_errors):
        factor = float(np.exp(np.percentile(fit.cv_log_errors, 100 - tail)))
        return latency_s * max(factor, 1.0), f"the upper end of its {fit.level:.0%} prediction interval"
    if fit.draws is not None:
        draws = np.asarray(fit.latency_s(d_model, n_layers, grid, draws=True), float)
        return np.percentile(draws, 100 - tail, axis=0), f"the upper end of its {fit.level:.0%} bootstrap interval"
    return latency_s, "no interval"


def toy_curves(frame: pd.DataFrame, paths, *, d_model: int, n_layers: int, statistic: str, models=None,
               n_boot: int = 100, seed: int = 0, progress: Optional[Callable] = None,
               max_batch_size: Optional[int] = None) -> tuple:
    """The toy's latency curves at (``d_model``, ``n_layers``): ``(curves, warnings)``.

    ``frame`` and ``paths`` are :func:`toy_points`'. Each curve is a dict of the fields of
    :class:`crossover.analysis.advice.LatencyCurve` but its price (``machine``, ``device``, ``threads``,
    ``batch_size``, ``latency_s``, ``latency_high_s``, ``source``, ``cores``: as its results'
    environment records them, ``how``).
    """
    from ..results.drift import mixed_speed_warnings
    from ..results.prices import machine_cores
    from ..results.statistics import STATISTICS, with_latency
    from ..fit.series_fit import one_row_per_size
    from .crossovers import reported_series
    from .decision import fit_for_decision

    reported = reported_series(frame)
    warnings = list(mixed_speed_warnings(reported))
    fits = fit_for_decision(reported, models, n_boot=n_boot, seed=seed, statistic=statistic, progress=progress)
    spread = _round_spread(paths, frame, d_model, n_layers, statistic)
    cores = machine_cores(frame["results_dir"].unique())
    paired = _paired_machines(frame)
    what = STATISTICS[statistic].label
    here = with_latency(frame[(frame["d_model"] == d_model) & (frame["n_layers"] == n_layers)], statistic)
    factors = _single_round_factors(here, spread)
    curves, fitted = [], set()
    for fit in fits.values():
        key = _key(fit.key)
        points = fit.points[(fit.points["d_model"] == d_model) & (fit.points["n_layers"] == n_layers)]
        if points.empty:
            continue
        fitted.add(key)
        factor = factors.get((fit.key["machine"], fit.key["device"]), 1.0)
        measured = _measured(points, spread, key, factor)
        top = int(max_batch_size or fit.points["batch_size"].max())
        grid = candidate_batch_sizes(top, measured["batch_size"])
        predicted = np.asarray(fit.latency_s(d_model, n_layers, grid.astype(float)), float)
        high, interval = _predicted_high(fit, d_model, n_layers, grid.astype(float), predicted)
        at = measured.set_index("batch_size")
        is_measured = np.isin(grid, at.index)
        t = np.where(is_measured, at["latency_s"].reindex(grid).to_numpy(float), predicted)
        t_high = np.where(is_measured, at["latency_high_s"].reindex(grid).to_numpy(float), high)
        how = (f"measured at batch {', '.join(map(str, measured['batch_size']))} ({what}; "
               f"{_rounds_text(measured, fit.key['machine'] in paired, factor)}); predicted elsewhere up to batch {top} by its "
               f"fit ({fit.model}, high: {interval})")
        curves.append(_curve(fit.key, grid, t, t_high, ["measured" if m else "predicted" for m in is_measured],
                             cores, how))
    # a CPU's other thread counts: what was measured at these sizes (one value per size, as a fit
    # reads it), and nothing else
    for key, series in here.groupby([_key(row) for _, row in here.iterrows()], sort=True):
        if key in fitted:
            continue
        first = series.iloc[0]
        factor = factors.get((first["machine"], first["device"]), 1.0)
        measured = _measured(one_row_per_size(series), spread, key, factor)
        if max_batch_size:
            measured = measured[measured["batch_size"] <= max_batch_size]
        if measured.empty:
            continue
        how = (f"measured at batch {', '.join(map(str, measured['batch_size']))} only ({what}; "
               f"{_rounds_text(measured, first['machine'] in paired, factor)})")
        curves.append(_curve(first, measured["batch_size"].to_numpy(), measured["latency_s"].to_numpy(),
                             measured["latency_high_s"].to_numpy(), "measured", cores, how))
    return curves, warnings


def _curve(key, batch_size, latency_s, latency_high_s, source, cores: dict, how: str) -> dict:
    device = str(key["device"])
    threads = key["threads"]
    threads = int(threads) if device == "cpu" and threads is not None and not pd.isna(threads) and threads > 0 else None
    return dict(machine=str(key["machine"]), device=device, threads=threads, batch_size=batch_size,
                latency_s=latency_s, latency_high_s=latency_high_s, source=source, cores=cores.get(str(key["machine"])),
                how=how)


# ----------------------------------------------------------------------------------------- module
def _shown(path) -> str:
    """``path`` relative to the working directory where it lies beneath it (for text), else as given."""
    import os

    relative = os.path.relpath(str(path))
    return str(path) if relative.startswith("..") else relative


def profiles_for(profiles=None, *, machine: Optional[str] = None) -> list:
    """The calibration profiles to answer from (default: the shipped ones), only ``machine``'s if given.

    Raises
    ------
    AnalysisError
        No profile of ``machine``.
    """
    from ..opcost.profiles import load_profiles

    loaded = load_profiles(profiles)
    if machine:
        loaded = [p for p in loaded if p.machine == machine]
        if not loaded:
            raise AnalysisError(f"no calibration profile of machine {machine}")
    return loaded


def module_curves(model, input_shape, profiles: list, *, workload: str = "forward", input_dtype=None,
                  max_batch_size: int = MODULE_MAX_BATCH) -> tuple:
    """A module's predicted latency curve on every profile: ``(curves, warnings, about)``, each curve a
    dict as :func:`toy_curves` gives them, ``about`` naming the model, its input dtype and the
    profiles' paths."""
    from .decision import decide

    if input_shape is None:
        raise AnalysisError("a module's advice needs input_shape (one sample's shape, e.g. (3, 32, 32))")
    grid = candidate_batch_sizes(max_batch_size)
    decision = decide(model=model, input_shape=input_shape, batch_size=[int(b) for b in grid], workload=workload,
                      input_dtype=input_dtype, profiles=profiles)
    frame = decision.frame
    curves = []
    for profile in profiles:
        rows = frame[frame["profile"] == profile.label].sort_values("batch_size")
        env = (profile.meta or {}).get("environment") or {}
        cores = env.get("cpu_logical_cores")
        how = (f"predicted from the calibration profile {_shown(profile.path) if profile.path else profile.label} (op by "
               "op; high: the upper end of its interval)")
        curves.append(dict(machine=profile.machine, device=profile.device,
                           threads=int(profile.threads) if profile.device == "cpu" and profile.threads else None,
                           batch_size=rows["batch_size"].to_numpy(), latency_s=rows["latency_s"].to_numpy(),
                           latency_high_s=rows["latency_high_s"].to_numpy(), source="predicted",
                           cores=cores if isinstance(cores, int) and cores > 0 else None, how=how))
    about = dict(model=decision.payload["model"], input_dtype=decision.payload["input_dtype"],
                 profiles=decision.payload["profiles"])
    return curves, list(decision.warnings), about
