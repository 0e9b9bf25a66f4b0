"""Running a suite: measure each planned point, append its row at once, resume where a run stopped."""

from __future__ import annotations

import datetime as _dt
import math
import secrets
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Optional, TextIO, Union

from .env import cuda_available, environment, usable_cores
from .measurement import Config, ConfigError, Measurement, check_fits, measure
from .results import ResultsError, ResultsWriter, point_key, raw_times_to_text
from .suites import Suite

__all__ = ["run_suite", "plan_rounds", "resolve_devices", "select_sweeps", "SweepSummary", "Progress", "measurement_row", "skipped_row"]


@dataclass
class SweepSummary:
    """Counts of what one call to :func:`run_suite` did."""

    planned: int = 0
    already_done: int = 0
    measured: int = 0
    skipped: int = 0
    elapsed_s: float = 0.0


class Progress:
    """A one-line progress bar on a terminal (or one line per point when not a terminal)."""

    def __init__(self, total: int, stream: Optional[TextIO] = None, enabled: bool = True):
        self.total = total
        self.stream = stream or sys.stderr  # looked up now, not at import (it may be replaced)
        self.enabled = enabled and total > 0
        self.done = 0
        self.start = time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update(self, text: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        width = 20
        filled = int(width * self.done / self.total)
        bar = "#" * filled + "." * (width - filled)
        line = f"[{bar}] {self.done}/{self.total} {_clock(elapsed)} eta {_clock(eta)}  {text}"
        if self.tty:
            self.stream.write("\r\033[K" + line[:160])
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _base_row(config: Config, *, run_id: str, suite: str, sweep: str, machine: str, round_index: int = 0) -> dict:
    fields = asdict(config)
    threads_requested = fields.pop("threads")
    return {
        **fields,
        "threads_requested": threads_requested,
        "round": round_index,
        "run_id": run_id,
        "suite": suite,
        "sweep": sweep,
        "machine": machine,
        "params": config.params,
        "flops": config.flops,
        "bytes": config.bytes,
        "timestamp_utc": _now(),
    }


def measurement_row(measurement: Measurement, **context) -> dict:
    """The results row of a measured point (``context``: run_id, suite, sweep, machine)."""
    row = _base_row(measurement.config, **context)
    summary = measurement.summary()
    for name in ("workload", "mode", "dtype", "transfer", "regime", "device", "d_model", "n_layers", "batch_size"):
        summary.pop(name)
    row.update(summary)
    row["status"] = "ok"
    row["reason"] = ""
    row["raw_times_s"] = raw_times_to_text(measurement.timing.raw_times_s)
    return row


def skipped_row(config: Config, reason: str, **context) -> dict:
    """The results row of a point that was not measured, with the reason."""
    row = _base_row(config, **context)
    row.update({"status": "skipped", "reason": reason, "threads": config.threads})
    return row


def plan_rounds(points: list) -> list:
    """``(round, point)`` pairs: round 0 in suite order, later rounds each in a seeded shuffled order
    of the points that ask for that many rounds.

    Several rounds minutes apart, in different orders, turn a slow spell of a shared machine into
    one bad round of a few points (which the median over rounds rejects) instead of a run of
    neighbouring points all biased the same way.
    """
    import random

    plan = [(0, point) for point in points]
    for round_index in range(1, max((p.rounds for p in points), default=1)):
        order = [point for point in points if point.rounds > round_index]
        random.Random(round_index).shuffle(order)
        plan.extend((round_index, point) for point in order)
    return plan


def resolve_devices(suite: Suite, devices: Optional[tuple], stream: Optional[TextIO] = None) -> tuple:
    """The devices to measure: ``devices`` checked against the suite and this machine, or by default
    the suite's, less ``cuda`` (with a message on ``stream``) where CUDA is absent."""
    stream = stream or sys.stderr
    if devices is None:
        devices = suite.devices
        if "cuda" in devices and not cuda_available():
            devices = tuple(d for d in devices if d != "cuda")
            stream.write(f"crossover: note: CUDA is not available; measuring only {', '.join(devices) or 'nothing'}\n")
        return devices
    for device in devices:
        if device not in suite.devices:
            raise ConfigError(f"device {device!r} is not in suite {suite.name!r} (it has {', '.join(suite.devices)})")
        if device == "cuda" and not cuda_available():
            raise ConfigError("device 'cuda' requested but CUDA is not available on this machine")
    return tuple(devices)


def select_sweeps(suite: Suite, names: Optional[tuple]) -> Suite:
    """The suite with only the named sweeps (all when ``names`` is None)."""
    if names is None:
        return suite
    known = [sweep.name for sweep in suite.sweeps]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ConfigError(f"suite {suite.name!r} has no sweep {', '.join(map(repr, unknown))} (it has {', '.join(known)})")
    return replace(suite, sweeps=tuple(s for s in suite.sweeps if s.name in names))


def run_suite(
    suite: Suite,
    out_dir: Union[str, Path],
    *,
    resume: bool = False,
    machine: Optional[str] = None,
    devices: Optional[tuple] = None,
    progress: bool = True,
    stream: Optional[TextIO] = None,
    measure_fn: Callable[..., Measurement] = measure,
) -> SweepSummary:
    """Measure every point of ``suite`` and append the rows to ``out_dir``.

    Parameters
    ----------
    suite : Suite
        The plan.
    out_dir : path
        Results directory (created if missing).
    resume : bool
        Continue a run into a directory that already holds results: points already there, measured
        or skipped, are not measured again. Without it, a non-empty directory is an error, so two
        different runs never mix by accident.
    machine : str, optional
        Machine label for the rows (default: :func:`crossover.env.machine_label`).
    devices : tuple of str, optional
        Measure only these of the suite's devices. By default a suite's ``cuda`` points are left out
        (with a message) on a machine without CUDA.
    progress : bool
        Show a progress bar on ``stream``.
    measure_fn : callable
        The measuring function (tests substitute a fake).

    Returns
    -------
    SweepSummary
    """
    start = time.perf_counter()
    stream = stream or sys.stderr
    out_dir = Path(out_dir)
    if (out_dir / "results.csv").exists() and not resume:
        raise ResultsError(
            f"{out_dir} already holds results; pass --resume to continue that run, or choose a new --out"
        )
    devices = resolve_devices(suite, devices, stream)
    env = environment()
    machine = machine or env["machine"]
    env["machine"] = machine
    env["suite"] = suite.name
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    writer = ResultsWriter(out_dir, run_id, env)

    plan = plan_rounds(suite.points(devices))
    done = writer.existing_keys()
    summary = SweepSummary(planned=len(plan))
    todo = []
    for round_index, point in plan:
        row = skipped_row(point.config, "", run_id=run_id, suite=suite.name, sweep=point.sweep,
                          machine=machine, round_index=round_index)
        if point_key(row) in done:
            summary.already_done += 1
        else:
            todo.append((round_index, point))
    if summary.already_done:
        stream.write(f"crossover: resuming; {summary.already_done} of {len(plan)} points already done\n")

    bar = Progress(len(todo), stream=stream, enabled=progress)
    for round_index, point in todo:
        config = point.config
        context = dict(run_id=run_id, suite=suite.name, sweep=point.sweep, machine=machine, round_index=round_index)
        label = (
            (f"round {round_index + 1}/{point.rounds} " if point.rounds > 1 else "") + f"{config.device} d={config.d_model} L={config.n_layers} B={config.batch_size} "
            f"{config.workload} {config.mode} {config.dtype}"
        )
        reason = suite.cap_reason(config)
        if reason is None and config.threads > usable_cores():
            reason = f"threads={config.threads} is more than this machine's {usable_cores()} usable cores"
        if reason is None:
            try:
                if config.device == "cuda":
                    _free_device_memory("cuda")  # memory cached by earlier points counts as free
                check_fits(config)
            except ConfigError as exc:
                reason = f"does not fit: {exc}"
        if reason is None:
            try:
                measurement = measure_fn(config, suite.timing, profile=suite.profile, check_memory=False)
            except ConfigError as exc:
                reason = str(exc)
            except (RuntimeError, MemoryError) as exc:  # e.g. out of memory despite the estimate
                reason = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                _free_device_memory(config.device)
        if reason is not None:
            writer.append(skipped_row(config, reason, **context))
            summary.skipped += 1
            bar.update(f"{label}: skipped ({reason[:60]})")
            continue
        writer.append(measurement_row(measurement, **context))
        summary.measured += 1
        median_s = measurement.timing.median_s
        bar.update(f"{label}: {_human_seconds(median_s)}")
    summary.elapsed_s = time.perf_counter() - start
    return summary


def _free_device_memory(device: str) -> None:
    import gc

    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()


def _human_seconds(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
