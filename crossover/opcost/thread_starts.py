"""OpenMP threads a CPU step starts anew each time it runs: the thread pool's churn, counted and costed.

GNU OpenMP (libgomp, the runtime of PyTorch's CPU builds) keeps its worker threads between parallel
regions. A region that asks for fewer threads than the one before lets the surplus threads exit, and the
next wider region starts them again: a ``clone``, a fresh stack, its first page faults, the scheduler.
oneDNN and MKL size their teams to the work with a ``num_threads`` clause (ATen does not, for this very
reason: pytorch/pytorch#32008), so a step whose small convolutions or rank-1 products run on a few
threads and whose next op runs on all of them starts the difference every step.

That is what made batch-1 steps slow on the 16-core hosts of the GPU machines: LeNet-5's forward pass took
859 µs at batch 1 against 337 at batch 8, the MNIST MLP's training step 936 against 309, the 1-D CNN's
forward pass 501 against 369 (``experiments/results/nvidia-h100-80gb-hbm3-16c/run5/zoo``), and those steps
faulted 75-91 KiB of fresh pages a step where their batch-8 steps faulted none. On the 2-core VM at 16
threads (oversubscribed: good for counting, not for timing) the same three steps start 11, 12 and 8
threads a step and none at batch 8 (``experiments/bench_thread_starts.py``); against the hosts' predictions
without them that is 46-72 µs a start (the H100's third to fifth visits, the H200's first). At two threads nothing starts: MKL and oneDNN run such work on
one thread or on both.

So the count is measured, not modelled: :func:`module_thread_starts` runs the real step a few times at
the profile's thread count on this machine and counts the new thread ids (Linux: ``/proc/self/task``).
It is this machine's libraries' count; another machine's oneDNN or MKL may size teams otherwise. The
price of a start is a calibration primitive (family :data:`THREAD_START`): a rank-1 product MKL runs on
a few threads, then a ReLU on all of them, against both repeated alone (:func:`fit_thread_start`).
"""

from __future__ import annotations

import copy
import functools
import math
import os
from typing import Callable, Mapping, Optional

__all__ = ["THREAD_START", "PAIR", "count_thread_starts", "thread_start_points", "thread_start_step",
           "fit_thread_start", "module_thread_starts", "step_thread_starts", "counts_thread_starts", "unpriced_warning", "libraries_warning",
           "reference_thread_starts", "reference_step_key", "PROBE_MAX_S", "MIN_THREADS"]

#: The family of the thread-start primitives (CPU only, above one thread).
THREAD_START = "thread_start"
#: The primitives: the narrow op alone, the wide op alone, and one after the other (``x``: its starts a call).
NARROW, WIDE, PAIR = "rank1_mm", "wide_relu", "rank1_mm_then_relu"
#: A ``(128 × 1) · (1 × 784)`` product (a batch-1 weight gradient of the MNIST MLP): MKL 2024.2 ran it on 4
#: of 16 threads, and the ReLU after it started the other 12 (torch 2.13, the 2-core VM at 16 threads).
RANK1 = (128, 784)
#: The ReLU's elements: past ATen's grain (32768), so it opens a region over every thread.
WIDE_ELEMENTS = 2**16
#: Steps predicted longer than this are not run to count their starts: at 16 threads and ~50 µs a start
#: the churn costs at most 0.8 ms, 4% of such a step; and counting (9 steps) stays within a GPU run's zoo stage.
PROBE_MAX_S = 0.02
#: Below three threads a narrower team is one thread, which MKL and oneDNN run without a region: on the
#: 2-core VM at two threads no step of the zoo started any.
MIN_THREADS = 3


def _task_ids() -> Optional[set]:
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:  # not Linux
        return None


def count_thread_starts(call: Callable[[], object], *, warmup: int = 3, calls: int = 8) -> Optional[float]:
    """Threads this process starts per call of ``call`` in a steady state (new thread ids after ``warmup``
    calls), or None where the OS does not list a process's threads.

    Parameters
    ----------
    call : callable
        Run ``warmup + calls`` times, under ``torch.no_grad`` only if it says so itself.
    warmup, calls : int

    Returns
    -------
    float or None
    """
    if _task_ids() is None:
        return None
    for _ in range(warmup):
        call()
    seen, started = _task_ids(), 0
    for _ in range(calls):
        call()
        now = _task_ids()
        started += len(now - seen)
        seen |= now
    return started / max(calls, 1)


