"""Timing any ``nn.Module`` (and any set of step functions) in shuffled interleaved rounds.

:func:`measure_rounds` is the protocol shared by ``crossover measure --model`` and ``crossover
calibrate``: every round visits every point once, in its own seeded shuffled order (an optional
drift reference first), and each visit is one short :func:`crossover.measurement.timer.time_step` call (the same
timer as the toy's measurements). A slow spell of a shared machine then hits every point alike, and a
point's latency is the 10th percentile of its repeats pooled over the rounds
(:data:`crossover.results.statistics.DEFAULT_STATISTIC`), the estimate that reproduced best between runs on
the 2-core VM.

:func:`make_module_step` builds the step of a user's model: a forward pass under ``torch.no_grad()``
in ``eval()`` mode, or a training step (``train()`` mode): forward, loss (cross-entropy against random
class labels for a ``[batch, classes]`` output, else mean-squared error against a random target),
``backward()``, and ``torch.optim.SGD(foreach=False)``'s ``step()`` after ``zero_grad()``: the same
step :func:`crossover.opcost.trace.trace_module` traces. :func:`measure_module` times it at several batch
sizes.
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import Callable, Optional, Sequence

import numpy as np

from ..axes import DEFAULT_ROUNDS
from ..results.statistics import QUIET_QUANTILE
from .timer import TimerOptions, time_step

__all__ = ["ROUND_OPTIONS", "measure_rounds", "summarise_rounds", "quicker_visit_per_round", "make_module_step",
           "model_mode", "measure_module", "DEFAULT_ROUNDS"]

#: One visit of a point in a round: an 8 ms budget of 2 ms blocks, at least 2 repeats. Many short
#: rounds beat few long ones on a shared machine: the 2-core VM's slow spells last 50 ms to seconds, so
#: with 10 rounds of 30 ms some points got one quiet round (see ``experiments/suites/quick.toml``).
ROUND_OPTIONS = TimerOptions(warmup_s=0.003, min_warmup_calls=1, min_repeats=2, min_run_time_s=0.008,
                             max_run_time_s=0.008, target_rel_ci=0.0, min_block_s=0.002)


def measure_rounds(points: Sequence[tuple], *, rounds: int, options: TimerOptions = ROUND_OPTIONS, seed: int = 0,
                   reference: Optional[tuple] = None, device: str = "cpu", regime: str = "latency",
                   on_progress: Optional[Callable[[str], None]] = None, keep_on_interrupt: bool = False) -> list:
    """Time every ``(key, step)`` of ``points`` once per round, each round in a shuffled order.

    Parameters
    ----------
    points : sequence of (key, callable)
        What to time; ``key`` is any hashable label.
    rounds : int
        Passes over the points.
    options : TimerOptions
        One visit's timing (keep it short: many rounds beat long visits on a shared machine).
    seed : int
        Seeds each round's order (``random.Random(f"{seed}/{round}")``).
    reference : (key, callable), optional
        A drift reference timed at the start of every round.
    device : {"cpu", "cuda"}
        On CUDA CUDA events record the device time too.
    regime : {"latency", "throughput"}
        On CUDA: synchronise after every call, or once per block of calls (on the CPU both time
        blocks of back-to-back calls).
    on_progress : callable, optional
        Called with a short label after every visit.
    keep_on_interrupt : bool
        On ``KeyboardInterrupt`` (Ctrl-C, a time limit's SIGTERM in the CLI) after at least one whole round, return
        the whole rounds' visits (the cut round's are dropped) instead of raising.

    Returns
    -------
    list of dict
        One per visit: ``round``, ``sequence``, ``key``, ``reference`` (bool), ``raw_times_s`` and
        ``device_times_s`` (tuples, seconds per call), ``median_s``, ``calls_per_repeat`` and
        ``faulted_bytes`` (the process's minor page faults per call over the visit, warm-up included,
        times :data:`PAGE_BYTES`; NaN where ``getrusage`` is missing): whether the host allocator served
        the step's large buffers from its heap (see :mod:`crossover.measurement.allocator`).
    """
    from .allocator import settle_allocator

    settle_allocator()  # the host allocator in a long-running process's state, whatever ran before
    sync, event_factory = (lambda: None), None
    if device == "cuda":
        import torch

        sync = torch.cuda.synchronize
        event_factory = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    rows = []
    for round_index in range(rounds):
        order = list(points)
        random.Random(f"{seed}/{round_index}").shuffle(order)
        visits = ([(reference, True)] if reference is not None else []) + [(p, False) for p in order]
        try:
            for (key, step), is_reference in visits:
                before = minor_page_faults()
                timing = time_step(step, options, regime=regime, sync=sync, event_factory=event_factory,
                                   synchronous=device != "cuda")
                calls = timing.warmup_calls + timing.n_repeats * timing.calls_per_repeat
                faults = (minor_page_faults() - before) / calls if before is not None and calls else float("nan")
                rows.append(dict(round=round_index, sequence=len(rows), key=key, reference=is_reference,
                                 raw_times_s=timing.raw_times_s, device_times_s=timing.device_times_s or (),
                                 median_s=timing.median_s, calls_per_repeat=timing.calls_per_repeat,
                                 faulted_bytes=faults * PAGE_BYTES))
                if on_progress is not None:
                    on_progress(f"round {round_index + 1}/{rounds} {key}")
        except KeyboardInterrupt:
            if not (keep_on_interrupt and round_index):
                raise
            return [row for row in rows if row["round"] < round_index]
    return rows


def summarise_rounds(rows: Sequence[dict], *, device_time: bool = False) -> dict:
    """The statistics of one point's visits: ``latency_s`` (10th percentile of the pooled repeats),
    ``median_s`` (median of the rounds' medians), ``min_s``, ``n_repeats``, ``rounds``,
    ``spread_rel`` (mean ``|round median / median - 1|``) and ``faulted_bytes`` (the visits' median of
    bytes faulted in per call; NaN without the count). With ``device_time`` the CUDA-event times."""
    field = "device_times_s" if device_time else "raw_times_s"
    pooled = np.concatenate([np.asarray(r[field], float) for r in rows]) if rows else np.array([])
    faults = [r["faulted_bytes"] for r in rows if np.isfinite(r.get("faulted_bytes", float("nan")))]
    faulted = float(np.median(faults)) if faults else float("nan")
    if not len(pooled):
        nan = float("nan")
        return dict(latency_s=nan, median_s=nan, min_s=nan, n_repeats=0, rounds=len(rows), spread_rel=nan,
                    faulted_bytes=faulted)
    medians = np.array([np.median(r[field]) for r in rows if len(r[field])])
    median = float(np.median(medians))
    return dict(latency_s=float(np.quantile(pooled, QUIET_QUANTILE)), median_s=median, min_s=float(pooled.min()),
                n_repeats=int(len(pooled)), rounds=len(medians),
                spread_rel=float(np.mean(np.abs(medians / median - 1))) if median > 0 else float("nan"),
                faulted_bytes=faulted)


def quicker_visit_per_round(rows: Sequence[dict]) -> list:
    """Of a point's visits, each round's quickest (lowest median of its repeats), in round order.

    A point visited several times a round (the calibration's reference steps: ``Plan.reference_visits``)
    keeps one visit a round, as a point visited once does, so that its 10th percentile pools the same number
    of visits (why: :func:`crossover.opcost.calibrate._statistics`). Visits without repeats are no round's."""
    best: dict = {}
    for row in rows:
        times = np.asarray(row.get("raw_times_s", ()), float)
        if not len(times):
            continue
        kept = best.get(row["round"])
        if kept is None or np.median(times) < np.median(np.asarray(kept["raw_times_s"], float)):
            best[row["round"]] = row
    return [best[r] for r in sorted(best)]


#: Bytes of one page as ``getrusage`` counts its faults (4 KiB on x86-64 Linux).
PAGE_BYTES = 4096


def minor_page_faults() -> Optional[int]:
    """The process's minor page faults so far (``getrusage``), or None where the platform has none."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


# ----------------------------------------------------------------------------------- user models
def example_input(sample_shape, batch_size: int, *, dtype=None, device="cpu", seed: int = 0, model=None):
    """A random input of ``(batch_size, *sample_shape)``: normal floats, or for an integer dtype ids drawn
    uniformly below :func:`id_range` of ``model`` (0/1 without one).

    Ids over the whole vocabulary, not 0/1: on the 2-core VM at one thread the zoo's embedding bag (5,000
    rows of 64) took 50.4 µs a step at batch 512 with ids 0/1, whose lookups all hit two rows, and 63.5 µs
    with ids over its table; 20.5 and 20.6 µs at batch 1."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    dtype = dtype or torch.get_default_dtype()
    shape = (batch_size, *sample_shape)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=generator).to(dtype)
    else:
        x = torch.randint(0, id_range(model), shape, generator=generator, dtype=dtype)
    return x.to(device)


