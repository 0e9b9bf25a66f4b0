"""The zoo on a GPU machine: every model measured on each device and predicted from the run's profiles.

    python experiments/gpu_zoo.py --out DIR --devices cpu,cuda --profiles PROFILES [--rounds 8]
    python experiments/gpu_zoo.py --profile-steps --out DIR

Part of ``experiments/gpu_run.sh``. For every model of ``experiments/zoo`` (each module's
``INPUT_SHAPE``; ``WORKLOADS`` where a module names several, else the forward pass) and each device,
the steps at batch 1, 8, 64 and 512 are predicted from the profiles in ``PROFILES/<device>``
(``crossover.decide``: ``predict-<model>-<workload>.json``), then timed, every model, workload and batch
size of a device in the same shuffled rounds (:func:`measure_zoo`; ``--references``: the calibration's
reference models among them), the devices' rounds in turn. Each model's file (what ``crossover measure
--model --json`` writes, as ``measure-<model>-<workload>-<device>.json``) is rewritten after every
round, so a stage stopped at its time limit keeps its whole rounds. ``DIR/summary.md`` tabulates the errors per model and device (latency = the 10th
percentile of the pooled repeats on both sides) and the predicted and measured crossovers.

``--profile-steps`` records a few steps of the MNIST MLP and the toy at batch 1 on the GPU with
``torch.profiler`` and prints each op's host time, each kernel's device time and the step's wall time:
what a synchronised step pays beyond the calibration's queued primitives (the H200 run measured the
MNIST MLP's forward pass at 113-142 µs against 56 µs predicted, with ~40 µs of launches).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path
from typing import Optional

ZOO = Path(__file__).resolve().parent / "zoo"
BATCH_SIZES = (1, 8, 64, 512)
#: Models in the order they are predicted (and listed): cheap steps first.
ORDER = ("mnist_mlp", "toy", "lenet5", "transformer_layer")


def zoo_entries() -> list:
    """(name, input shape, workloads, input dtype) of every zoo module, in :data:`ORDER` then by name."""
    entries = []
    for path in sorted(ZOO.glob("*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if hasattr(module, "model") and hasattr(module, "INPUT_SHAPE"):
            entries.append((path.stem, tuple(module.INPUT_SHAPE), tuple(getattr(module, "WORKLOADS", ("forward",))),
                            getattr(module, "INPUT_DTYPE", "float32")))
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(entries, key=lambda e: (rank.get(e[0], len(ORDER)), e[0]))


def _entry_steps(entries, device: str) -> list:
    """``((model, workload, batch), step)`` of every zoo entry on ``device``: one model instance per model
    and workload (a step sets its mode once), its steps at :data:`BATCH_SIZES`."""
    from crossover.measurement.module_rounds import example_input, make_module_step
    from crossover.measurement.user_module import build_model, input_dtype

    points = []
    for name, shape, workloads, dtype in entries:
        for workload in workloads:
            model = build_model(f"{ZOO / name}.py:model").to(device)
            points += [((name, workload, b), make_module_step(
                model, example_input(shape, b, dtype=input_dtype(dtype), device=device, model=model), workload))
                for b in BATCH_SIZES]
    return points


#: The reference models timed beside the zoo: the first two of the calibration's (the zoo stage's time on the
#: GPU machine is short; two tell a model's miss from the process's as well as four).
ZOO_REFERENCES = ("mlp", "cnn")


def _reference_steps(device: str) -> list:
    """``((reference_<name>, workload, batch), step)`` of the calibration's reference models at the quick
    plan's batch sizes, forward and training steps."""
    from crossover.measurement.module_rounds import example_input, make_module_step
    from crossover.opcost.calibration_plan import PLANS, REFERENCE_MODELS, reference_model

    batches = {}
    for name, batch in PLANS["quick"].reference_models:
        if name in ZOO_REFERENCES:
            batches.setdefault(name, []).append(batch)
    points = []
    for name, sizes in batches.items():
        for workload in ("forward", "train"):
            model = reference_model(name).to(device)
            points += [((f"reference_{name}", workload, b), make_module_step(
                model, example_input(REFERENCE_MODELS[name], b, device=device), workload)) for b in sizes]
    return points


