"""One fleet job, on its node: the environment, the machine check, the calibrations, the noise floor,
the peaks and the suite (or its shard), into ``DIR/<machine>/<job id>/``.

What a job receives is a plain dict of paths and names (:func:`job_spec`), never a pickled model or
frame: submitit pickles it with :func:`run_job` and the node reads the suite from the fleet's
directory. The job writes, in its directory:

==========================  ==========================================================================
``job.json``                its record (:data:`crossover.results.anchors.JOB_SCHEMA`): key, target,
                            shard, every attempt (job id, host, pid, start, end), its state
                            (``running``, ``done``, ``failed``), the step it is at, each step's
                            outcome and seconds, the machine check, the hardware fingerprint, the
                            measurements planned; rewritten atomically as it goes
``environment.json``        the node's environment (:func:`crossover.measurement.environment.environment`,
                            with its host name, scheduler job and hardware fingerprint)
``calibration/<device>/``   ``crossover calibrate`` of each device (``profile.json``, ``calibration.csv.gz``)
``noise.json``              ``crossover noise``: the node's run-to-run noise floor
``peaks.json``              ``crossover peaks`` of every device
``results.csv``,            ``crossover sweep`` of the suite or its shard (every round opens with the
``metadata.json``           anchor, the drift reference every node measures)
``logs/<step>.log``         each step's output
==========================  ==========================================================================

Each step but the first two runs as ``python -m crossover ...`` in a process of its own: nothing a
calibration leaves in torch's allocator or thread pools reaches the suite's timings, a failed step is
recorded with its exit status and log, and the job runs exactly the commands a user would type. A
job started again (``crossover fleet resubmit``) finds its directory by its key, skips the steps whose
output is there and resumes the sweep (``--resume``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..results.anchors import JOB_FILE, JOB_SCHEMA

__all__ = ["PLANS", "Step", "job_spec", "job_steps", "run_job", "find_job_dir", "read_job", "write_json",
           "process_start", "ENVIRONMENT_FILE"]

ENVIRONMENT_FILE = "environment.json"
#: The extra arguments of each step, per plan: ``smoke`` checks an installation in seconds (too coarse
#: to predict with), ``quick`` is the documented quick measurement of each (calibration ~70 s, noise
#: ~2 min, peaks ~10 s on the 2-core VM).
PLANS = {
    "smoke": {"calibrate": ("--smoke",), "noise": ("--windows", "2", "--rounds", "3", "--pause-s", "0",
                                                  "--span-s", "0"), "peaks": ("--smoke",)},
    "quick": {"calibrate": ("--quick",), "noise": (), "peaks": ()},
}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` atomically (a reader never sees half a file)."""
    from ..jsonable import to_jsonable

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(to_jsonable(data), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def process_start(pid: int) -> Optional[str]:
    """The start time of process ``pid`` (clock ticks since boot, from /proc), or None where it is not
    running (or /proc cannot say): with the pid, it names one process, as a pid alone may be reused."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError, ValueError):
        return None


def read_job(job_dir) -> Optional[dict]:
    """A job directory's ``job.json``, or None where there is none (or it is not a job record)."""
    try:
        data = json.loads((Path(job_dir) / JOB_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == JOB_SCHEMA else None


def find_job_dir(fleet_dir, key: str) -> Optional[Path]:
    """The directory ``DIR/<machine>/<job id>/`` of the fleet's job ``key`` (None: not started yet)."""
    for path in sorted(Path(fleet_dir).glob(f"*/*/{JOB_FILE}")):
        record = read_job(path.parent)
        if record is not None and record.get("key") == key:
            return path.parent
    return None


def job_spec(fleet_dir, key: str, *, target: str, suite: str, plan: str, shard: Optional[tuple] = None,
             devices: Optional[tuple] = None, strict: bool = False) -> dict:
    """What a job is told: paths and names only (submitit pickles it for the node).

    Parameters
    ----------
    fleet_dir : path
        The fleet's directory (on a cluster: on a filesystem the nodes share).
    key : str
        The job's name in the fleet (``fleet.json``), e.g. ``"node-shard1of2"``.
    target : str
        The target (partition or node kind) it runs on.
    suite : str
        The suite file the job measures (the fleet's copy, ``DIR/suite.toml``).
    plan : {"smoke", "quick"}
        How long its calibration, noise floor and peaks take (:data:`PLANS`).
    shard : (int, int), optional
        ``(index, count)`` of the suite's points (:func:`crossover.measurement.sweep.shard_points`).
    devices : tuple of str, optional
        The suite's devices to measure (default: the suite's, less CUDA where the node has none).
    strict : bool
        Fail the job on a busy node, and stop its sweep when a measurement finds one.
    """
    if plan not in PLANS:
        raise ValueError(f"unknown plan {plan!r}; expected one of {sorted(PLANS)}")
    return {"fleet_dir": str(Path(fleet_dir).resolve()), "key": key, "target": target,
            "suite": str(Path(suite).resolve()), "plan": plan, "shard": list(shard) if shard else None,
            "devices": list(devices) if devices else None, "strict": bool(strict)}


@dataclass(frozen=True)
class Step:
    """One command of a job: ``crossover`` with ``argv``; done once ``output`` (relative to the job's
    directory) exists, or, with ``output`` None, run every time (the sweep, which resumes itself)."""

    name: str
    argv: tuple
    output: Optional[str] = None


def job_steps(spec: dict, job_dir: Path, devices: tuple) -> list:
    """The commands of a job (see the module docstring), in order, for ``devices`` of this node."""
    extra = PLANS[spec["plan"]]
    steps = [Step(f"calibrate-{d}", ("calibrate", "--device", d, "--out", str(job_dir / "calibration" / d), "--quiet",
                                     *extra["calibrate"]), f"calibration/{d}/profile.json") for d in devices]
    steps.append(Step("noise", ("noise", "--out", str(job_dir), *extra["noise"]), "noise.json"))
    steps.append(Step("peaks", ("peaks", "--devices", ",".join(devices), "--out", str(job_dir), *extra["peaks"]),
                      "peaks.json"))
    sweep = ["sweep", spec["suite"], "--out", str(job_dir), "--resume", "--quiet", "--devices", ",".join(devices)]
    if spec.get("shard"):
        index, count = spec["shard"]
        sweep += ["--shard", f"{index + 1}/{count}"]
    if spec.get("strict"):
        sweep.append("--strict")
    steps.append(Step("sweep", tuple(sweep)))
    return steps


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the step's process gets SIGKILL when the job's process dies (a killed job leaves no orphan
    still timing on the node)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_step(step: Step, job_dir: Path) -> int:
    """Run one step's command, its output appended to ``logs/<name>.log``; its exit status."""
    import crossover

    log = job_dir / "logs" / f"{step.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    package_root = str(Path(crossover.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ crossover {' '.join(step.argv)}   # {_now()}\n")
        handle.flush()
        process = subprocess.run([sys.executable, "-m", "crossover", *step.argv], stdout=handle,
                                 stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL,
                                 preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    return process.returncode


def _log_tail(job_dir: Path, step: Step, lines: int = 5) -> str:
    try:
        text = (job_dir / "logs" / f"{step.name}.log").read_text(encoding="utf-8")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def _planned_measurements(spec: dict, devices: tuple) -> int:
    from .suites import load_suite
    from .sweep import plan_rounds, shard_points

    suite = load_suite(spec["suite"])
    points = shard_points(suite.points(devices), suite, tuple(spec["shard"]) if spec.get("shard") else None)
    return len(plan_rounds(points, seed=suite.seed, pair_by=suite.pair_by,
                           references=tuple(suite.reference_configs(devices)), reference_every=suite.reference_every))


def _node_devices(spec: dict) -> tuple:
    from .suites import load_suite
    from .sweep import resolve_devices

    import io

    return tuple(resolve_devices(load_suite(spec["suite"]), tuple(spec["devices"]) if spec.get("devices") else None,
                                 stream=io.StringIO()))


def run_job(spec: dict) -> dict:
    """Run one fleet job on this node (what submitit calls; see the module docstring).

    Never raises for a failed step (the debug executor would open a debugger): the failure is in the
    job's ``job.json`` (``state: failed``, the step, its exit status and the end of its log) and in
    the returned summary.

    Parameters
    ----------
    spec : dict
        From :func:`job_spec`.

    Returns
    -------
    dict
        ``key``, ``job_id``, ``host``, ``job_dir``, ``state`` (``done`` or ``failed``), ``error``.
    """
    from .environment import environment, machine_label, scheduler_job
    from .machine_load import check_machine
    from .procfs import usable_cores

    fleet_dir = Path(spec["fleet_dir"])
    scheduler = scheduler_job() or {"scheduler": "none", "job_id": f"pid{os.getpid()}"}
    job_id, host, machine = scheduler["job_id"], socket.gethostname(), machine_label()
    job_dir = find_job_dir(fleet_dir, spec["key"]) or fleet_dir / machine / job_id
    record = read_job(job_dir) or {"schema": JOB_SCHEMA, "schema_version": 1, "key": spec["key"],
                                   "target": spec["target"], "shard": spec.get("shard"), "plan": spec["plan"],
                                   "machine": machine, "attempts": []}
    record["attempts"].append({"job_id": job_id, "scheduler": scheduler["scheduler"], "host": host,
                               "pid": os.getpid(), "pid_start": process_start(os.getpid()), "started_utc": _now(),
                               "ended_utc": None})
    record.update(state="running", step="environment", error=None, steps={**record.get("steps", {})})

    def save(**changes) -> None:
        record.update(changes)
        write_json(job_dir / JOB_FILE, record)

    save()
    try:
        env = environment(full=True)
        env["fleet_job"] = {"key": spec["key"], "target": spec["target"], "job_id": job_id}
        write_json(job_dir / ENVIRONMENT_FILE, env)
        record["hardware"] = env.get("hardware")
        save(step="machine check")
        load = check_machine(usable_cores())
        check = {"busy": bool(load.busy), "warnings": list(load.warnings), "utc": _now()}
        record["machine_check"] = record["attempts"][-1]["machine_check"] = check  # the latest, and each attempt's
        if spec.get("strict") and load.busy:
            save(state="failed", step="machine check", error=f"busy node (strict): {load.warnings[0]}")
            return _summary(record, job_dir)
        save(step="plan")
        devices = _node_devices(spec)
        save(devices=list(devices), planned_measurements=_planned_measurements(spec, devices))
        for step in job_steps(spec, job_dir, devices):
            if step.output and (job_dir / step.output).exists():
                record["steps"][step.name] = {"state": "done before", "elapsed_s": None}
                continue
            save(step=step.name)
            start_s = time.perf_counter()
            status = _run_step(step, job_dir)
            elapsed_s = round(time.perf_counter() - start_s, 1)
            if status != 0:
                record["steps"][step.name] = {"state": f"failed (exit status {status})", "elapsed_s": elapsed_s}
                save(state="failed", error=f"{step.name} exited with status {status}: {_log_tail(job_dir, step)}")
                return _summary(record, job_dir)
            record["steps"][step.name] = {"state": "done", "elapsed_s": elapsed_s}
        save(state="done", step=None)
    except Exception as error:  # noqa: BLE001 - recorded, never raised (see the docstring)
        save(state="failed", error=f"{type(error).__name__}: {error}")
    finally:
        record["attempts"][-1]["ended_utc"] = _now()
        write_json(job_dir / JOB_FILE, record)
    return _summary(record, job_dir)


def _summary(record: dict, job_dir: Path) -> dict:
    attempt = record["attempts"][-1]
    return {"key": record["key"], "job_id": attempt["job_id"], "host": attempt["host"], "job_dir": str(job_dir),
            "state": record["state"], "error": record.get("error")}
