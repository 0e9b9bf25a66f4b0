"""Timing a callable in blocks of back-to-back calls, for the experiments' microbenchmarks.

Run on a quiet machine: nothing here guards against other work.
"""

from __future__ import annotations

import time


def block_mean_us(fn, calls: int, blocks: int = 9, warmup: int = 2) -> float:
    """µs per call of ``fn``: the second-quickest of ``blocks`` blocks of ``calls`` back-to-back calls
    (their mean), after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    means = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        means.append((time.perf_counter() - start) / calls)
    return sorted(means)[1] * 1e6


def call_p10_us(fn, calls: int, warmup: int) -> float:
    """µs of ``fn``'s 10th-percentile call among ``calls`` calls timed one by one, after ``warmup`` calls."""
    import numpy as np

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.percentile(times, 10)) * 1e6
