"""Predicted against measured: the zoo's models on this machine, from its calibration profile alone.

    python experiments/bench_zoo.py [--profile DIR] [--rounds 10] [--batch-sizes 1,8,64,512] [--csv PATH]

For every model of ``experiments/zoo`` (the MNIST MLP forward and training step, LeNet-5, a Transformer
encoder layer, the toy model) at each batch size, the step latency is first predicted from the
profile (``crossover.predict_module``: no measurement of these models is used), then measured in the
same run: every (model, workload, batch size) step in one set of shuffled interleaved rounds
(``crossover.module_measure.measure_rounds``; latency = the 10th percentile of the pooled repeats, the
statistic the calibration used). Prints one line per point with the error of the prediction, then
per model the median and worst |error| against the target (median ≤ 10%, worst ≤ 25%).

The profile defaults to this machine's shipped one (``experiments/profiles/<machine>/profile.json``);
make it with ``crossover calibrate --device cpu --out DIR``. Run it on a quiet machine: another
process on the cores slows the measurement, not the prediction.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

from crossover.env import machine_label
from crossover.module_measure import example_input, make_module_step, measure_rounds, summarise_rounds
from crossover.module_predict import predict_module
from crossover.profiles import load_profile, shipped_profiles_dir
from crossover.timing import TimerOptions
from crossover.units import format_seconds
from crossover.user_model import load_factory

ZOO = Path(__file__).resolve().parent / "zoo"
#: (name, workloads) of the zoo's models.
MODELS = (("mnist_mlp", ("forward", "train")), ("lenet5", ("forward",)), ("transformer_layer", ("forward",)),
          ("toy", ("forward",)))
#: One visit of a step per round: blocks of 10 ms as the calibration's, one warm-up call.
OPTIONS = TimerOptions(warmup_s=0.01, min_warmup_calls=1, min_repeats=3, min_run_time_s=0.03, max_run_time_s=0.03,
                       target_rel_ci=0.0)
TARGET_MEDIAN, TARGET_WORST = 0.10, 0.25


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", type=Path, default=None,
                        help="calibration profile directory (default: experiments/profiles/<this machine>)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved measuring rounds (default 10)")
    parser.add_argument("--batch-sizes", default="1,8,64,512", help="comma-separated (default 1,8,64,512)")
    parser.add_argument("--models", default=",".join(name for name, _ in MODELS), help="comma-separated zoo models")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    profile = load_profile(args.profile or shipped_profiles_dir() / machine_label())
    if profile.device != "cpu":
        parser.error(f"{profile.path} is a {profile.device} profile; this benchmark measures on the CPU")
    batch_sizes = tuple(int(b) for b in args.batch_sizes.split(","))
    wanted = args.models.split(",")

    import pandas as pd
    import torch

    predictions, steps = [], []
    for name, workloads in MODELS:
        if name not in wanted:
            continue
        factory = load_factory(f"{ZOO / name}.py:model")
        shape = tuple(factory.__globals__["INPUT_SHAPE"])
        for workload in workloads:
            torch.manual_seed(0)
            model = factory()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                frame = predict_module(model, sample_shape=shape, batch_sizes=batch_sizes, profiles=[profile],
                                       workload=workload)
            for note in dict.fromkeys(str(w.message) for w in caught):
                print(f"warning ({name} {workload}): {note}", file=sys.stderr)
            for row in frame.itertuples():
                predictions.append(dict(model=name, workload=workload, batch_size=row.batch_size,
                                        predicted_s=row.latency_s, low_s=row.latency_low_s, high_s=row.latency_high_s,
                                        bound=row.bound))
            for batch in batch_sizes:
                step = make_module_step(model, example_input(shape, batch), workload)
                steps.append(((name, workload, batch), step))
    print(f"profile {profile.path} ({profile.label}, {profile.meta.get('plan', '?')} plan, "
          f"{profile.threads} threads); measuring {len(steps)} steps in {args.rounds} interleaved rounds, "
          f"{torch.get_num_threads()} threads", file=sys.stderr)
    visits = measure_rounds(steps, rounds=args.rounds, options=OPTIONS, seed=args.seed)
    table = pd.DataFrame(predictions)
    measured = {key: summarise_rounds([v for v in visits if v["key"] == key]) for key, _ in steps}
    table["measured_s"] = [measured[(r.model, r.workload, r.batch_size)]["latency_s"] for r in table.itertuples()]
    table["spread_rel"] = [measured[(r.model, r.workload, r.batch_size)]["spread_rel"] for r in table.itertuples()]
    table["error"] = table["predicted_s"] / table["measured_s"] - 1
    table["inside"] = (table["low_s"] <= table["measured_s"]) & (table["measured_s"] <= table["high_s"])
    print(f"{'model':<18s} {'workload':<8s} {'batch':>5s} {'predicted':>10s} {'measured':>10s} {'error':>7s}  "
          f"{'interval':<22s} bound")
    for r in table.itertuples():
        print(f"{r.model:<18s} {r.workload:<8s} {r.batch_size:>5d} {format_seconds(r.predicted_s, 3):>10s} "
              f"{format_seconds(r.measured_s, 3):>10s} {r.error:>+7.1%}  "
              f"[{format_seconds(r.low_s)}, {format_seconds(r.high_s)}]"
              f"{'' if r.inside else ' (missed)':<10s} {r.bound}")
    print()
    ok = True
    for (model, workload), group in table.groupby(["model", "workload"], sort=False):
        median, worst = float(np.median(group["error"].abs())), float(group["error"].abs().max())
        verdict = "ok" if median <= TARGET_MEDIAN and worst <= TARGET_WORST else "MISSES the target"
        ok &= verdict == "ok"
        print(f"{model:<18s} {workload:<8s} median |error| {median:6.1%}  worst {worst:6.1%}  {verdict}")
    errors = table["error"].abs()
    print(f"{'overall':<27s} median |error| {float(errors.median()):6.1%}  worst {float(errors.max()):6.1%}  "
          f"({int(table['inside'].sum())}/{len(table)} measurements inside the predicted interval; "
          f"target per model: median <= {TARGET_MEDIAN:.0%}, worst <= {TARGET_WORST:.0%})")
    if args.csv:
        table.to_csv(args.csv, index=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
