"""Timing one step correctly: warm-up, synchronisation, adaptive repeats, robust statistics.

The timer knows nothing about models. It calls ``step()`` and measures it under one of two regimes:

``latency``
    Synchronise, start the clock, call ``step()`` once, synchronise, stop the clock: one request served
    alone (the inference question). Each repeat is one call.
``throughput``
    Call ``step()`` back to back ``calls_per_repeat`` times and synchronise once at the end of the
    block (a training loop: the host can queue GPU work ahead). Each repeat is the block's mean.

On a CPU ``sync`` is a no-op, every call is synchronous and the two regimes coincide: both time
blocks of at least ``min_block_s`` (pass ``synchronous=True``). On CUDA, pass
``sync=torch.cuda.synchronize`` and an ``event_factory`` to also record the CUDA-event span of each
repeat (from the first launch reaching the GPU to the last kernel's end). For a launch-bound step
that span is close to the wall time even when the GPU idles between kernels; the busy time proper
is the profiler's summed kernel time (:func:`crossover.measurement.toy_step.profile_counts`).

Repeats continue until the median's 95% distribution-free confidence interval is within
``±target_rel_ci`` of the median (checked once there are ``min_repeats`` repeats and
``min_run_time_s`` of timing), or the ``max_run_time_s`` budget is spent (after at least 3 repeats,
so a step of seconds is not repeated ``min_repeats`` times). The raw per-repeat times are kept.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from ..axes import REGIMES

__all__ = ["Timing", "TimerOptions", "time_step", "median_confidence_interval", "REGIMES"]


#: Warn when IQR / median exceeds this (torch.utils.benchmark uses the same threshold).
NOISY_REL_IQR = 0.10


@dataclass(frozen=True)
class TimerOptions:
    """How long and how precisely to time one point.

    Attributes
    ----------
    warmup_s : float
        Keep calling the step, untimed, for at least this long (and ``min_warmup_calls`` times).
    min_warmup_calls : int
        Lower bound on warm-up calls (lazy init, autotuning, allocator warm-up).
    min_repeats, max_repeats : int
        Bounds on the number of timed repeats.
    min_run_time_s : float
        Time at least this long in total before convergence is checked.
    max_run_time_s : float
        Per-point budget: stop repeating after this much timed wall time, converged or not.
    target_rel_ci : float
        Stop when the median's 95% CI half-width is at most this fraction of the median.
    min_block_s : float
        A block of back-to-back calls lasts at least this long (sets ``calls_per_repeat``); 10 ms keeps
        a ~1 µs clock overhead under 1e-4 of it, the criterion of ``torch.utils.benchmark``.
    """

    warmup_s: float = 0.05
    min_warmup_calls: int = 3
    min_repeats: int = 10
    max_repeats: int = 100_000
    min_run_time_s: float = 0.2
    max_run_time_s: float = 2.0
    target_rel_ci: float = 0.01
    min_block_s: float = 1e-2

    def __post_init__(self):
        for name in ("warmup_s", "min_run_time_s", "max_run_time_s", "target_rel_ci", "min_block_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value >= 0 and math.isfinite(value)):
                raise ValueError(f"timing option {name} must be a non-negative number, got {value!r}")
        for name in ("min_warmup_calls", "min_repeats", "max_repeats"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"timing option {name} must be a positive integer, got {value!r}")
        if self.min_repeats > self.max_repeats:
            raise ValueError("timing option min_repeats must not exceed max_repeats")
        if self.min_run_time_s > self.max_run_time_s:
            raise ValueError("timing option min_run_time_s must not exceed max_run_time_s")


@dataclass(frozen=True)
class Timing:
    """Raw timings of one step; statistics are derived.

    Attributes
    ----------
    raw_times_s : tuple of float
        Seconds per call, one value per repeat (in the throughput regime, a block's mean).
    calls_per_repeat : int
        Calls per repeat (1 in the latency regime on an asynchronous device).
    regime : str
        ``"latency"`` or ``"throughput"``.
    device_times_s : tuple of float or None
        Device (CUDA event) seconds per call, one per repeat, when recorded.
    warmup_calls : int
        Untimed calls made before timing.
    stop_reason : str
        ``"converged"``, ``"time budget"`` or ``"max repeats"``.
    """

    raw_times_s: tuple
    calls_per_repeat: int = 1
    regime: str = "latency"
    device_times_s: Optional[tuple] = None
    warmup_calls: int = 0
    stop_reason: str = ""
    warnings: tuple = field(default=())

    @property
    def n_repeats(self) -> int:
        return len(self.raw_times_s)

    @property
    def median_s(self) -> float:
        return float(np.median(self.raw_times_s))

    @property
    def q1_s(self) -> float:
        return float(np.percentile(self.raw_times_s, 25))

    @property
    def q3_s(self) -> float:
        return float(np.percentile(self.raw_times_s, 75))

    @property
    def iqr_s(self) -> float:
        return self.q3_s - self.q1_s

    @property
    def mean_s(self) -> float:
        return float(np.mean(self.raw_times_s))

    @property
    def min_s(self) -> float:
        return float(np.min(self.raw_times_s))

    @property
    def rel_iqr(self) -> float:
        return self.iqr_s / self.median_s if self.median_s > 0 else math.inf

    @property
    def device_median_s(self) -> float:
        if not self.device_times_s:
            return math.nan
        return float(np.median(self.device_times_s))

    @property
    def median_ci_s(self) -> tuple:
        """95% distribution-free confidence interval of the median, in seconds."""
        return median_confidence_interval(self.raw_times_s)


def median_confidence_interval(values: Sequence[float], confidence: float = 0.95) -> tuple:
    """Distribution-free confidence interval of the median from order statistics.

    Uses the binomial(n, 1/2) distribution of the number of values below the median; with fewer than
    6 values the interval is the full range.

    Returns
    -------
    (low, high) : tuple of float
    """
    ordered = np.sort(np.asarray(values, dtype=float))
    n = len(ordered)
    if n == 0:
        return (math.nan, math.nan)
    if n < 6:
        return (float(ordered[0]), float(ordered[-1]))
    # The lower bound is the largest 0-based order statistic j with P(Binom(n, 1/2) <= j) <= alpha/2,
    # so the interval [x_(j), x_(n-1-j)] covers the median with probability >= confidence.
    alpha_half = (1 - confidence) / 2
    from scipy import stats  # on use: scipy.stats takes ~0.5 s to import

    low_rank = int(stats.binom.ppf(alpha_half, n, 0.5))
    if stats.binom.cdf(low_rank, n, 0.5) > alpha_half:
        low_rank -= 1
    low_rank = max(0, min(low_rank, (n - 1) // 2))
    high_rank = n - 1 - low_rank
    return (float(ordered[low_rank]), float(ordered[high_rank]))


def _converged(values: list, target_rel_ci: float) -> bool:
    low, high = median_confidence_interval(values)
    median = float(np.median(values))
    return median > 0 and (high - low) / 2 <= target_rel_ci * median


def time_step(
    step: Callable[[], object],
    options: TimerOptions = TimerOptions(),
    *,
    regime: str = "latency",
    sync: Callable[[], object] = lambda: None,
    clock: Callable[[], float] = time.perf_counter,
    event_factory: Optional[Callable[[], object]] = None,
    synchronous: bool = False,
) -> Timing:
    """Time ``step()`` to a trustworthy median.

    Parameters
    ----------
    step : callable
        One step of work, called with no arguments.
    options : TimerOptions
        Warm-up, repeat and budget settings.
    regime : {"latency", "throughput"}
        Synchronise after every call, or once per block of calls.
    sync : callable
        Waits for queued device work (``torch.cuda.synchronize`` on CUDA; a no-op on the CPU).
    clock : callable
        Wall clock in seconds (``time.perf_counter``); tests pass a fake one.
    event_factory : callable, optional
        Makes a timing event with ``record()`` and ``elapsed_time(other)`` in milliseconds, e.g.
        ``lambda: torch.cuda.Event(enable_timing=True)``; when given, device time is recorded too.
    synchronous : bool
        The step has finished when it returns (a CPU step). Then the two regimes coincide and the
        latency regime, too, times blocks of back-to-back calls lasting at least ``min_block_s``, as
        ``torch.utils.benchmark`` does: a step of a few µs is not swamped by the clock's own cost, and
        each repeat averages over the machine's sub-millisecond jitter the same way.

    Returns
    -------
    Timing
    """
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; expected one of {REGIMES}")

    # Warm-up: lazy initialisation, library handles, allocator, autotuning.
    sync()
    warmup_start = clock()
    warmup_calls = 0
    while warmup_calls < options.min_warmup_calls or clock() - warmup_start < options.warmup_s:
        step()
        sync()
        warmup_calls += 1
    per_call_estimate_s = max((clock() - warmup_start) / warmup_calls, 1e-9)

    calls_per_repeat = 1
    if regime == "throughput" or synchronous:
        calls_per_repeat = max(1, math.ceil(options.min_block_s / per_call_estimate_s))

    raw_times_s: list = []
    device_times_s: list = []
    timed_total_s = 0.0
    next_check = options.min_repeats
    stop_reason = "max repeats"
    while len(raw_times_s) < options.max_repeats:
        start_event = end_event = None
        if event_factory is not None:
            start_event, end_event = event_factory(), event_factory()
        sync()
        start = clock()
        if start_event is not None:
            start_event.record()
        for _ in range(calls_per_repeat):
            step()
        if end_event is not None:
            end_event.record()
        sync()
        elapsed_s = clock() - start
        timed_total_s += elapsed_s
        raw_times_s.append(elapsed_s / calls_per_repeat)
        if start_event is not None:
            device_times_s.append(start_event.elapsed_time(end_event) / 1e3 / calls_per_repeat)

        n = len(raw_times_s)
        if timed_total_s >= options.max_run_time_s and n >= min(options.min_repeats, 3):
            stop_reason = "time budget"
            break
        if n >= next_check and timed_total_s >= options.min_run_time_s:
            if _converged(raw_times_s, options.target_rel_ci):
                stop_reason = "converged"
                break
            next_check = max(n + 1, math.ceil(n * 1.1))

    timing = Timing(
        raw_times_s=tuple(raw_times_s),
        calls_per_repeat=calls_per_repeat,
        regime=regime,
        device_times_s=tuple(device_times_s) if event_factory is not None else None,
        warmup_calls=warmup_calls,
        stop_reason=stop_reason,
    )
    warnings = []
    if timing.rel_iqr > NOISY_REL_IQR:
        warnings.append(
            f"noisy: IQR is {timing.rel_iqr:.0%} of the median; close other programs, "
            "pin threads, or raise max_run_time_s"
        )
    if stop_reason != "converged" and timing.median_s > 0:
        low, high = timing.median_ci_s
        warnings.append(
            f"not converged ({stop_reason}): median CI ±{(high - low) / 2 / timing.median_s:.1%} "
            f"after {timing.n_repeats} repeats"
        )
    return Timing(**{**timing.__dict__, "warnings": tuple(warnings)})
