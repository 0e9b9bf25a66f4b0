"""The zoo on a GPU machine: every model measured on each device and predicted from the run's profiles.

    python experiments/gpu_zoo.py --out DIR --devices cpu,cuda --profiles PROFILES [--rounds 8]
    python experiments/gpu_zoo.py --profile-steps --out DIR

Part of ``experiments/gpu_run.sh``. For every model of ``experiments/zoo`` (each module's
``INPUT_SHAPE``; ``WORKLOADS`` where a module names several, else the forward pass) and each device,
the steps at batch 1, 8, 64 and 512 are timed in shuffled interleaved rounds (what ``crossover measure
--model --json`` writes, as ``measure-<model>-<workload>-<device>.json``) and predicted from the
profiles in ``PROFILES/<device>`` (``crossover.decide``: ``predict-<model>-<workload>.json``). Each
file is written as soon as it is measured, cheap models first, so a stage stopped at its time limit
keeps what it did. ``DIR/summary.md`` tabulates the errors per model and device (latency = the 10th
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

ZOO = Path(__file__).resolve().parent / "zoo"
BATCH_SIZES = (1, 8, 64, 512)
#: Models in the order they are measured: cheap steps first.
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


def measure_zoo(out: Path, devices, profiles: Path, rounds: int, rows: list, names=None) -> list:
    """Measure and predict every entry (or those in ``names``), appending the summary rows to ``rows`` as
    they come (so a run stopped part way keeps them); returns ``rows``."""
    import torch

    import crossover
    from crossover.jsonable import to_jsonable
    from crossover.measurement.module_rounds import measure_module
    from crossover.measurement.user_module import build_model, input_dtype

    out.mkdir(parents=True, exist_ok=True)
    found = [profiles / d for d in ("cpu", "cuda") if (profiles / d / "profile.json").is_file()]
    for name, shape, workloads, dtype in zoo_entries():
        if names and name not in names:
            continue
        spec = f"{ZOO / name}.py:model"
        for workload in workloads:
            predicted = None
            if found:
                predicted = crossover.decide(model=spec, input_shape=shape, batch_size=list(BATCH_SIZES),
                                             workload=workload, profiles=found, input_dtype=dtype)
                (out / f"predict-{name}-{workload}.json").write_text(json.dumps(predicted.to_json(), indent=2))
            for device in devices:
                t0 = time.perf_counter()
                frame = measure_module(build_model(spec), shape, BATCH_SIZES, device=device, workload=workload,
                                       dtype=input_dtype(dtype), rounds=rounds)
                points = frame.drop(columns=["elapsed_s"]).to_dict("records")
                data = {"model": spec, "input_shape": list(shape), "workload": workload, "device": device,
                        "threads": torch.get_num_threads(), "rounds": rounds, "statistic": "p10", "points": points}
                (out / f"measure-{name}-{workload}-{device}.json").write_text(json.dumps(to_jsonable(data), indent=2))
                for point in points:
                    guess = None
                    if predicted is not None:
                        guess = next((d for d in predicted.devices if d["batch_size"] == point["batch_size"]
                                      and d["device"] == device), None)
                    rows.append(dict(model=name, workload=workload, device=device, batch_size=point["batch_size"],
                                     measured_s=point["latency_s"],
                                     predicted_s=None if guess is None else guess["latency_s"]))
                print(f"{name} {workload} {device}: {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def measure_references(out: Path, devices, profiles: Path, rounds: int, rows: list) -> list:
    """The calibration's reference models (``crossover.opcost.calibration_plan.REFERENCE_MODELS``, at the
    quick plan's batch sizes, forward and training steps) measured again in this process, on each device,
    beside what the calibration measured of them (``profiles/<device>/profile.json``'s
    ``reference_models``): whether a zoo model's miss is the model's or the process's. On the H100's third
    visit the MNIST MLP's forward GPU step read 155 µs in the zoo's process where the calibration's
    reference MLP, with more ops of the same kinds, read 85 µs in its own. Appends rows whose
    ``predicted_s`` is the calibration's measurement; returns ``rows``."""
    import torch

    from crossover.jsonable import to_jsonable
    from crossover.measurement.module_rounds import measure_module
    from crossover.opcost.calibration_plan import PLANS, REFERENCE_MODELS, reference_model

    batches = {}
    for name, batch in PLANS["quick"].reference_models:
        batches.setdefault(name, []).append(batch)
    for device in devices:
        profile = profiles / device / "profile.json"
        known = json.loads(profile.read_text()).get("reference_models", []) if profile.is_file() else []
        calibrated = {(r["model"], r["workload"], int(r["batch_size"])): r["measured_s"] for r in known}
        for name, sizes in batches.items():
            for workload in ("forward", "train"):
                frame = measure_module(reference_model(name), REFERENCE_MODELS[name], sizes, device=device,
                                       workload=workload, rounds=rounds)
                points = frame.drop(columns=["elapsed_s"]).to_dict("records")
                data = {"model": f"reference:{name}", "input_shape": list(REFERENCE_MODELS[name]), "workload": workload,
                        "device": device, "threads": torch.get_num_threads(), "rounds": rounds, "statistic": "p10",
                        "points": points, "calibration_measured_s": {str(b): calibrated.get((name, workload, b))
                                                                      for b in sizes}}
                (out / f"measure-reference_{name}-{workload}-{device}.json").write_text(
                    json.dumps(to_jsonable(data), indent=2))
                for point in points:
                    rows.append(dict(model=f"reference_{name}", workload=workload, device=device,
                                     batch_size=point["batch_size"], measured_s=point["latency_s"],
                                     predicted_s=calibrated.get((name, workload, point["batch_size"]))))
        print(f"reference models on {device}: measured", flush=True)
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
    parser.add_argument("--rounds", type=int, default=8, help="interleaved rounds per model (default 8)")
    parser.add_argument("--profile-steps", action="store_true",
                        help="torch.profiler on a few steps instead, on the first of --devices")
    parser.add_argument("--models", default=None,
                        help="comma-separated zoo models (default: every model; with --profile-steps mnist_mlp,toy)")
    parser.add_argument("--batches", default=None,
                        help="with --profile-steps: comma-separated batch sizes (default 1 on a GPU, 1,8 on a CPU)")
    parser.add_argument("--references", action="store_true",
                        help="first measure the calibration's reference models again in this process, beside the "
                             "calibration's own measurement of them (profiles/<device>/profile.json)")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads for the whole run (default 0: torch's default); pair it with a profile "
                             "calibrated at the same count")
    args = parser.parse_args(argv)
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
        if args.references:
            measure_references(args.out, args.devices.split(","), args.profiles or args.out / "none", args.rounds, rows)
        measure_zoo(args.out, args.devices.split(","), args.profiles or args.out / "none", args.rounds, rows,
                    names=set(args.models.split(",")) if args.models else None)
    finally:  # a stage stopped at its limit (SIGINT) still writes what it measured
        (args.out / "summary.md").write_text(summary(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