def _calls(device: str = "cpu") -> dict:
    import torch

    column, row = torch.randn(RANK1[0], 1, device=device), torch.randn(1, RANK1[1], device=device)
    wide = torch.randn(WIDE_ELEMENTS, device=device)

    def narrow():
        return torch.mm(column, row)

    def relu():
        return torch.relu(wide)

    def pair():
        narrow()
        return relu()

    return {NARROW: narrow, WIDE: relu, PAIR: pair}


def thread_start_points(threads: int) -> list:
    """``(family, name, x, shape)`` of each thread-start primitive at ``threads`` (none at one thread); the
    pair's ``x`` is the threads it starts a call, counted here, on this machine (0 where none start, or
    the OS does not say)."""
    if threads == 1:
        return []
    starts = count_thread_starts(_calls()[PAIR]) or 0.0
    return [(THREAD_START, name, starts if name == PAIR else 0.0, RANK1) for name in (NARROW, WIDE, PAIR)]


def thread_start_step(name: str, device: str = "cpu") -> Callable[[], object]:
    """The primitive ``name`` of :func:`thread_start_points` as a no-argument call."""
    return _calls(device)[name]


def fit_thread_start(families: Mapping) -> dict:
    """``thread_start_s`` (seconds a started thread costs) and ``thread_starts_pair`` (the pair's starts a
    call) from the primitives under ``families[THREAD_START]`` (``(seconds, spread, row)`` each): the pair's
    time less both ops alone, over its starts; 0 where nothing started; neither where the calibration lacks
    them (the composition fits the price then, :mod:`.composition`) (pure)."""
    if not families.get(THREAD_START):
        return {}
    by_name = {row["name"]: seconds for seconds, _, row in families.get(THREAD_START, []) if math.isfinite(seconds)}
    starts = max((float(row["x"]) for _, _, row in families.get(THREAD_START, []) if row["name"] == PAIR), default=0.0)
    if starts <= 0 or not {NARROW, WIDE, PAIR} <= set(by_name):
        return dict(thread_start_s=0.0, thread_starts_pair=starts)
    extra = by_name[PAIR] - by_name[NARROW] - by_name[WIDE]
    return dict(thread_start_s=max(extra, 0.0) / starts, thread_starts_pair=starts)


def counts_thread_starts(profile, latency_s: float, fitting: bool = False) -> bool:
    """Whether a step predicted at ``latency_s`` on ``profile`` is run to count its thread starts: on a CPU
    profile of :data:`MIN_THREADS` threads or more that prices a start (or, ``fitting`` the composition, one
    whose primitive did not price it, from before it or where its pair started none: the reference steps fit
    the price), a step under :data:`PROBE_MAX_S`."""
    priced = profile.overhead("thread_start_s") > 0 or (fitting and profile.overhead("thread_starts_pair") <= 0)
    return profile.device == "cpu" and int(profile.threads or 0) >= MIN_THREADS and latency_s <= PROBE_MAX_S and priced


def unpriced_warning(profile) -> str:
    """The warning of a CPU profile of :data:`MIN_THREADS` threads or more calibrated before the thread-start
    primitive ("" for any other): its predictions leave out the threads a step starts."""
    if profile.device != "cpu" or int(profile.threads or 0) < MIN_THREADS or "thread_start_s" in profile.overheads:
        return ""  # priced, measured or fitted
    return (f"the profile (of {profile.threads} threads, from before the thread-start primitive) does not "
            "cost the OpenMP threads a step starts anew when a oneDNN or MKL team is narrower than the next op's: "
            "at 16 threads batch-1 steps of LeNet-5, the 1-D CNN and the MNIST MLP's training step start 8-12 a step, "
            "which cost about 50 µs each on the 16-core hosts of the GPU machines; recalibrate to cost them")


def reference_step_key(model: str, workload: str, batch: int) -> str:
    """How a reference step is named in a count of its thread starts: ``"model/workload/batch"``."""
    return f"{model}/{workload}/{int(batch)}"


def reference_thread_starts(meta: dict) -> dict:
    """The threads each reference step started a step, as a profile's ``meta["reference_models"]`` reports them
    (:func:`reference_step_key` → count; ``{}`` for a profile without the report) (pure).

    The count is the libraries' of the machine that built the profile (:mod:`.thread_starts`): MKL on an AMD
    host narrows no team where it does on an Intel one (a 16-thread host's MLP training step at batch 1 starts
    8 threads a step counted on the Intel VM, none on the AMD one), so a profile rebuilt on another machine
    takes these counts rather than counting again, and fits the same terms."""
    return {reference_step_key(line["model"], line["workload"], line["batch_size"]): float(line["features"]["thread_starts"])
            for line in meta.get("reference_models") or () if "thread_starts" in (line.get("features") or {})}


