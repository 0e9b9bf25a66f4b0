"""Running a suite: measure each planned point, append its row at once, resume where a run stopped."""

from __future__ import annotations

import datetime as _dt
import secrets
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Optional, TextIO, Union

from .environment import cuda_available, environment, require_device
from .procfs import usable_cores
from ..errors import BusyMachineError
from .toy_step import Config, ConfigError, Measurement, check_fits, measure
from ..progress import Progress  # re-exported: the sweep's bar
from ..results.store import (REFERENCE_SWEEP, WARNING_SEPARATOR, ResultsError, ResultsWriter, point_key,
                             raw_times_to_text)
from .suites import PlannedPoint, Suite
from ..units import format_seconds

__all__ = ["run_suite", "plan_rounds", "PlannedMeasurement", "pair_key", "REFERENCE_SWEEP", "resolve_devices", "select_sweeps", "SweepSummary", "Progress", "measurement_row", "skipped_row", "shard_points", "parse_shard"]


@dataclass
class SweepSummary:
    """Counts of what one call to :func:`run_suite` did."""

    planned: int = 0
    already_done: int = 0
    measured: int = 0
    skipped: int = 0
    busy: int = 0  # measured while other processes competed for the cores
    elapsed_s: float = 0.0


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _base_row(config: Config, *, run_id: str, suite: str, sweep: str, machine: str, round_index: int = 0,
              sequence: Optional[int] = None) -> dict:
    fields = asdict(config)
    threads_requested = fields.pop("threads")
    return {
        **fields,
        "threads_requested": threads_requested,
        "round": round_index,
        "sequence": sequence,
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
    row["warnings"] = WARNING_SEPARATOR.join(summary["warnings"])
    row["status"] = "ok"
    row["reason"] = ""
    row["raw_times_s"] = raw_times_to_text(measurement.timing.raw_times_s)
    return row


def skipped_row(config: Config, reason: str, **context) -> dict:
    """The results row of a point that was not measured, with the reason."""
    row = _base_row(config, **context)
    row.update({"status": "skipped", "reason": reason, "threads": config.threads})
    return row


@dataclass(frozen=True)
class PlannedMeasurement:
    """One measurement of a run's plan: which round, its position in the run, and the point."""

    round: int
    sequence: int  # position in the whole run's plan (0, 1, ...): the order it is measured in
    point: PlannedPoint

    @property
    def is_reference(self) -> bool:
        return self.point.sweep == REFERENCE_SWEEP


def pair_key(config: Config, pair_by: tuple) -> tuple:
    """What a point has in common with the points it is paired with: every field but ``pair_by``."""
    return tuple((name, value) for name, value in asdict(config).items() if name not in pair_by)


def plan_rounds(points: list, *, seed: int = 0, pair_by: tuple = ("device",), references: tuple = (),
                reference_every: int = 0) -> list:
    """The run's plan: every round in its own seeded shuffled order, paired points back to back,
    drift references per device at the start of every round (and every ``reference_every`` points).

    Parameters
    ----------
    points : list of PlannedPoint
        The suite's points (each asks for ``rounds`` rounds).
    seed : int
        Seeds each round's shuffle (``random.Random(f"{seed}/{round}")``), so the same suite and seed
        replay the same order, round 0 included.
    pair_by : tuple of str
        Points that differ only in these fields (a CPU and a GPU point of the same size, by default)
        form a group that is measured back to back, so their ratio compares measurements seconds
        apart. The order within a group rotates from round to round (A B, then B A, ...), so a
        steady drift does not always favour the same member.
    references : tuple of Config
        Drift references (one per device), measured at the start of every round.
    reference_every : int
        Also measure the references again once this many points have been measured since the last
        time (at a group boundary); 0 measures them once per round.

    Returns
    -------
    list of PlannedMeasurement
        In the order to measure them.
    """
    import random

    n_rounds = max((p.rounds for p in points), default=1)
    reference_points = [PlannedPoint(REFERENCE_SWEEP, config, n_rounds) for config in references]
    plan: list = []

    def add(round_index: int, point: PlannedPoint) -> None:
        plan.append(PlannedMeasurement(round_index, len(plan), point))

    for round_index in range(n_rounds):
        groups: dict = {}
        for point in points:
            if point.rounds > round_index:
                groups.setdefault(pair_key(point.config, pair_by), []).append(point)
        order = list(groups.values())
        random.Random(f"{seed}/{round_index}").shuffle(order)
        if not order:
            continue
        refs = _rotated(reference_points, round_index)
        for point in refs:
            add(round_index, point)
        since_reference = 0
        for group in order:
            if reference_every and since_reference >= reference_every:
                for point in refs:
                    add(round_index, point)
                since_reference = 0
            for point in _rotated(group, round_index):
                add(round_index, point)
                since_reference += 1
    return plan


def _rotated(items: list, k: int) -> list:
    if not items:
        return []
    k %= len(items)
    return items[k:] + items[:k]


def shard_points(points: list, suite: Suite, shard: Optional[tuple]) -> list:
    """The points of one shard of a suite split over identical nodes.

    Points measured back to back (one pairing group: the same point on each of ``suite.pair_by``'s
    values) stay together, with all their rounds, so a node measures whole rounds of its points and
    keeps the pairing; the groups are dealt out longest first (by their expected time, every round
    of them) to the shard with the least time so far, so shards take about as long. The drift
    reference is not a point of any shard: :func:`plan_rounds` gives it to every shard, each round,
    as the anchor all nodes measure.

    Parameters
    ----------
    points : list of PlannedPoint
        The suite's points (:meth:`crossover.measurement.suites.Suite.points`).
    suite : Suite
        For the pairing fields and the timing (expected cost of a point).
    shard : (int, int) or None
        ``(index, count)``, index from 0; None: every point.

    Returns
    -------
    list of PlannedPoint
        The shard's points in the suite's order. Every point is in exactly one shard of a count.
    """
    if shard is None:
        return list(points)
    index, count = shard
    groups: dict = {}
    for point in points:
        groups.setdefault(pair_key(point.config, suite.pair_by), []).append(point)
    cost = {key: sum(_expected_cost_s(p.config, suite) * p.rounds for p in members) for key, members in groups.items()}
    load = [0.0] * count
    owner = {}
    for key in sorted(groups, key=lambda k: -cost[k]):  # stable: equal costs keep the suite's order
        chosen = min(range(count), key=lambda i: (load[i], i))
        owner[key] = chosen
        load[chosen] += cost[key]
    return [p for p in points if owner[pair_key(p.config, suite.pair_by)] == index]


def parse_shard(text: str) -> tuple:
    """``"I/N"`` (I from 1 to N, as a user counts) -> ``(I - 1, N)``.

    Raises
    ------
    ConfigError
        Not two positive integers with I at most N.
    """
    parts = str(text).split("/")
    try:
        number, count = (int(part) for part in parts)
    except ValueError:
        number, count = 0, 0
    if len(parts) != 2 or not 1 <= number <= count:
        raise ConfigError(f"a shard is I/N with 1 <= I <= N (e.g. 1/2), got {text!r}")
    return number - 1, count


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
        require_device(device)
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
    strict: bool = False,
    allow_mixed: bool = False,
    check_load: Callable[..., object] = None,
    shard: Optional[tuple] = None,
) -> SweepSummary:
    """Measure every point of ``suite`` and append the rows to ``out_dir``.

    Every round is shuffled (seeded by the suite's ``seed``, recorded with the run), points that
    differ only in the suite's ``pair_by`` fields are measured back to back, and a drift reference
    per device opens every round (see :func:`plan_rounds`).

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
        Machine label for the rows (default: :func:`crossover.measurement.environment.machine_label`).
    devices : tuple of str, optional
        Measure only these of the suite's devices. By default a suite's ``cuda`` points are left out
        (with a message) on a machine without CUDA.
    progress : bool
        Show a progress bar on ``stream``.
    measure_fn : callable
        The measuring function (tests substitute a fake).
    strict : bool
        Refuse to measure on a busy machine: before the run, and whenever a measurement finds other
        processes competing for its cores (that row is not written; ``--resume`` measures it later).
        Without it such rows are written, flagged in the ``busy`` column, with a warning.
    allow_mixed : bool
        Resume into results whose recorded environment (torch, CPU, threads, GPU, driver) differs
        from this machine's. Refused by default: such runs do not belong in one dataset.
    check_load : callable, optional
        ``check_load(threads) -> LoadReport`` before the run (default :func:`crossover.measurement.machine_load.check_machine`).
    shard : (int, int), optional
        ``(index, count)``: measure only this shard's points (:func:`shard_points`), with the drift
        reference of every round as the anchor every shard shares; recorded in the run's plan.

    Returns
    -------
    SweepSummary

    Raises
    ------
    ResultsError
        ``out_dir`` holds results (without ``resume``), holds another schema, or was measured in an
        environment that differs (without ``allow_mixed``).
    BusyMachineError
        ``strict`` and the machine is busy.
    """
    from .allocator import settle_allocator
    from .machine_load import check_machine
    from ..results.store import check_same_environment, make_results_directory

    start = time.perf_counter()
    stream = stream or sys.stderr
    out_dir = Path(out_dir)
    if (out_dir / "results.csv").exists() and not resume:
        raise ResultsError(
            f"{out_dir} already holds results; pass --resume to continue that run, or choose a new --out"
        )
    devices = resolve_devices(suite, devices, stream)
    env = environment(full=True)  # with torch's build (collect_env): recorded once per run
    machine = machine or env["machine"]
    env["machine"] = machine
    env["suite"] = suite.name
    env["plan"] = {"seed": suite.seed, "pair_by": list(suite.pair_by), "reference_every": suite.reference_every}
    if shard is not None:
        env["plan"]["shard"] = list(shard)
    if not allow_mixed:
        check_same_environment(out_dir, env)
    make_results_directory(out_dir)  # a bad --out fails here, before anything is measured
    cpu_threads = max((p.config.threads for p in suite.points(devices) if p.config.device == "cpu"), default=0)
    load = (check_load or check_machine)(cpu_threads or usable_cores())
    for warning in load.warnings:
        stream.write(f"crossover: warning: {warning}\n")
    if strict and load.busy:
        raise BusyMachineError(f"refusing to measure (--strict): {load.warnings[0]}")
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    writer = ResultsWriter(out_dir, run_id, env)
    settle_allocator()  # every point in a long-running process's allocator state (crossover.measurement.allocator)

    plan = plan_rounds(shard_points(suite.points(devices), suite, shard), seed=suite.seed, pair_by=suite.pair_by,
                       references=tuple(suite.reference_configs(devices)), reference_every=suite.reference_every)
    done = writer.existing_keys()
    summary = SweepSummary(planned=len(plan))
    todo = []
    for item in plan:
        row = skipped_row(item.point.config, "", run_id=run_id, suite=suite.name, sweep=item.point.sweep,
                          machine=machine, round_index=item.round)
        if point_key(row) in done:
            summary.already_done += 1
        else:
            todo.append(item)
    if summary.already_done:
        stream.write(f"crossover: resuming; {summary.already_done} of {len(plan)} points already done\n")

    bar = Progress(len(todo), stream=stream, enabled=progress,
                   weights=[_expected_cost_s(item.point.config, suite) for item in todo])
    n_rounds = max((item.round for item in plan), default=0) + 1
    for item in todo:
        point, config = item.point, item.point.config
        context = dict(run_id=run_id, suite=suite.name, sweep=point.sweep, machine=machine,
                       round_index=item.round, sequence=item.sequence)
        label = (
            (f"round {item.round + 1}/{n_rounds} " if n_rounds > 1 else "")
            + ("reference " if item.is_reference else "")
            + f"{config.device} d={config.d_model} L={config.n_layers} B={config.batch_size} "
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
                measurement = measure_fn(config, suite.timing, profile=suite.profile and not item.is_reference,
                                         check_memory=False)
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
        busy = measurement.load is not None and measurement.load.busy
        if busy and strict:
            raise BusyMachineError(
                f"stopped (--strict) before writing {label}: {measurement.load.warnings[0]}; "
                "results so far are kept, continue with --resume once the machine is quiet"
            )
        writer.append(measurement_row(measurement, **context))
        summary.measured += 1
        if busy:
            summary.busy += 1
            bar.note(f"warning: busy machine at {label}: {measurement.load.warnings[0]}")
        bar.update(f"{label}: {format_seconds(measurement.timing.median_s)}")
    summary.elapsed_s = time.perf_counter() - start
    if summary.busy:
        stream.write(f"crossover: warning: {summary.busy} of {summary.measured} measurements ran on a busy "
                     "machine (column 'busy'); re-measure them on a quiet machine\n")
    return summary


def _expected_cost_s(config: Config, suite: Suite) -> float:
    """A rough duration of one measurement (for the ETA): its time budget, or a few steps of it when a
    step takes longer, plus building the model (weights at ~1 GB/s)."""
    step_guess_s = config.flops / 20e9 + config.n_layers * 10e-6
    build_s = config.params * config.bytes_per_element / 1e9
    compile_s = 5.0 if config.mode == "compile" else 0.0
    return suite.timing.warmup_s + max(suite.timing.max_run_time_s, 3 * step_guess_s) + build_s + compile_s


def _free_device_memory(device: str) -> None:
    import gc

    gc.collect()
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()
