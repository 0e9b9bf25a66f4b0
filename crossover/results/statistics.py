"""What a point's latency is: the statistics a fit can read, and how a point's rounds combine.

One home for the idea. A point is measured in several rounds of many repeats each; its latency can
be summarised in more than one way, and each way needs the same handful of facts wherever it is
used: the column of the combined results that holds it, the column holding its noise floor, the
quantile of the raw repeats it is (for the bootstrap over repeats) and the words that name it. They
are the rows of :data:`STATISTICS`:

==========  =============  ======================  ========  ====================================
name        column         noise floor column      quantile  what it is
==========  =============  ======================  ========  ====================================
``median``  ``median_s``   ``round_deviation``     0.5       the median of the rounds' medians
``p10``     ``p10_s``      ``p10_round_deviation`` 0.1       the 10th percentile of the pooled
                                                             repeats (the default)
``min``     ``min_s``      ``min_round_deviation`` 0.0       the fastest repeat
==========  =============  ======================  ========  ====================================

:func:`combine_rounds_of` (what :func:`crossover.load_results` runs) writes those columns;
:func:`with_latency` reads the chosen one into the neutral columns ``latency_s`` and
``latency_deviation`` that every fit reads, so a fit's points never carry a minimum under the name
median. Pure computation, no file I/O.

Why the 10th percentile by default: ``experiments/bench_protocol.py`` (three runs) and ``crossover
noise`` (one) on the 2-core VM measured 8 sizes in 3 independent windows each, in many short
shuffled rounds. Averaged over the four experiments, one window's estimate lay 8.5% from the mean
over windows for the 10th percentile of the pooled repeats (6.6% on compute-bound sizes), 8.2% for
the fastest repeat (5.5%) and 10.5% for the median of the rounds (9.2%); the fastest repeat's worst
size was far worse (36% against 23%), and the median won two of the four (docs/measuring.md, "Noisy
machines"; logs in ``experiments/results/amd-epyc-2c/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .columns import COLUMN_TYPES, KEY_COLUMNS, REFERENCE_SWEEP, WARNING_SEPARATOR
from ..errors import AnalysisError

if TYPE_CHECKING:  # numpy and pandas load on use: the CLI reads the table while building --help
    import pandas as pd

__all__ = ["attach_references", "Statistic", "STATISTICS", "DEFAULT_STATISTIC", "QUIET_QUANTILE", "DRIFT_LIMIT", "quiet_level",
           "drift_ratio", "is_drifted", "statistic_named",
           "with_latency", "combine_rounds_of"]

#: The quantile of a point's pooled repeats that ``p10_s`` reports, and of a run's drift-reference
#: readings that is its quiet level (:func:`quiet_level`).
QUIET_QUANTILE = 0.10
#: A reading is drifted when it lies more than this far above its quiet level (:func:`is_drifted`).
DRIFT_LIMIT = 1.25


def quiet_level(values) -> float:
    """The quiet level of repeated readings: their :data:`QUIET_QUANTILE` quantile (NaN when empty).

    The one definition of "the machine when quiet" for drift references, calibrations and noise
    windows alike.
    """
    import numpy as np

    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(np.quantile(values, QUIET_QUANTILE)) if values.size else float("nan")


def drift_ratio(values, quiet: float = None):
    """Each reading over the quiet level (:func:`quiet_level` of ``values`` unless ``quiet`` is given)."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    return values / (quiet_level(values) if quiet is None else quiet)


def is_drifted(ratio):
    """Whether a drift ratio (a reading over its quiet level) lies above :data:`DRIFT_LIMIT`: the one
    drift rule (rows, calibration rounds and noise windows are left out or flagged by it)."""
    import numpy as np

    return np.asarray(ratio, dtype=float) > DRIFT_LIMIT


@dataclass(frozen=True)
class Statistic:
    """One way of summarising a point's repeats into its latency.

    Attributes
    ----------
    name : str
        Its key in :data:`STATISTICS` (what ``statistic=`` and ``--statistic`` take).
    column : str
        The column of the combined results holding it (see :func:`combine_rounds_of`).
    noise_column : str
        The column holding its noise floor: mean of ``|one round's value / the combined value - 1|``.
    quantile : float
        The quantile of a point's raw repeats it is (what the bootstrap over repeats retakes).
    label : str
        What a latency is, e.g. "10th percentile of the repeats" (``latency = <label>``).
    round_label : str
        What one round's value is called ("one round's <round_label> lies x% from ...").
    combined_label : str
        What the combined value is ("... lies x% from <combined_label>").
    """

    name: str
    column: str
    noise_column: str
    quantile: float
    label: str
    round_label: str
    combined_label: str