def libraries_warning(profile) -> str:
    """A warning where this machine's libraries start fewer threads than those of the machine that built
    ``profile`` ("" where they agree, or nothing tells): the reference step that started the most threads
    there (its report, ``meta["reference_models"]``) is run here at the profile's thread count and counted.

    A model's starts are counted on the machine that predicts (:func:`module_thread_starts`), whose libraries may
    size teams otherwise (:func:`reference_thread_starts`): a 16-thread Intel host's profile used on an AMD machine
    leaves out starts its host pays. Each reference step is counted here once a process and thread count."""
    from ..units import format_seconds

    if profile.device != "cpu" or int(profile.threads or 0) < MIN_THREADS or _task_ids() is None:
        return ""
    counts = reference_thread_starts(profile.meta)
    if not counts or max(counts.values()) <= 0:
        return ""
    key, there = max(counts.items(), key=lambda item: item[1])
    here = _reference_starts_here(key, int(profile.threads))
    if here is None or here >= there / 2:
        return ""
    name, workload, batch = key.split("/")
    return (f"this machine's libraries (MKL, oneDNN) start fewer OpenMP threads at {profile.threads} threads than "
            f"those of the machine that built {profile.label}'s profile: its reference {name} {workload} step at "
            f"batch {batch} started {there:.0f} a step there and {here:.0f} here; the starts a step of this model "
            f"makes are counted here, so its {profile.machine} prediction may leave out some "
            f"(about {format_seconds(profile.overhead('thread_start_s'))} each)")


_HERE: dict = {}


def _reference_starts_here(key: str, threads: int) -> Optional[float]:
    """Threads the reference step ``key`` (:func:`reference_step_key`) starts here at ``threads`` (cached)."""
    if (key, threads) not in _HERE:
        from .reference_models import REFERENCE_MODELS, reference_model

        name, workload, batch = key.split("/")
        if name not in REFERENCE_MODELS:
            return None
        _HERE[key, threads] = module_thread_starts(reference_model(name), REFERENCE_MODELS[name], int(batch),
                                                   workload, threads)
    return _HERE[key, threads]


def module_thread_starts(model, sample_shape, batch_size: int, workload: str, threads: int,
                         dtype=None) -> Optional[float]:
    """Threads a step of ``model`` starts per step at ``threads`` intra-op threads on this machine's CPU.

    The step runs for real (:func:`crossover.measurement.module_rounds.make_module_step`, a random input of
    ``(batch_size, *sample_shape)``) on a copy of the model when it trains, so the caller's weights are
    untouched; the model's mode and torch's thread count are restored. None where the OS does not list
    threads, or the model has parameters on the ``meta`` device or off the CPU.
    """
    import torch

    from ..measurement.module_rounds import example_input, make_module_step, model_mode
    from ..measurement.toy_step import num_threads

    if _task_ids() is None or any(p.device.type != "cpu" for p in model.parameters()):
        return None
    with model_mode(model, workload == "train"), num_threads(threads):
        subject = copy.deepcopy(model) if workload == "train" else model
        x = example_input(tuple(sample_shape), batch_size, dtype=dtype, model=subject)
        step = make_module_step(subject, x, workload)
        return count_thread_starts(step, warmup=3, calls=6)


def step_thread_starts(model, sample_shape, workload: str, dtype=None, recorded: Optional[Mapping] = None) -> Callable:
    """A function ``(batch_size, threads) -> (starts, recorded)``: the OpenMP threads a step of ``model``
    starts per step, from ``recorded`` (``{(threads, batch_size): starts}``, counted where the model was
    measured) where it holds that pair, else counted here (:func:`module_thread_starts`, once per pair;
    0 where nothing can be counted), and whether it came from ``recorded``. A 16-thread Intel host's
    MKL narrows its teams and starts threads that an AMD machine's does not: counted on the host, a step's
    starts follow it to any machine that predicts it."""
    known = {(int(t), int(b)): float(n) for (t, b), n in (recorded or {}).items()}

    @functools.cache
    def counted(batch_size: int, threads: int) -> float:
        return module_thread_starts(model, sample_shape, batch_size, workload, threads, dtype) or 0.0

    def starts(batch_size: int, threads) -> tuple:
        batch_size, threads = int(batch_size), int(threads or 0)
        if (threads, batch_size) in known:
            return known[(threads, batch_size)], True
        return counted(batch_size, threads), False

    return starts
