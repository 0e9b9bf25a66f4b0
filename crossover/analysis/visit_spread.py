"""How much one machine kind's steps move between visits, against how much its calibration moves.

The shipped zoo sets (:mod:`crossover.analysis.zoo_runs`) hold several visits to the same machine kind
(the H100's three nodes, the H200's two). A prediction made from one visit's calibration can be no better
on that visit's zoo than the zoo's own steps are reproducible where the calibration is not: this module
sets each measured point beside the same point on the machine's other visits (:func:`point_spread`) and
each calibration reference step beside its other visits (:func:`reference_spread`). Both read files and
are cheap (no tracing, no prediction); the ratios are pure.

Example::

    from crossover.analysis.zoo_runs import read_zoo_sets
    from crossover.analysis.visit_spread import zoo_visits, point_spread, reference_spread
    sets = read_zoo_sets()
    print(point_spread(zoo_visits(sets, "cuda")))
    print(reference_spread(sets, "cuda"))

The same question within one machine, between sittings: the 2-core VM's ``experiments/bench_zoo.py``
tables, each a quick calibration and the zoo measured in the same rounds, hold one sitting's prediction
and measurement of every zoo point. :func:`sitting_spread` asks how far a point's measurement moves
between sittings and whether the same sitting's prediction moves with it (:func:`read_sittings` reads
the tables).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pandas as pd

__all__ = ["zoo_visits", "point_spread", "reference_spread", "REFERENCE_FAMILY", "read_sittings", "sitting_spread",
           "sitting_levels", "SITTINGS_PATTERN"]

#: The calibration's reference model steps (an MLP and a CNN, forward and training, two batch sizes each):
#: the rows of ``calibration.csv.gz`` every CUDA plan has measured.
REFERENCE_FAMILY = "model"

_POINT = ["machine", "model", "workload", "device", "threads", "batch_size"]


def zoo_visits(sets: Sequence, device: str) -> pd.DataFrame:
    """Every measured ``device`` point of every zoo set: :func:`crossover.analysis.zoo_runs.read_measurements`'
    columns with ``machine`` and ``visit`` (the set's name), in the sets' order. Sets whose folder is
    missing are left out."""
    from .zoo_runs import read_measurements

    frames = []
    for zoo_set in sets:
        if not Path(zoo_set.zoo).is_dir():
            continue
        measured = read_measurements(zoo_set.zoo)
        if measured.empty:
            continue
        measured = measured[measured["device"] == device]
        frames.append(measured.assign(machine=zoo_set.machine, visit=zoo_set.name))
    if not frames:
        return pd.DataFrame(columns=_POINT + ["visit", "measured_s"])
    return pd.concat(frames, ignore_index=True)


def _ratios(frame: pd.DataFrame, keys: list, value: str) -> pd.DataFrame:
    """Per ``keys`` with at least two visits: ``visits`` (sorted by name), ``values_s`` (their values),
    ``low_s``, ``high_s`` and ``ratio`` (high / low)."""
    rows = []
    for key, group in frame.groupby(keys, sort=False, dropna=False):
        group = group.sort_values("visit", kind="stable")  # visits in their names' order (run1, run2, ...)
        values = group[value].astype(float).tolist()
        if len(values) < 2:
            continue
        rows.append(dict(zip(keys, key if isinstance(key, tuple) else (key,)), visits=tuple(group["visit"]),
                         values_s=tuple(values), low_s=min(values), high_s=max(values),
                         ratio=max(values) / min(values)))
    return pd.DataFrame(rows, columns=keys + ["visits", "values_s", "low_s", "high_s", "ratio"])


def point_spread(visits: pd.DataFrame) -> pd.DataFrame:
    """Per machine, model, workload, device, threads and batch size measured on two visits or more: the
    visits, their latencies (``values_s``), ``low_s``, ``high_s`` and ``ratio`` = high / low."""
    frame = visits.assign(threads=visits["threads"].fillna(-1)) if "threads" in visits else visits.assign(threads=-1)
    return _ratios(frame, _POINT, "measured_s")


def reference_spread(sets: Sequence, device: str, family: str = REFERENCE_FAMILY) -> pd.DataFrame:
    """Per machine and calibration row key of ``family`` measured on two visits or more: each visit's
    quiet level of the rounds' medians (:data:`crossover.results.statistics.QUIET_QUANTILE`), ``low_s``,
    ``high_s`` and ``ratio``. A visit counts once per machine (sets sharing a calibration, such as one
    visit's 16- and 1-thread zoos, are not counted twice); a set without a ``device`` profile is left out."""
    from ..opcost.profiles import CALIBRATION_CSV, PROFILE_NAME
    from ..results.statistics import QUIET_QUANTILE

    frames, seen = [], set()
    for zoo_set in sets:
        for folder in zoo_set.profiles:
            folder = Path(folder)
            if not (folder / CALIBRATION_CSV).is_file() or folder in seen:
                continue
            if json.loads((folder / PROFILE_NAME).read_text()).get("device") != device:
                continue
            seen.add(folder)
            rows = pd.read_csv(folder / CALIBRATION_CSV, usecols=["family", "key", "median_s"])
            rows = rows[rows["family"] == family]
            quiet = rows.groupby("key", sort=True)["median_s"].quantile(QUIET_QUANTILE)
            frames.append(pd.DataFrame({"machine": zoo_set.machine, "visit": zoo_set.name, "key": quiet.index,
                                        "quiet_s": quiet.to_numpy()}))
    if not frames:
        return pd.DataFrame(columns=["machine", "key", "visits", "values_s", "low_s", "high_s", "ratio"])
    return _ratios(pd.concat(frames, ignore_index=True), ["machine", "key"], "quiet_s")


#: The ``bench_zoo.py --csv`` tables :func:`read_sittings` reads by default: the zoo's, one a sitting.
SITTINGS_PATTERN = "bench_zoo_*"
#: Tables that rescore a sitting with other code, or hold another zoo set (one row per sitting and point).
_NOT_A_SITTING = ("unseen", "extra", "third", "fourth", "before", "noreuse", "perstep", "spilloff", "nopointwise", "nopw",
                  "twokinds", "nosubvector", "alone")


def read_sittings(folder, threads: int, pattern: str = SITTINGS_PATTERN) -> pd.DataFrame:
    """The ``bench_zoo.py --csv`` tables in ``folder`` named ``{pattern}_t{threads}.csv``, stacked with a
    ``sitting`` column (the file's name); tables whose name holds any of ``unseen``, ``extra``, ``third``,
    ``fourth`` (other zoo sets) or ``before``, ``noreuse``, ``perstep``, ``spilloff``, ``nopointwise``, ``nopw``,
    ``twokinds``, ``nosubvector`` (a sitting rescored by other code) or ``alone`` (the zoo measured again in rounds of
    its own after the calibration, ``bench_zoo.py --then-alone``) are left out, and so is a table whose
    measurements repeat a table's with a shorter name (a rescoring by any other name: the sitting's own
    table keeps the shortest). Empty when none is found."""
    files = sorted((f for f in Path(folder).glob(f"{pattern}_t{threads}.csv")
                    if not any(word in f.name for word in _NOT_A_SITTING)), key=lambda f: (len(f.name), f.name))
    tables, seen = [], set()
    for f in files:
        table = pd.read_csv(f)
        measured = tuple(table["measured_s"].round(12)) if "measured_s" in table else (f.name,)
        if measured not in seen:
            seen.add(measured)
            tables.append(table.assign(sitting=f.name))
    return pd.concat(tables) if tables else pd.DataFrame()


def sitting_spread(sittings: pd.DataFrame, min_sittings: int = 5) -> pd.DataFrame:
    """One row per zoo point (``model``, ``workload``, ``batch_size``) measured in at least ``min_sittings``
    sittings of ``sittings`` (:func:`read_sittings`): ``sittings``, the standard deviations over them of the
    natural logs of the measured and the predicted latency and of their ratio (``measured_sd``,
    ``predicted_sd``, ``error_sd``), the ``correlation`` of the two logs (NaN where either does not vary),
    and ``median_error`` (exp of the median over the sittings of log(predicted / measured), less 1). Pure.

    A calibration that follows the machine's state moves its predictions with the measurements, so
    ``error_sd`` is well under ``measured_sd``; the sittings may span code changes, which add to
    ``error_sd``."""
    import numpy as np

    rows = []
    if not len(sittings):
        return pd.DataFrame(rows)
    for key, group in sittings.groupby(["model", "workload", "batch_size"]):
        if group["sitting"].nunique() < min_sittings:
            continue
        measured, predicted = np.log(group["measured_s"].to_numpy()), np.log(group["predicted_s"].to_numpy())
        rows.append(dict(zip(("model", "workload", "batch_size"), key), sittings=int(group["sitting"].nunique()),
                         measured_sd=float(np.std(measured, ddof=1)), predicted_sd=float(np.std(predicted, ddof=1)),
                         error_sd=float(np.std(predicted - measured, ddof=1)),
                         correlation=_correlation(measured, predicted),
                         median_error=float(np.exp(np.median(predicted - measured)) - 1)))
    return pd.DataFrame(rows)


def sitting_levels(sittings: pd.DataFrame, min_sittings: int = 5) -> pd.DataFrame:
    """One row per sitting of ``sittings`` (:func:`read_sittings`), in the order given: the machine's speed
    and steadiness in it, read off the zoo points it shares with the others (each measured in at least
    ``min_sittings`` sittings): ``level``, the median over its points of measured / the point's median
    over all sittings (above 1: a slower sitting); ``spread``, the median of its points' round-to-round
    ``spread_rel`` (NaN without the column); ``median_error``, the median |predicted / measured - 1| of
    all its points; ``points``, how many it shares. Pure."""
    import numpy as np

    keys = ["model", "workload", "batch_size"]
    if not len(sittings):
        return pd.DataFrame(columns=["sitting", "level", "spread", "median_error", "points"])
    counts = sittings.groupby(keys)["sitting"].transform("nunique")
    shared = sittings[counts >= min_sittings]
    typical = shared.groupby(keys)["measured_s"].transform("median")
    ratio = (shared["measured_s"] / typical).groupby(shared["sitting"], sort=False).median()
    rows = []
    for name, group in sittings.groupby("sitting", sort=False):
        spread = group["spread_rel"].median() if "spread_rel" in group else float("nan")
        error = np.abs(group["predicted_s"] / group["measured_s"] - 1).median()
        rows.append(dict(sitting=name, level=float(ratio.get(name, float("nan"))), spread=float(spread),
                         median_error=float(error), points=int((shared["sitting"] == name).sum())))
    return pd.DataFrame(rows)


def _correlation(a, b) -> float:
    """Pearson's correlation of ``a`` and ``b``; NaN when either does not vary."""
    import numpy as np

    if np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])