def _calibration_references(profiles: Path, device: str) -> dict:
    """What the calibration measured of its reference models: ``{(reference_<name>, workload, batch): s}``."""
    profile = profiles / device / "profile.json"
    known = json.loads(profile.read_text()).get("reference_models", []) if profile.is_file() else []
    return {(f"reference_{r['model']}", r["workload"], int(r["batch_size"])): r["measured_s"] for r in known}


def round_files(device: str, keys: list, visits: list, shapes: dict, rounds: int, threads: int,
                calibrated: dict, starts: Optional[dict] = None) -> tuple:
    """Each model's ``measure-<model>-<workload>-<device>.json`` content from the visits so far (the
    fields ``crossover measure --model --json`` writes for each point, and the file's ``rounds`` done of
    ``rounds_planned``; a reference model's with ``calibration_measured_s``; a point counted in ``starts``,
    ``{(model, workload, batch): threads started per step}``, with ``thread_starts``), in the order of ``keys``
    (the pool's ``(model, workload, batch)`` as planned), and their points as summary rows (a reference
    model's ``predicted_s`` is the calibration's measurement of it; a zoo model's is filled in later).
    Returns ``(files, rows)``: ``files`` maps each file's name to its JSON-able content. Pure."""
    from crossover.measurement.module_rounds import summarise_rounds

    done = len({v["round"] for v in visits})
    by_key = {}
    for v in visits:
        by_key.setdefault(v["key"], []).append(v)
    by_model = {}
    for key in keys:
        if key in by_key:
            by_model.setdefault(key[:2], []).append(key[2])
    files, rows = {}, []
    for (name, workload), batches in by_model.items():
        points = []
        for batch in batches:
            mine = by_key[(name, workload, batch)]
            stats = summarise_rounds(mine)
            device_stats = summarise_rounds(mine, device_time=True) if device == "cuda" else {"latency_s": float("nan")}
            counted = (starts or {}).get((name, workload, batch))
            points.append(dict(device=device, batch_size=batch, workload=workload, **stats,
                               device_latency_s=device_stats["latency_s"], threads=threads,
                               **({} if counted is None else {"thread_starts": counted})))
        reference = name.startswith("reference_")
        data = {"model": f"reference:{name[len('reference_'):]}" if reference else f"{ZOO / name}.py:model",
                "input_shape": list(shapes[name]), "workload": workload, "device": device, "threads": threads,
                "rounds": done, "rounds_planned": rounds, "statistic": "p10", "protocol": POOLED, "points": points}
        if reference:
            data["calibration_measured_s"] = {str(b): calibrated.get((name, workload, b)) for b in batches}
        files[f"measure-{name}-{workload}-{device}.json"] = data
        rows += [dict(model=name, workload=workload, device=device, batch_size=p["batch_size"],
                      measured_s=p["latency_s"], predicted_s=calibrated.get((name, workload, p["batch_size"])))
                 for p in points]
    return files, rows


def write_json_atomically(path: Path, data) -> None:
    """``data`` as JSON at ``path``, written beside it and renamed over it: a run stopped mid-write
    leaves the file as it was (each file says how many rounds it holds)."""
    import os

    from crossover.jsonable import to_jsonable

    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(to_jsonable(data), indent=2))
    os.replace(partial, path)


#: How the zoo is measured: every model, workload and batch size of one device in the same shuffled rounds
#: (with the calibration's reference models where asked), as the calibration measures its primitives.
POOLED = ("one pool: every model, workload and batch size of the device in the same shuffled rounds, "
          "as the calibration's primitives")


def host_thread_starts(steps: list, predicted: dict) -> dict:
    """``{(model, workload, batch): threads started per step}`` of the zoo's CPU steps at this process's thread
    count (:func:`crossover.opcost.thread_starts.count_thread_starts`), counted where a prediction would count
    them (:data:`~crossover.opcost.thread_starts.MIN_THREADS` threads or more, a step predicted under
    :data:`~crossover.opcost.thread_starts.PROBE_MAX_S`). Recorded in the measurement files, they go with the
    zoo to any machine that predicts it: an AMD machine's MKL starts none of the threads a 16-thread Intel host's
    narrowed teams start (``crossover.analysis.zoo_runs.recorded_starts``)."""
    import torch

    from crossover.opcost.thread_starts import MIN_THREADS, PROBE_MAX_S, count_thread_starts

    if torch.get_num_threads() < MIN_THREADS:
        return {}
    out = {}
    for (name, workload, batch), step in steps:
        latency_s = predicted.get((name, workload, "cpu", batch))
        if not name.startswith("reference_") and latency_s is not None and latency_s <= PROBE_MAX_S:
            counted = count_thread_starts(step, warmup=3, calls=6)
            if counted is not None:
                out[(name, workload, batch)] = counted
    return out


