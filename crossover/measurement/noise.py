"""The noise floor of a machine: how far one run's estimate of a step lies from another run's.

A latency model can be no more accurate on a machine than the machine repeats itself. This module
measures that directly: a fixed set of sizes is measured in several independent *windows* (each
with freshly built models, seconds apart), each window in many short interleaved rounds; for each
statistic of a point (the median of its rounds, the 10th percentile of its pooled repeats, the
fastest repeat, and the 10th percentile of the rounds whose drift reference was quiet) it reports
the run-to-run deviation ``mean |window estimate / mean over windows - 1|``.

It also runs the protocol the suites used before (5 rounds of up to 0.15 s, the first unshuffled,
models rebuilt every round) so the two can be compared in one sitting
(``experiments/bench_protocol.py``).
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd

from .toy_step import Config, num_threads, make_step
from ..results.statistics import is_drifted, quiet_level
from .timer import TimerOptions, time_step
from .noise_file import NOISE_FILE  # the reader (read_noise) lives there, without torch

__all__ = ["Protocol", "SHORT_ROUNDS", "LEGACY", "DEFAULT_SIZES", "measure_window", "window_estimates",
           "run_to_run", "noise_summary", "write_noise", "STATISTIC_NAMES", "spread",
           "DEFAULT_SPAN_S"]

#: Eight sizes from launch-bound to compute-bound; the first is the drift reference (the anchor).
DEFAULT_SIZES = (
    Config(d_model=128, n_layers=128, batch_size=1),
    Config(d_model=64, n_layers=16, batch_size=1),
    Config(d_model=64, n_layers=128, batch_size=4),
    Config(d_model=512, n_layers=16, batch_size=1),
    Config(d_model=256, n_layers=32, batch_size=16),
    Config(d_model=128, n_layers=128, batch_size=64),
    Config(d_model=512, n_layers=8, batch_size=128),
    Config(d_model=1024, n_layers=8, batch_size=64),
)

#: A size counts as compute-bound from this batch size on (its time is set by FLOPs, not by
#: dispatch or by where the weights live).
COMPUTE_BOUND_BATCH = 64


@dataclass(frozen=True)
class Protocol:
    """How one window measures its sizes.

    Attributes
    ----------
    name : str
    rounds : int
        Passes over the sizes in a window.
    options : TimerOptions
        Per size and round.
    shuffle_first_round : bool
        Round 0 shuffled too (the old protocol measured it in list order).
    rebuild_each_round : bool
        Build the model again for every measurement (as a sweep does) instead of once per window.
    round_pause_s : float
        Idle time after each round, so a window's rounds spread over as long as a suite's run spreads
        a point's rounds (a sweep measures the other points in between).
    """

    name: str
    rounds: int
    options: TimerOptions
    shuffle_first_round: bool = True
    rebuild_each_round: bool = False
    round_pause_s: float = 0.0


#: Many short rounds: 20 passes of a 30 ms block per size, every pass shuffled.
SHORT_ROUNDS = Protocol(
    "short-rounds", 20,
    TimerOptions(warmup_s=0.01, min_warmup_calls=2, min_repeats=3, min_run_time_s=0.03, max_run_time_s=0.03,
                 target_rel_ci=0.0),
)
#: The quick suite's protocol before the paired protocol: 5 rounds of up to 0.15 s, round 0 in order.
LEGACY = Protocol(
    "legacy", 5,
    TimerOptions(warmup_s=0.02, min_run_time_s=0.05, max_run_time_s=0.15, target_rel_ci=0.02),
    shuffle_first_round=False, rebuild_each_round=True,
)

#: The statistics compared, each a function of one size's rounds in one window.
STATISTIC_NAMES = ("median", "p10", "min", "p10_quiet")


def measure_window(configs: Sequence[Config], protocol: Protocol, *, seed: int = 0, window: int = 0,
                   on_round: Optional[Callable[[int], None]] = None) -> pd.DataFrame:
    """Measure ``configs`` in one window of ``protocol.rounds`` interleaved rounds.

    Returns
    -------
    DataFrame
        One row per (round, size): ``window``, ``round``, ``size`` (index into ``configs``), the sizes,
        ``median_s`` of the round's repeats and ``raw_times_s`` (tuple of seconds).
    """
    steps = {} if protocol.rebuild_each_round else {i: make_step(c) for i, c in enumerate(configs)}
    rows = []
    for round_index in range(protocol.rounds):
        order = list(range(len(configs)))
        if round_index or protocol.shuffle_first_round:
            random.Random(f"{seed}/{window}/{round_index}").shuffle(order)
        if not protocol.rebuild_each_round and 0 in order:  # the reference opens every round
            order.remove(0)
            order.insert(0, 0)
        for index in order:
            config = configs[index]
            with num_threads(config.threads):
                step = steps[index] if index in steps else make_step(config)
                timing = time_step(step, protocol.options, synchronous=config.device == "cpu")
            rows.append(dict(window=window, round=round_index, size=index, d_model=config.d_model,
                             n_layers=config.n_layers, batch_size=config.batch_size, median_s=timing.median_s,
                             raw_times_s=timing.raw_times_s))
        if on_round is not None:
            on_round(round_index)
        if protocol.round_pause_s and round_index + 1 < protocol.rounds:
            time.sleep(protocol.round_pause_s)
    return pd.DataFrame(rows)


def window_estimates(frame: pd.DataFrame) -> pd.DataFrame:
    """Each statistic of each size in each window (seconds).

    ``median``: median of the rounds' medians; ``p10``: 10th percentile of the repeats pooled over the
    rounds; ``min``: the fastest repeat; ``p10_quiet``: ``p10`` over the rounds whose reference (size
    0, measured first in each round) was within :data:`crossover.results.statistics.DRIFT_LIMIT` of the window's
    quiet level (its 10th percentile).
    """
    out = []
    for window, rows in frame.groupby("window"):
        reference = rows[rows["size"] == 0].set_index("round")["median_s"]
        quiet = quiet_level(reference)
        quiet_rounds = set(reference.index[~is_drifted(reference / quiet)])
        for size, group in rows.groupby("size"):
            pooled = np.concatenate([np.asarray(t, float) for t in group["raw_times_s"]])
            in_quiet = group[group["round"].isin(quiet_rounds)]
            quiet_pooled = (np.concatenate([np.asarray(t, float) for t in in_quiet["raw_times_s"]])
                            if len(in_quiet) else pooled)
            out.append(dict(window=window, size=size, d_model=group["d_model"].iloc[0],
                            n_layers=group["n_layers"].iloc[0], batch_size=group["batch_size"].iloc[0],
                            median=float(group["median_s"].median()), p10=quiet_level(pooled),
                            min=float(pooled.min()), p10_quiet=quiet_level(quiet_pooled),
                            quiet_rounds=len(in_quiet), rounds=len(group)))
    return pd.DataFrame(out)


def run_to_run(estimates: pd.DataFrame) -> pd.DataFrame:
    """Per size and statistic, the run-to-run deviation: ``mean |window / mean over windows - 1|``."""
    rows = []
    for size, group in estimates.groupby("size"):
        first = group.iloc[0]
        row = dict(size=size, d_model=first["d_model"], n_layers=first["n_layers"], batch_size=first["batch_size"],
                   compute_bound=bool(first["batch_size"] >= COMPUTE_BOUND_BATCH))
        for name in STATISTIC_NAMES:
            values = group[name].to_numpy(float)
            row[f"{name}_s"] = float(np.mean(values))
            row[f"{name}_deviation"] = float(np.mean(np.abs(values / np.mean(values) - 1)))
        rows.append(row)
    return pd.DataFrame(rows)


def noise_summary(deviations: pd.DataFrame) -> dict:
    """Mean run-to-run deviation per statistic: over all sizes, compute-bound ones, and the others."""
    summary = {}
    for name in STATISTIC_NAMES:
        column = deviations[f"{name}_deviation"]
        summary[name] = {
            "all": float(column.mean()),
            "compute_bound": float(column[deviations["compute_bound"]].mean()),
            "memory_or_launch_bound": float(column[~deviations["compute_bound"]].mean()),
            "worst": float(column.max()),
        }
    return summary


def write_noise(directory, deviations: pd.DataFrame, *, protocol: Protocol, windows: int, machine: str) -> Path:
    """Store the noise floor as ``DIR/noise.json`` (read by ``fit`` and ``predict``)."""
    path = Path(directory) / NOISE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "schema": "crossover-noise", "schema_version": 1, "machine": machine,
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "protocol": {"name": protocol.name, "rounds": protocol.rounds, "windows": windows,
                     "block_s": protocol.options.max_run_time_s, "round_pause_s": protocol.round_pause_s},
        "summary": noise_summary(deviations),
        "sizes": json.loads(deviations.to_json(orient="records")),
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


#: How long a window spreads its rounds by default: about as long as the quick suite spreads a
#: point's rounds over its run. Back-to-back rounds (a window of ~8 s) see one state of the machine
#: and favour the low quantiles; spread like a run, which statistic repeats best varied from run to
#: run (experiments/bench_protocol.py, docs/measuring.md, "Noisy machines").
DEFAULT_SPAN_S = 30.0


def spread(protocol: Protocol, span_s: float, measuring_s: float = 8.0) -> Protocol:
    """``protocol`` with idle pauses between rounds so that a window lasts about ``span_s``
    (``measuring_s``: the time its measurements take)."""
    pause_s = max(0.0, (span_s - measuring_s) / max(protocol.rounds - 1, 1))
    return replace(protocol, round_pause_s=pause_s)


def measure_noise(configs: Sequence[Config] = DEFAULT_SIZES, protocol: Protocol = SHORT_ROUNDS, *,
                  windows: int = 3, pause_s: float = 10.0, seed: int = 0,
                  on_progress: Optional[Callable[[str], None]] = None) -> pd.DataFrame:
    """Measure every window (pausing ``pause_s`` between them) and return all their rows (give a
    ``protocol`` made by :func:`spread` to spread each window's rounds)."""
    frames = []
    for window in range(windows):
        if window and pause_s:
            time.sleep(pause_s)
        report = (lambda r, w=window: on_progress(f"window {w + 1}/{windows} round {r + 1}/{protocol.rounds}")
                  ) if on_progress else None
        frames.append(measure_window(configs, protocol, seed=seed, window=window, on_round=report))
    return pd.concat(frames, ignore_index=True)