#: Statistic name -> :class:`Statistic`: every latency a fit can read.
STATISTICS = {s.name: s for s in (
    Statistic("median", "median_s", "round_deviation", 0.5, "median of the rounds", "median",
              "the median of its rounds' medians"),
    Statistic("p10", "p10_s", "p10_round_deviation", QUIET_QUANTILE, "10th percentile of the repeats",
              "10th percentile", "the 10th percentile of its pooled repeats"),
    Statistic("min", "min_s", "min_round_deviation", 0.0, "fastest repeat", "fastest repeat",
              "the fastest over its rounds"),
)}
#: The statistic a fit reads unless told otherwise (the evidence is in the module docstring).
DEFAULT_STATISTIC = "p10"


def statistic_named(name: str) -> Statistic:
    """The :class:`Statistic` called ``name``.

    Raises
    ------
    AnalysisError
        For a name not in :data:`STATISTICS`.
    """
    if name not in STATISTICS:
        raise AnalysisError(f"unknown statistic {name!r}; expected one of {list(STATISTICS)}")
    return STATISTICS[name]


def with_latency(frame: pd.DataFrame, statistic: str = DEFAULT_STATISTIC) -> pd.DataFrame:
    """``frame`` with ``latency_s`` and ``latency_deviation`` read from ``statistic``'s columns.

    Parameters
    ----------
    frame : pandas.DataFrame
        Results as :func:`crossover.load_results` returns them (rounds combined).
    statistic : str
        A name in :data:`STATISTICS`.

    Returns
    -------
    pandas.DataFrame
        A copy with ``latency_s`` (the statistic's column) and ``latency_deviation`` (its noise floor
        column, NaN where the frame lacks it); the measured columns are left as they are.

    Raises
    ------
    AnalysisError
        Unknown statistic, or a frame without its column.
    """
    spec = statistic_named(statistic)
    if spec.column == "median_s":
        if spec.column not in frame:  # a measured column: every results frame has it
            raise AnalysisError("results lack the columns ['median_s']")
    elif spec.column not in frame or not frame[spec.column].notna().any():  # e.g. rounds not combined
        raise AnalysisError(f"results lack {spec.column} (statistic {statistic!r}): load them with "
                            "crossover.load_results, which combines rounds")
    noise = frame[spec.noise_column] if spec.noise_column in frame else float("nan")
    return frame.assign(latency_s=frame[spec.column], latency_deviation=noise)


# ---------------------------------------------------------------------------- combining rounds
#: Statistics combined across rounds by their median.
_ROUND_MEDIAN_COLUMNS = (
    "median_s", "iqr_s", "q1_s", "q3_s", "mean_s", "median_ci_low_s", "median_ci_high_s",
    "device_median_s", "ops_per_step", "kernels_per_step", "device_busy_s", "compile_s", "setup_s",
    "other_cpu_cores", "cpu_utilisation", "steal_fraction", "reference_s", "drift",
)
#: The columns :func:`combine_rounds_of` adds.
_ADDED_COLUMNS = ("n_rounds", "round_spread", "round_deviation", "p10_s", "p10_round_deviation",
                  "min_round_deviation", "round_raw_s")


