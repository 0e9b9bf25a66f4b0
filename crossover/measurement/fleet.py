"""A fleet: one suite measured on many nodes with submitit (SLURM job arrays, or locally), its jobs
listed, and the failed ones started again.

A latency is a property of one machine, so a fleet does not split a computation: it measures many
machines. Each job runs on a node of its own (:mod:`crossover.measurement.fleet_job`): one per
target (a partition or node kind, :mod:`crossover.measurement.fleet_targets`), or ``shards`` jobs per
target splitting the suite's points (:func:`crossover.measurement.sweep.shard_points`), every one of
them measuring the suite's anchor. The fleet's directory holds::

    fleet.json                the fleet: suite, targets, executor, plan, and every job with its attempts
    suite.toml, targets.toml  the copies the jobs read
    submitit/                 submitit's pickles and logs, one folder per job id
    <machine>/<job id>/       what each job writes (see crossover.measurement.fleet_job)

On SLURM every target's jobs go in one job array and :func:`submit` returns at once; the local
executor runs its jobs one after another (two timings at once on one machine spoil both) and the
debug executor runs them in this process, both waiting for each. :func:`fleet_status` says where each
job is, :func:`resubmit` starts the failed, preempted and missing ones again; they resume.
submitit is imported only here and in :mod:`crossover.measurement.fleet_targets`, when a fleet is
submitted or asked about, with one line where it is missing.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import shutil
import socket
import sys
from pathlib import Path
from typing import Optional, TextIO

from ..errors import ConfigError
from .fleet_job import find_job_dir, job_spec, process_start, read_job, run_job, write_json
from .fleet_targets import DEFAULT_TARGET, Target, check_parameters, executor_parameters, import_submitit, load_targets

__all__ = ["FLEET_FILE", "FLEET_SCHEMA", "EXECUTORS", "JOB_STATES", "plan_fleet", "read_fleet", "submit",
           "run_fleet", "fleet_status", "resubmit", "fleet_targets", "job_keys_to_resubmit", "fleet_prices",
           "compare_fleet_nodes"]

FLEET_FILE = "fleet.json"
FLEET_SCHEMA = "crossover-fleet"
SUITE_COPY = "suite.toml"
TARGETS_COPY = "targets.toml"
SUBMITIT_DIR = "submitit"
#: submitit's executors: SLURM, subprocesses of this machine one at a time, or this very process.
EXECUTORS = ("slurm", "local", "debug")
#: What :func:`fleet_status` calls a job.
JOB_STATES = ("done", "running", "pending", "failed", "preempted", "missing")
#: States :func:`resubmit` starts again.
RESUBMIT_STATES = ("failed", "preempted", "missing")
#: SLURM states (sacct, through submitit) of a job whose record still says running, as a fleet state.
_SLURM_STATES = {"RUNNING": "running", "PENDING": "pending", "REQUEUED": "preempted", "PREEMPTED": "preempted",
                 "NODE_FAIL": "preempted", "TIMEOUT": "failed", "CANCELLED": "failed", "FAILED": "failed",
                 "OUT_OF_MEMORY": "failed", "COMPLETED": "failed"}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def read_fleet(fleet_dir) -> dict:
    """The fleet's ``fleet.json``.

    Raises
    ------
    ConfigError
        ``fleet_dir`` holds no fleet.
    """
    path = Path(fleet_dir) / FLEET_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        raise ConfigError(f"{fleet_dir} holds no fleet ({FLEET_FILE} missing or unreadable): "
                          "start one with crossover fleet run") from None
    if data.get("schema") != FLEET_SCHEMA:
        raise ConfigError(f"{path} is not a crossover fleet file")
    return data


def fleet_targets(fleet: dict) -> dict:
    """``{target name: Target}`` of a fleet (as :func:`plan_fleet` stored them)."""
    return {t["name"]: Target(**t) for t in fleet["targets"]}


def plan_fleet(suite_path, out_dir, *, executor: str, targets_path=None, shards: int = 1, plan: str = "quick",
               devices: Optional[tuple] = None, strict: bool = False, dry_run: bool = False) -> dict:
    """Write a new fleet's ``fleet.json`` (its jobs, none submitted yet) and the copies its jobs read.

    Parameters
    ----------
    suite_path : path
        The suite (TOML) every job measures, or its shard.
    out_dir : path
        The fleet's directory (on SLURM: on a filesystem the nodes share); must not hold a fleet.
    executor : {"slurm", "local", "debug"}
    targets_path : path, optional
        A targets file (:mod:`crossover.measurement.fleet_targets`); default: one target, the
        scheduler's default node.
    shards : int
        Jobs per target, each measuring a shard of the suite.
    plan : {"smoke", "quick"}
        The jobs' calibration, noise floor and peaks (:data:`crossover.measurement.fleet_job.PLANS`).
    devices : tuple of str, optional
        The suite's devices to measure (default: each node measures those it has).
    strict : bool
        A busy node fails its job.
    dry_run : bool
        Check everything and return the fleet, writing nothing (SLURM need not be here).

    Returns
    -------
    dict
        The fleet (what ``fleet.json`` holds).

    Raises
    ------
    ConfigError
        An unknown executor or plan, a directory that holds a fleet, bad targets, more shards than the
        suite has groups of points, parameters submitit refuses.
    """
    from .fleet_job import PLANS
    from .suites import load_suite
    from .sweep import pair_key

    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; expected one of {', '.join(EXECUTORS)}")
    if plan not in PLANS:
        raise ConfigError(f"unknown plan {plan!r}; expected one of {', '.join(PLANS)}")
    out_dir = Path(out_dir).resolve()
    if (out_dir / FLEET_FILE).exists():
        raise ConfigError(f"{out_dir} already holds a fleet: see crossover fleet status {out_dir}, or "
                          f"crossover fleet resubmit {out_dir} to complete it; choose a new --out for another")
    suite = load_suite(suite_path)
    groups = {pair_key(p.config, suite.pair_by) for p in suite.points(devices or suite.devices)}
    if shards > len(groups):
        raise ConfigError(f"--shards {shards} is more than the {len(groups)} groups of points suite "
                          f"{suite.name!r} has: some shards would measure nothing")
    targets = load_targets(targets_path) if targets_path else (DEFAULT_TARGET,)
    import_submitit()  # the one clear line where it is missing, before anything is written
    if executor == "slurm" and not dry_run and shutil.which("sbatch") is None:
        raise ConfigError("--executor slurm submits with SLURM's sbatch, which this machine does not have: run it "
                          "on the cluster's login node, or use --executor local to measure this machine")
    jobs = []
    for target in targets:
        check_parameters(executor_parameters(target), out_dir / SUBMITIT_DIR)
        for index in range(shards):
            key = target.name if shards == 1 else f"{target.name}-shard{index + 1}of{shards}"
            jobs.append({"key": key, "target": target.name, "shard": [index, shards] if shards > 1 else None,
                         "attempts": []})
    fleet = {"schema": FLEET_SCHEMA, "schema_version": 1, "created_utc": _now(), "suite": SUITE_COPY,
             "suite_name": suite.name, "suite_source": str(Path(suite_path).resolve()), "executor": executor,
             "plan": plan, "shards": shards, "devices": list(devices) if devices else None, "strict": bool(strict),
             "targets": [t.to_json() for t in targets], "jobs": jobs}
    if dry_run:
        return fleet
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(suite_path, out_dir / SUITE_COPY)
    if targets_path:
        shutil.copyfile(targets_path, out_dir / TARGETS_COPY)
    write_json(out_dir / FLEET_FILE, fleet)
    return fleet


def _executor(fleet_dir: Path, name: str, target: Target):
    submitit = import_submitit()
    executor = submitit.AutoExecutor(folder=str(fleet_dir / SUBMITIT_DIR / "%j"), cluster=name)
    parameters = executor_parameters(target)
    if name == "local" and "gpus_per_node" not in parameters:
        # submitit's local executor sets CUDA_VISIBLE_DEVICES to the GPUs asked for: none would hide them all
        from .environment import cuda_available

        if cuda_available():
            import torch

            parameters["gpus_per_node"] = torch.cuda.device_count()
    executor.update_parameters(**parameters)
    return executor


def _spec(fleet_dir: Path, fleet: dict, job: dict) -> dict:
    return job_spec(fleet_dir, job["key"], target=job["target"], suite=str(fleet_dir / fleet["suite"]),
                    plan=fleet["plan"], shard=tuple(job["shard"]) if job.get("shard") else None,
                    devices=tuple(fleet["devices"]) if fleet.get("devices") else None, strict=fleet["strict"])


def submit(fleet_dir, keys: Optional[list] = None, *, stream: Optional[TextIO] = None) -> list:
    """Submit the fleet's jobs ``keys`` (default: all) and record each attempt in ``fleet.json``.

    SLURM: each target's jobs as one job array, returning at once. Local and debug: one job at a
    time, each waited for (a job killed or failed is recorded, and the next one runs).

    Returns
    -------
    list of dict
        Per job: ``key``, ``job_id`` and, where it was waited for, ``state`` and ``error``.
    """
    stream = stream or sys.stderr
    fleet_dir = Path(fleet_dir).resolve()
    fleet = read_fleet(fleet_dir)
    targets = fleet_targets(fleet)
    chosen = [job for job in fleet["jobs"] if keys is None or job["key"] in keys]
    out = []

    def record(job: dict, job_id: str) -> None:
        job["attempts"].append({"job_id": str(job_id), "executor": fleet["executor"], "submitted_utc": _now(),
                                "submitted_from": socket.gethostname()})
        write_json(fleet_dir / FLEET_FILE, fleet)

    if fleet["executor"] == "slurm":
        for name in dict.fromkeys(job["target"] for job in chosen):
            executor = _executor(fleet_dir, "slurm", targets[name])
            mine = [job for job in chosen if job["target"] == name]
            with executor.batch():
                submitted = [executor.submit(run_job, _spec(fleet_dir, fleet, job)) for job in mine]
            for job, handle in zip(mine, submitted):
                record(job, handle.job_id)
                stream.write(f"crossover: submitted {job['key']} as SLURM job {handle.job_id}\n")
                out.append({"key": job["key"], "job_id": handle.job_id, "state": "pending", "error": None})
        return out
    for job in chosen:
        executor = _executor(fleet_dir, fleet["executor"], targets[job["target"]])
        handle = executor.submit(run_job, _spec(fleet_dir, fleet, job))
        record(job, handle.job_id)
        stream.write(f"crossover: {job['key']}: job {handle.job_id} started ({fleet['executor']} executor)\n")
        stream.flush()
        try:
            summary = handle.result()
        except KeyboardInterrupt:
            handle.cancel()
            raise
        except Exception as error:  # noqa: BLE001 - a killed or crashed job: recorded, the next one runs
            text = f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"
            if type(error).__name__ == "UncompletedJobError":
                text = (f"ended without a result (killed, cancelled, out of memory?); submitit's log: "
                        f"{handle.paths.stderr}")
            summary = {"state": "failed", "error": text}
        state = summary.get("state", "failed")
        stream.write(f"crossover: {job['key']}: job {handle.job_id} {state}"
                     + (f": {summary['error']}" if summary.get("error") else "") + "\n")
        out.append({"key": job["key"], "job_id": str(handle.job_id), "state": state, "error": summary.get("error")})
    return out


def run_fleet(suite_path, out_dir, *, executor: str, targets_path=None, shards: int = 1, plan: str = "quick",
              devices: Optional[tuple] = None, strict: bool = False, stream: Optional[TextIO] = None) -> list:
    """Plan a new fleet (:func:`plan_fleet`) and submit all its jobs (:func:`submit`)."""
    plan_fleet(suite_path, out_dir, executor=executor, targets_path=targets_path, shards=shards, plan=plan,
               devices=devices, strict=strict)
    return submit(out_dir, stream=stream)


def _rows_written(job_dir: Optional[Path]) -> int:
    if job_dir is None or not (job_dir / "results.csv").exists():
        return 0
    with open(job_dir / "results.csv", "rb") as handle:
        return max(sum(1 for line in handle if line.endswith(b"\n")) - 1, 0)


def _slurm_state(fleet_dir: Path, job_id: str) -> str:
    try:
        submitit = import_submitit()
        return str(submitit.SlurmJob(folder=str(fleet_dir / SUBMITIT_DIR / "%j"), job_id=job_id).state).upper()
    except Exception:  # noqa: BLE001 - no sacct here, or it failed: the state is unknown
        return "UNKNOWN"


def _submission_state(fleet_dir: Path, executor: str, submitted: dict) -> Optional[tuple]:
    """(state, detail) of the latest submission while the scheduler still holds it, or None where it
    does not (it ended, or this machine cannot ask)."""
    if executor == "slurm":
        slurm = _slurm_state(fleet_dir, submitted["job_id"])
        if slurm == "UNKNOWN":
            return None
        return _SLURM_STATES.get(slurm.split()[0], "failed"), f"SLURM: {slurm}"
    if executor == "local" and process_start(int(submitted["job_id"])) is not None:
        return "pending", "its process started, no record of it yet"  # the job id is its controller's pid
    return None


def _state(fleet_dir: Path, executor: str, record: Optional[dict], submitted: Optional[dict]) -> tuple:
    """(state, detail) of a job from its record and its latest submission.

    The record (``job.json``) says what the job's latest *started* attempt did. A submission newer than
    that (resubmitted, still queued) is asked of the scheduler, so a job waiting in SLURM's queue is
    ``pending``, not the ``failed`` of the attempt before it, and is not submitted twice.
    """
    started = {a.get("job_id") for a in (record or {}).get("attempts", [])}
    if submitted is not None and submitted["job_id"] not in started:
        live = _submission_state(fleet_dir, executor, submitted)
        if live is not None and (live[0] in ("pending", "running") or record is None):
            return live
        if live is None and executor == "slurm":  # not asked twice: a queued job must not be submitted again
            return "pending", f"submitted as job {submitted['job_id']}; SLURM state unknown here (no sacct)"
        if record is None:
            return "missing", "submitted, never started"
    if record is None:
        return "missing", "never submitted"
    if record.get("state") in ("done", "failed"):
        return record["state"], record.get("error") or ""
    if executor == "slurm":  # the record says running: does SLURM agree?
        live = _submission_state(fleet_dir, executor, submitted) if submitted else None
        return live if live is not None else ("running", "SLURM state unknown here (no sacct)")
    attempt = record["attempts"][-1]
    if attempt.get("host") != socket.gethostname():
        return "running", f"on {attempt.get('host')}: cannot check from here"
    start = process_start(int(attempt.get("pid", 0)))
    if start is not None and attempt.get("pid_start") in (None, start):
        return "running", f"pid {attempt['pid']}"
    return "failed", "its process is gone without finishing (killed?)"


def fleet_status(fleet_dir) -> list:
    """Where each job of the fleet is.

    Returns
    -------
    list of dict
        Per job, in the fleet's order: ``key``, ``target``, ``shard`` (``"1/2"`` or None), ``machine``,
        ``job_id`` (the latest attempt's), ``attempts``, ``host``, ``state`` (one of
        :data:`JOB_STATES`), ``detail``, ``step`` (the one it is at, or failed at), ``rows`` (rows of
        results written) and ``planned`` (measurements of its plan, once the job computed it), ``job_dir``.
    """
    fleet_dir = Path(fleet_dir).resolve()
    fleet = read_fleet(fleet_dir)
    rows = []
    for job in fleet["jobs"]:
        job_dir = find_job_dir(fleet_dir, job["key"])
        record = read_job(job_dir) if job_dir else None
        submitted = job["attempts"][-1] if job["attempts"] else None
        state, detail = _state(fleet_dir, fleet["executor"], record, submitted)
        attempt = (record or {}).get("attempts", [{}])[-1]
        shard = f"{job['shard'][0] + 1}/{job['shard'][1]}" if job.get("shard") else None
        rows.append({"key": job["key"], "target": job["target"], "shard": shard,
                     "machine": (record or {}).get("machine"), "job_id": (submitted or {}).get("job_id"),
                     "attempts": len(job["attempts"]), "host": attempt.get("host"), "state": state,
                     "detail": detail, "step": (record or {}).get("step"), "rows": _rows_written(job_dir),
                     "planned": (record or {}).get("planned_measurements"),
                     "job_dir": str(job_dir) if job_dir else None})
    return rows


def job_keys_to_resubmit(status: list) -> list:
    """The keys of the jobs in :data:`RESUBMIT_STATES` (failed, preempted, missing)."""
    return [row["key"] for row in status if row["state"] in RESUBMIT_STATES]


def resubmit(fleet_dir, *, stream: Optional[TextIO] = None) -> list:
    """Submit again every failed, preempted or missing job of the fleet; each resumes in its directory
    (the steps done are skipped, the sweep measures only what is missing). Returns :func:`submit`'s
    list (empty when every job is done or running)."""
    keys = job_keys_to_resubmit(fleet_status(fleet_dir))
    return submit(fleet_dir, keys, stream=stream) if keys else []


def fleet_prices(fleet_dir) -> dict:
    """``{machine: {"usd_per_hour", "source", "target"}}``: each priced target's price, for the machine
    kind its jobs ran on (as their records say; a target none of whose jobs has started has none yet).

    Raises
    ------
    ConfigError
        Two targets ran on one machine kind at different prices.
    """
    fleet = read_fleet(fleet_dir)
    targets = fleet_targets(fleet)
    prices = {}
    for row in fleet_status(fleet_dir):
        target = targets[row["target"]]
        if row["machine"] is None or target.usd_per_hour is None:
            continue
        price = {"usd_per_hour": float(target.usd_per_hour), "source": target.source, "target": target.name}
        known = prices.setdefault(row["machine"], price)
        if known["usd_per_hour"] != price["usd_per_hour"]:
            raise ConfigError(f"targets {known['target']!r} and {target.name!r} both ran on machine "
                              f"{row['machine']} at different prices; give one price per machine kind")
    return prices


def compare_fleet_nodes(results, *, statistic: str = "p10", n_boot: int = 1000):
    """Every node of each machine kind against the kind's first node (:func:`crossover.results.anchors.compare_nodes`),
    unscaled, on the anchor and the points both measured, each pair judged against the larger of the
    two nodes' noise floors (their ``noise.json``: the mean run-to-run deviation of ``statistic`` over
    its sizes; 2% where a node has none).

    Parameters
    ----------
    results : path or list of paths
        A fleet's directory, or any results directories (each a node).

    Returns
    -------
    DataFrame
        :func:`crossover.results.anchors.compare_nodes`' table.
    """
    from ..results.anchors import compare_nodes
    from ..results.store import load_results
    from .noise_file import read_noise

    paths = [results] if isinstance(results, (str, Path)) else list(results)
    frame = load_results(paths, raw=True, include_reference=True, anchor_scale=False)
    frame = frame.assign(results_dir=[str(Path(d).resolve()) for d in frame["results_dir"]])
    thresholds = {}
    for data in read_noise(sorted(set(frame["results_dir"]))):
        summary = data.get("summary", {}).get(statistic) or data.get("summary", {}).get("p10") or {}
        if summary.get("all") is not None and math.isfinite(summary["all"]):
            thresholds[str(Path(data["path"]).parent.resolve())] = float(summary["all"])
    return compare_nodes(frame, thresholds, statistic=statistic, n_boot=n_boot)