def measure_zoo(out: Path, devices, profiles: Path, rounds: int, rows: list, names=None,
                references: bool = False) -> list:
    """Predict every entry (or those in ``names``), then measure them on each device in one pool of
    shuffled rounds (:data:`POOLED`; with ``references`` the calibration's reference models in the same
    rounds; the devices' rounds in turn), rewriting each model's file and the summary rows in ``rows``
    after every round (so a run stopped part way keeps its whole rounds, on every device); returns ``rows``.

    Measured model by model, one model's rounds lasted a few seconds, and a launch-bound GPU step landed
    in whatever state the host was in for them: on the H100's third visit the MNIST MLP's forward pass
    took 155 µs where the same visit's calibration read its reference MLP, with more ops of the same
    kinds, at 72 (``crossover.analysis.visit_spread``). In one pool every model sees the same states as
    every other, and as the calibration does; the fourth visit, measured so, ran the reference steps 1.063x
    the calibration's time of them on the GPU (``experiments/zoo_check.py --set h100-run4``)."""
    import torch

    import crossover
    from crossover.measurement.module_rounds import measure_rounds

    out.mkdir(parents=True, exist_ok=True)
    found = [profiles / d for d in ("cpu", "cuda") if (profiles / d / "profile.json").is_file()]
    entries = [e for e in zoo_entries() if not names or e[0] in names]
    predicted = {}
    for name, shape, workloads, dtype in entries:
        for workload in workloads if found else ():
            decision = crossover.decide(model=f"{ZOO / name}.py:model", input_shape=shape, batch_size=list(BATCH_SIZES),
                                        workload=workload, profiles=found, input_dtype=dtype)
            (out / f"predict-{name}-{workload}.json").write_text(json.dumps(decision.to_json(), indent=2))
            predicted.update({(name, workload, d["device"], d["batch_size"]): d["latency_s"] for d in decision.devices})
    shapes = {name: shape for name, shape, _, _ in entries}
    if references:
        from crossover.opcost.calibration_plan import REFERENCE_MODELS

        shapes.update({f"reference_{name}": shape for name, shape in REFERENCE_MODELS.items()})
    steps = {d: (_reference_steps(d) if references else []) + _entry_steps(entries, d) for d in devices}
    calibrated = {d: _calibration_references(profiles, d) if references else {} for d in devices}
    starts = host_thread_starts(steps["cpu"], predicted) if "cpu" in steps else {}
    visits = {d: [] for d in devices}
    kept = len(rows)
    t0 = time.perf_counter()
    for r in range(rounds):  # the devices' rounds in turn: a stage stopped at its limit keeps both
        for i, device in enumerate(devices):  # each round and device its own shuffle
            done = measure_rounds(steps[device], rounds=1, seed=r * len(devices) + i, device=device)
            visits[device] += [dict(v, round=r) for v in done]
        measured, files = [], {}
        for device in devices:
            device_files, device_rows = round_files(device, [k for k, _ in steps[device]], visits[device], shapes,
                                                    rounds, torch.get_num_threads(), calibrated[device],
                                                    starts if device == "cpu" else None)
            files.update(device_files)
            for row in device_rows:
                if not row["model"].startswith("reference_"):
                    row["predicted_s"] = predicted.get((row["model"], row["workload"], device, row["batch_size"]))
                measured.append(row)
        rows[kept:] = measured
        for name, data in files.items():
            write_json_atomically(out / name, data)
        print(f"round {r + 1}/{rounds} on {', '.join(devices)} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return rows


def summary(rows: list) -> str:
    """The zoo's table: per model and device, the median and worst |predicted / measured - 1|."""
    import pandas as pd

    if not rows:
        return "## The zoo\n\nnothing measured\n"
    frame = pd.DataFrame(rows)
    frame["error_pct"] = 100 * (frame["predicted_s"].astype(float) / frame["measured_s"] - 1)
    lines = ["## The zoo (latency: 10th percentile of the pooled repeats)", "",
             "(reference_mlp, reference_cnn: the calibration's reference models measured again in this process; their "
             "'error' is this process's measurement against the calibration's own, not a prediction)", "",
             "| model | workload | device | measured (µs) by batch | median / worst error |",
             "| --- | --- | --- | --- | --- |"]
    for (model, workload, device), group in frame.groupby(["model", "workload", "device"], sort=False):
        measured = ", ".join(f"{b}: {t * 1e6:.0f}" for b, t in zip(group["batch_size"], group["measured_s"]))
        errors = group["error_pct"].abs().dropna()
        error = f"{errors.median():.0f}% / {errors.max():.0f}%" if len(errors) else "no prediction"
        lines.append(f"| {model} | {workload} | {device} | {measured} | {error} |")
    return "\n".join(lines) + "\n"


def profile_steps(out: Path, names=("mnist_mlp", "toy"), device: str = "cuda", batches=None) -> None:
    """torch.profiler's view of a few synchronised steps of the zoo models ``names`` on ``device`` at
    ``batches``: on the GPU the forward pass (default batch 1); on the CPU every workload (default batch 1
    and 8: the Xeon hosts run some steps slower at batch 1 than at 8 at 16 threads, not at one thread)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from crossover.measurement.module_rounds import example_input, make_module_step
    from crossover.measurement.user_module import build_model

    from crossover.measurement.user_module import input_dtype

    gpu = device == "cuda"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if gpu else [ProfilerActivity.CPU]
    entries = {name: (shape, workloads, dtype) for name, shape, workloads, dtype in zoo_entries()}
    for name in names:
        shape, workloads, dtype = entries[name]
        for workload in (("forward",) if gpu else workloads):
            for batch in (batches or ((1,) if gpu else (1, 8))):
                model = build_model(f"{ZOO / name}.py:model").to(device)
                x = example_input(shape, batch, device=device, dtype=input_dtype(dtype), model=model)
                step = make_module_step(model, x, workload)
                for _ in range(20):
                    step()
                sync()
                walls = []
                with profile(activities=activities) as prof:
                    for _ in range(10):
                        start = time.perf_counter()
                        step()
                        sync()
                        walls.append(time.perf_counter() - start)
                print(f"== {name} {workload} on {device} ({torch.get_num_threads()} threads), batch {batch}: wall "
                      f"per step {sorted(walls)[len(walls) // 2] * 1e6:.1f} µs (median of 10, profiled)")
                print(prof.key_averages().table(sort_by="self_cuda_time_total" if gpu else "self_cpu_time_total",
                                                row_limit=15))
    (out / "profiled").write_text("done\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON files and summary.md")
    parser.add_argument("--devices", default="cpu,cuda", help="comma-separated (default cpu,cuda)")
    parser.add_argument("--profiles", type=Path, default=None, help="folder holding cpu/ and cuda/ profiles")
    parser.add_argument("--rounds", type=int, default=8,
                        help="shuffled rounds of each device's whole pool of steps (default 8)")
    parser.add_argument("--profile-steps", action="store_true",
                        help="torch.profiler on a few steps instead, on the first of --devices")
    parser.add_argument("--models", default=None,
                        help="comma-separated zoo models (default: every model; with --profile-steps mnist_mlp,toy)")
    parser.add_argument("--batches", default=None,
                        help="with --profile-steps: comma-separated batch sizes (default 1 on a GPU, 1,8 on a CPU)")
    parser.add_argument("--references", action="store_true",
                        help="measure the calibration's reference models again in this process, in the zoo's rounds, "
                             "beside the calibration's own measurement of them (profiles/<device>/profile.json)")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads for the whole run (default 0: torch's default); pair it with a profile "
                             "calibrated at the same count")
    args = parser.parse_args(argv)
    if argv is None:  # a stage's time limit (SIGTERM) stops it between rounds, what it measured written
        from crossover.cli.args import handle_stop_signals

        handle_stop_signals()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.profile_steps:
        profile_steps(args.out, tuple((args.models or "mnist_mlp,toy").split(",")), args.devices.split(",")[0],
                      tuple(int(b) for b in args.batches.split(",")) if args.batches else None)
        return 0
    rows = []
    try:
        measure_zoo(args.out, args.devices.split(","), args.profiles or args.out / "none", args.rounds, rows,
                    names=set(args.models.split(",")) if args.models else None, references=args.references)
    finally:  # a stage stopped at its limit (SIGTERM) still writes what it measured
        (args.out / "summary.md").write_text(summary(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
