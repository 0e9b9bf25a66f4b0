"""Where a zoo model's predicted step loses time: each aten op's predicted cost against its self time
under ``torch.profiler``, and the step without the profiler.

    python experiments/bench_op_breakdown.py lenet5 --workload forward --batch-size 1 [--profile DIR]
    python experiments/bench_op_breakdown.py reference:cnn --workload train --batch-size 1 --profile DIR

The prediction is the calibration profile's cost of each traced op in isolation
(``crossover.opcost.op_costs.op_cost``, summed per aten op name); the measurement runs the same step
``--steps`` times under the profiler (self CPU time per aten op, averaged per step), then times it
without the profiler (10th percentile of 30 blocks of 20 steps). An op whose self time is far above its
predicted cost is costed wrongly in isolation (a shape the calibration grid does not cover, or a cost
it pays only inside a model); ops the trace folds away (``mkldnn_convolution`` under ``convolution``,
``clamp_min`` under ``relu``) appear with a self time and no prediction of their own. The step's
composition terms (module calls, autograd, optimizer) are left out of both sums. Run it on a quiet
machine.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from crossover.measurement.environment import machine_label
from crossover.measurement.module_rounds import example_input, make_module_step
from crossover.opcost.module_predict import trace_step
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import load_profile
from crossover.shipped_data import shipped_profiles_dir
from crossover.measurement.user_module import input_dtype, load_factory

ZOO = Path(__file__).resolve().parent / "zoo"


def predicted_by_op(profile, model, shape, batch: int, workload: str, dtype=None) -> tuple:
    """(seconds per aten op name, count per name) of the traced step, each op costed in isolation."""
    table, _ = trace_step(model, shape, batch, workload, dtype=dtype)
    seconds, count = collections.defaultdict(float), collections.Counter()
    inference = workload == "forward"  # no autograd: the ops the forward pass really runs (1-D max-pooling's own kernel)
    for row in table.to_dict("records"):
        name = row["op"].removeprefix("aten.").split(".")[0]
        seconds[name] += op_cost(profile, row, inference=inference).host_s
        count[name] += 1
    return seconds, count


def profiled_by_op(step, n_steps: int) -> dict:
    """Self CPU seconds per aten op name and step under ``torch.profiler``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(n_steps):
            step()
    out = collections.defaultdict(float)
    for event in prof.key_averages():
        if event.key.startswith("aten::"):
            out[event.key[len("aten::"):]] += event.self_cpu_time_total * 1e-6 / n_steps
    return out


def step_p10_s(step, blocks: int = 30, per_block: int = 20) -> float:
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(per_block):
            step()
        times.append((time.perf_counter() - start) / per_block)
    return float(np.quantile(times, 0.1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model of --zoo (e.g. lenet5, mnist_mlp), or reference:NAME for a "
                                      "calibration reference model (reference:cnn)")
    parser.add_argument("--zoo", type=Path, default=ZOO, help="folder of model modules (default: experiments/zoo)")
    parser.add_argument("--workload", choices=("forward", "train"), default="forward")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--profile", type=Path, help="calibration profile directory (default: this machine's shipped one)")
    parser.add_argument("--steps", type=int, default=200, help="steps under the profiler (default 200)")
    parser.add_argument("--top", type=int, default=20, help="ops listed (default 20)")
    args = parser.parse_args(argv)
    from crossover.opcost.reference_models import REFERENCE_MODELS, reference_model

    reference = args.model.partition("reference:")[2]
    path = args.zoo / f"{args.model}.py"
    if reference and reference not in REFERENCE_MODELS:
        parser.error(f"no reference model {reference!r}; expected one of {', '.join(REFERENCE_MODELS)}")
    if not reference and not path.exists():
        parser.error(f"no zoo model {args.model!r} ({path} does not exist)")
    import torch

    warnings.simplefilter("ignore")
    profile = load_profile(args.profile or shipped_profiles_dir() / machine_label())
    if profile.threads:  # measured at the threads the profile was calibrated at
        torch.set_num_threads(profile.threads)
    if reference:
        shape, dtype, model = REFERENCE_MODELS[reference], torch.float32, reference_model(reference)
    else:
        factory = load_factory(f"{path}:model")
        shape = tuple(factory.__globals__["INPUT_SHAPE"])
        dtype = input_dtype(factory.__globals__.get("INPUT_DTYPE", "float32"))  # the embedding bag's ids: long
        torch.manual_seed(0)
        model = factory()
    predicted, count = predicted_by_op(profile, model, shape, args.batch_size, args.workload, dtype)
    from crossover.measurement.allocator import settle_allocator

    settle_allocator()  # the allocator's long-running state, as every measurement (a fresh one faults more)
    step = make_module_step(model, example_input(shape, args.batch_size, dtype=dtype, model=model), args.workload)
    for _ in range(50):
        step()
    measured = profiled_by_op(step, args.steps)
    whole = step_p10_s(step)
    print(f"{args.model} {args.workload} batch {args.batch_size}, {torch.get_num_threads()} threads; profile "
          f"{profile.path} ({profile.meta.get('plan', '?')} plan)")
    print(f"step without the profiler: {whole * 1e6:.1f} µs (10th percentile of 30 blocks of 20 steps)")
    print(f"{'aten op':36s} {'traced':>6s} {'predicted µs':>13s} {'self µs':>9s}")
    names = sorted(set(predicted) | set(measured), key=lambda k: -max(predicted.get(k, 0.0), measured.get(k, 0.0)))
    for name in names[:args.top]:
        print(f"{name:36s} {count.get(name, 0):6d} {predicted.get(name, 0.0) * 1e6:13.2f} {measured.get(name, 0.0) * 1e6:9.2f}")
    print(f"{'sum over ops':36s} {'':6s} {sum(predicted.values()) * 1e6:13.1f} {sum(measured.values()) * 1e6:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