def id_range(model=None) -> int:
    """How many ids an integer input may take: the fewest rows of ``model``'s embedding tables
    (``nn.Embedding``, ``nn.EmbeddingBag``), or 2 for a model without one (or no model)."""
    rows = [int(m.num_embeddings) for m in (model.modules() if model is not None else ())
            if hasattr(m, "num_embeddings")]
    return min(rows) if rows else 2


@contextlib.contextmanager
def model_mode(model, training: bool):
    """``model`` in training (or eval) mode for the block; every module's own mode restored after."""
    previous = {m: m.training for m in model.modules()}
    model.train(training)
    try:
        yield
    finally:
        for module, was_training in previous.items():
            module.training = was_training


def make_module_step(model, x, workload: str = "forward", *, lr: float = 1e-4) -> Callable[[], object]:
    """The step of ``model`` on input ``x`` (see the module docstring). Sets the model's mode:
    ``eval()`` for ``"forward"``, ``train()`` for ``"train"``."""
    import torch
    import torch.nn.functional as F

    if workload == "forward":
        model.eval()

        def forward():
            with torch.no_grad():
                return model(x)

        return forward
    if workload != "train":
        raise ValueError(f"unknown workload {workload!r}; expected 'forward' or 'train'")
    model.train()
    with torch.no_grad():
        out = model(x)
    if not isinstance(out, torch.Tensor):
        from ..errors import ConfigError

        raise ConfigError(f"the model returned {type(out).__name__}, not a tensor: cannot make a loss for training")
    generator = torch.Generator().manual_seed(1)
    if out.dim() == 2 and out.is_floating_point():
        target = torch.randint(0, out.shape[1], (out.shape[0],), generator=generator).to(out.device)
        loss_fn = F.cross_entropy
    else:
        target = torch.randn(out.shape, generator=generator).to(dtype=out.dtype, device=out.device)
        loss_fn = F.mse_loss
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=lr, foreach=False)

    def train():
        optimizer.zero_grad()
        loss = loss_fn(model(x), target)
        loss.backward()
        optimizer.step()
        return loss

    return train