def combine_rounds_of(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per point from rows of several rounds.

    Rounds measure the same point minutes apart, in shuffled order, so a slow spell of a shared
    machine hits one round of a point rather than a run of neighbouring points.

    Parameters
    ----------
    frame : pandas.DataFrame
        Per-round rows (``load_results(..., combine_rounds=False)``, with ``raw_times_s`` as tuples
        and ``results_dir``).

    Returns
    -------
    pandas.DataFrame
        One row per point (its configuration and results directory; drift-reference rows stay apart
        from a point of the same size). The row takes the median over rounds of each statistic
        (``median_s`` is the median of the rounds' medians), the minimum ``min_s``, the summed
        ``n_repeats``, the pooled ``raw_times_s``, and adds ``n_rounds``, ``round_spread`` (max/min of
        the rounds' medians minus 1: how much the machine drifted between rounds) and
        ``round_deviation`` (mean of ``|round median / median_s - 1|``: how far one round's
        measurement typically lies from the combined one, the noise floor a latency model's error is
        judged against); ``busy`` is 1 when any round ran on a busy machine and ``drifted`` counts
        the rounds whose drift reference sat above :data:`crossover.results.statistics.DRIFT_LIMIT`. It also adds
        ``p10_s``, the 10th percentile of the pooled repeats (the latency when the shared machine is
        quiet; see :data:`QUIET_QUANTILE`), ``p10_round_deviation``, the same noise floor for it
        (mean of ``|one round's 10th percentile / p10_s - 1|``), and ``min_round_deviation`` (mean of
        ``|one round's fastest repeat / min_s - 1|``). Skipped rows are kept once.
    """
    import numpy as np
    import pandas as pd

    if frame.empty:
        out = frame.drop(columns=["round"]).copy()
        for column in _ADDED_COLUMNS:
            out[column] = pd.Series(dtype="int64" if column == "n_rounds" else "float64")
        return out
    # A point is its configuration: the sweeps that measured it do not split it, but drift-reference
    # rows stay apart from a point of the same size.
    key = [c for c in KEY_COLUMNS if c not in ("round", "sweep")] + ["results_dir"]
    frame = frame.assign(_reference=frame["sweep"] == REFERENCE_SWEEP).reset_index(drop=True)
    frame["_group"] = frame.groupby(key + ["_reference"], sort=False, dropna=False).ngroup()
    columns = [c for c in frame.columns if c not in ("round", "_reference", "_group")] + list(_ADDED_COLUMNS)
    ok = frame[frame["status"] == "ok"]
    combined = _combined_rows(ok)
    unmeasured = frame[~frame["_group"].isin(ok["_group"])].drop_duplicates("_group").set_index("_group")
    unmeasured = unmeasured.assign(n_rounds=0, **{c: np.nan for c in _ADDED_COLUMNS if c != "n_rounds"})
    combined = pd.concat([combined, unmeasured]).sort_index()  # groups in order of first appearance
    combined = combined.drop(columns=["round", "_reference"], errors="ignore").reindex(columns=columns)
    for column, kind in COLUMN_TYPES.items():
        if column in combined and kind is int:
            combined[column] = combined[column].astype("int64")
        elif column in combined and kind == "optional int":
            combined[column] = combined[column].astype("Int64")
    return combined.reset_index(drop=True)


def _combined_rows(ok: pd.DataFrame) -> pd.DataFrame:
    """The combined rows of the measured rounds ``ok`` (column ``_group``: the point), indexed by the
    group (see :func:`combine_rounds_of`). Vectorised over the points: loading results runs it on
    every call of the CLI."""
    import numpy as np
    import pandas as pd

    grouped = ok.groupby("_group", sort=False)
    out = ok.drop_duplicates("_group").set_index("_group")
    medians = [c for c in _ROUND_MEDIAN_COLUMNS if c in ok]
    out[medians] = grouped[medians].median()  # NaN rounds left out; NaN when every round is NaN
    out["min_s"] = grouped["min_s"].min()
    repeats = grouped["n_repeats"].agg(lambda v: int(v.sum()) if v.notna().all() else pd.NA)
    out["n_repeats"] = repeats
    n = grouped.size()
    out["n_rounds"] = n
    spread = grouped["median_s"].max() / grouped["median_s"].min() - 1
    out["round_spread"] = spread.where(n > 1, 0.0)
    combined_median = out["median_s"].reindex(ok["_group"]).to_numpy()
    deviation = pd.Series(np.abs(ok["median_s"].to_numpy() / combined_median - 1), index=ok.index)
    out["round_deviation"] = deviation.groupby(ok["_group"]).mean().where(n > 1)
    combined_min = out["min_s"].reindex(ok["_group"]).to_numpy()
    min_deviation = pd.Series(np.abs(ok["min_s"].to_numpy() / combined_min - 1), index=ok.index)
    out["min_round_deviation"] = min_deviation.groupby(ok["_group"]).mean().where(n > 1)
    raw = {}
    for group, times in zip(ok["_group"].to_numpy(), ok["raw_times_s"]):
        raw.setdefault(group, []).append(times)
    out["raw_times_s"] = pd.Series({g: tuple(v for t in rounds for v in t) for g, rounds in raw.items()})
    by_round = {}  # each round's repeats, by round of its run: what a bootstrap over rounds resamples
    runs = ok["results_dir"].astype(str).to_numpy() if "results_dir" in ok else [""] * len(ok)
    for group, run, round_, times in zip(ok["_group"].to_numpy(), runs, ok["round"].to_numpy(), ok["raw_times_s"]):
        by_round.setdefault(group, []).append((f"{run}#{int(round_)}", tuple(times)))
    out["round_raw_s"] = pd.Series({g: tuple(pairs) for g, pairs in by_round.items()})
    per_round = _round_quantiles(raw)
    quiet = {g: _quiet_latency(rounds, out.at[g, "median_s"], per_round[g]) for g, rounds in raw.items()}
    out["p10_s"] = pd.Series({g: q[0] for g, q in quiet.items()})
    out["p10_round_deviation"] = pd.Series({g: q[1] for g, q in quiet.items()})
    out["warnings"] = grouped["warnings"].agg(lambda w: WARNING_SEPARATOR.join(sorted({x for x in w if x})))
    if "busy" in ok:
        out["busy"] = grouped["busy"].max()
    if "drifted" in ok:
        out["drifted"] = grouped["drifted"].sum().astype(int)  # rounds measured during a slow spell
    return out


def _round_quantiles(raw: dict) -> dict:
    """Each point's rounds' :data:`QUIET_QUANTILE` quantiles (``raw``: point -> its rounds' repeats; the
    rounds without repeats left out), as ``np.quantile`` of each round gives them: computed along the
    rows of one array per number of repeats (a quantile along an axis is each row's, bit for bit),
    not once per round (thousands of calls, a fifth of a second of every command that loads results)."""
    import numpy as np

    rows: dict = {}  # number of repeats -> [(point, position, repeats)]
    for group, rounds in raw.items():
        for position, times in enumerate(times for times in rounds if len(times)):
            rows.setdefault(len(times), []).append((group, position, times))
    found: dict = {group: {} for group in raw}
    for items in rows.values():
        values = np.quantile(np.array([times for _, _, times in items], dtype=float), QUIET_QUANTILE, axis=1)
        for (group, position, _), value in zip(items, values):
            found[group][position] = value
    return {group: [by_position[i] for i in range(len(by_position))] for group, by_position in found.items()}


def _quiet_latency(rounds_raw: pd.Series, median_s: float, per_round: list) -> tuple:
    """(``p10_s``, ``p10_round_deviation``) of one point from its rounds' raw repeats.

    On a shared machine a slow spell (a neighbour on the same cores or caches, a launch path that
    drifts between runs) lengthens every repeat of a round, so the median of a round carries it; the
    low tail of the repeats pooled over rounds is set by the rounds measured while the machine was
    quiet, and repeats itself from run to run far better (Chen & Revels, "Robust benchmarking in
    noisy environments", 2016, argue for the minimum; a low quantile keeps some robustness to a
    single lucky repeat; with fewer than ten repeats pooled it is the fastest one). Without raw
    repeats the point's ``median_s`` stands in. ``per_round``: each round's quantile
    (:func:`_round_quantiles`).
    """
    import numpy as np

    pooled = np.array([v for times in rounds_raw for v in times], dtype=float)
    if not len(pooled):
        return float(median_s), np.nan
    quiet = quiet_level(pooled)
    per_round = np.array(per_round)
    deviation = float(np.mean(np.abs(per_round / quiet - 1))) if len(per_round) > 1 else np.nan
    return quiet, deviation


def attach_references(frame: pd.DataFrame) -> pd.DataFrame:
    """Add each row's drift-reference reading to a frame of per-round rows.

    A run that measures a reference point per device (``sweep == "reference"``) at the start of
    every round tracks the machine's state through the run. Each row gets ``reference_s``, the
    median of the latest reference measurement of its device before it (same results directory and
    machine; rows in measuring order, by timestamp, then run and ``sequence``), ``drift``: that
    reading over the run's quiet level (the 10th percentile of all its readings of that device), and
    ``drifted``: ``drift > DRIFT_LIMIT``. Rows without a reference before them (older runs) get NaN
    and ``drifted`` False.
    """
    import numpy as np

    frame = frame.copy()
    frame["reference_s"] = np.nan
    frame["drift"] = np.nan
    frame["drifted"] = False
    if frame.empty:
        return frame
    is_ref = (frame["sweep"] == REFERENCE_SWEEP) & (frame["status"] == "ok")
    if not is_ref.any():
        return frame
    order = frame.assign(_seq=frame["sequence"].astype("Float64").fillna(-1.0))
    order = order.sort_values(["timestamp_utc", "run_id", "_seq"], kind="stable")
    for _, group in order.groupby(["results_dir", "machine", "device"], sort=False, dropna=False):
        readings = group["median_s"].where(is_ref.loc[group.index])
        if readings.notna().sum() == 0:
            continue
        floor = quiet_level(readings.dropna())
        latest = readings.ffill()
        frame.loc[group.index, "reference_s"] = latest.to_numpy()
        frame.loc[group.index, "drift"] = (latest / floor).to_numpy()
    frame["drifted"] = is_drifted(frame["drift"])
    return frame