def measure_module(model, sample_shape, batch_sizes, *, device: str = "cpu", workload: str = "forward",
                   dtype=None, rounds: int = DEFAULT_ROUNDS, options: TimerOptions = ROUND_OPTIONS, seed: int = 0,
                   on_progress: Optional[Callable[[str], None]] = None):
    """Time ``model`` at each batch size in shuffled interleaved rounds.

    Parameters
    ----------
    model : torch.nn.Module
        Moved to ``device``; its mode is set by the workload.
    sample_shape : tuple of int
        One sample's shape.
    batch_sizes : sequence of int
    device : {"cpu", "cuda"}
    workload : {"forward", "train"}
    dtype : torch.dtype, optional
        The input's dtype (default float32).
    rounds, options, seed, on_progress
        As :func:`measure_rounds`.

    Returns
    -------
    pandas.DataFrame
        One row per batch size: ``device``, ``batch_size``, ``workload``, ``latency_s`` (10th
        percentile of the pooled repeats), ``median_s``, ``min_s``, ``n_repeats``, ``rounds``,
        ``spread_rel``, ``device_latency_s`` (CUDA events; NaN on the CPU), ``threads``, ``elapsed_s``.
    """
    import pandas as pd
    import torch

    start = time.perf_counter()
    model = model.to(device)
    steps = [(b, make_module_step(model, example_input(sample_shape, b, dtype=dtype, device=device, model=model),
                                  workload))
             for b in batch_sizes]
    rows = measure_rounds(steps, rounds=rounds, options=options, seed=seed, device=device, on_progress=on_progress)
    out = []
    for b in batch_sizes:
        mine = [r for r in rows if r["key"] == b]
        stats = summarise_rounds(mine)
        device_stats = summarise_rounds(mine, device_time=True) if device == "cuda" else {"latency_s": float("nan")}
        out.append(dict(device=device, batch_size=b, workload=workload, **stats,
                        device_latency_s=device_stats["latency_s"], threads=torch.get_num_threads()))
    frame = pd.DataFrame(out)
    frame["elapsed_s"] = time.perf_counter() - start
    return frame
