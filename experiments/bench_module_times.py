"""Each leaf module of a zoo model timed inside its step with forward hooks, against its predicted cost.

``experiments/bench_op_breakdown.py`` compares aten ops under ``torch.profiler``, whose per-op mean
carries the profiler's own cost and the step's outliers (on the Intel VM at one thread the depthwise CNN's
seven ReLUs read 85 µs a step there, 65 µs here summing their 10th percentiles, hooks included:
``experiments/results/intel-xeon-2c/logs/bench_op_breakdown_depthwise_b8_t1.log`` and
``bench_module_times_depthwise_b8_t1.log``). Here every leaf module (a ``Conv2d``, a
``BatchNorm2d``, a ``ReLU``) gets a pre- and a post-forward hook reading ``time.perf_counter``; after
``--warmup`` steps, ``--steps`` steps are timed and each module's 10th percentile and median printed beside
what the prediction costs its trace rows (:func:`crossover.opcost.op_costs.op_cost`, with the step's
composition: a forward convolution's ``1 + conv_forward_extra``) plus one ``module_call_s``. A module's
time includes the hooks' own (a few hundred nanoseconds a call) and its module call.

    python experiments/bench_module_times.py depthwise_cnn --batch-size 8 --profile DIR [--threads 1]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ZOO = Path(__file__).resolve().parent / "zoo"


def predicted_by_module(profile, model, shape, batch: int, dtype=None) -> dict:
    """Seconds per leaf module name: its forward trace rows costed on ``profile`` (a forward convolution's
    times ``1 + conv_forward_extra``, as a step is composed) and one module call."""
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import op_cost

    rows, _ = trace_step(model, shape, batch, "forward", dtype=dtype)
    seconds = defaultdict(float)
    for row in rows.to_dict("records"):
        cost = op_cost(profile, row, inference=True)
        scale = 1.0 + profile.conv_forward_extra if cost.family == "conv" else 1.0
        seconds[str(row.get("module"))] += cost.host_s * scale
    return {name: s + profile.overhead("module_call_s") for name, s in seconds.items()}


def hooked_times(model, x, warmup: int, steps: int) -> dict:
    """Seconds of each leaf module's calls over ``steps`` hooked forward passes (no autograd)."""
    import torch

    times, starts = defaultdict(list), {}

    def before(name):
        return lambda module, inputs: starts.__setitem__(name, time.perf_counter())

    def after(name):
        return lambda module, inputs, output: times[name].append(time.perf_counter() - starts[name])

    handles = []
    for name, module in model.named_modules():
        if not list(module.children()):
            handles += [module.register_forward_pre_hook(before(name)), module.register_forward_hook(after(name))]
    with torch.no_grad():
        for _ in range(warmup):
            model(x)
        times.clear()
        for _ in range(steps):
            model(x)
    for handle in handles:
        handle.remove()
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model of --zoo (e.g. depthwise_cnn)")
    parser.add_argument("--zoo", type=Path, default=ZOO, help="folder of model modules (default: experiments/zoo)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--profile", type=Path, required=True, help="a CPU calibration profile directory")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    path = args.zoo / f"{args.model}.py"
    if not path.exists():
        parser.error(f"no zoo model {args.model!r} ({path} does not exist)")

    import torch

    from crossover.measurement.allocator import settle_allocator
    from crossover.measurement.module_rounds import example_input
    from crossover.measurement.user_module import input_dtype, load_factory
    from crossover.opcost.profiles import load_profile

    profile = load_profile(args.profile)
    torch.set_num_threads(args.threads)
    settle_allocator()
    factory = load_factory(f"{path}:model")
    shape = tuple(factory.__globals__["INPUT_SHAPE"])
    dtype = input_dtype(factory.__globals__.get("INPUT_DTYPE", "float32"))  # the embedding bag's ids: long
    torch.manual_seed(0)
    model = factory().eval()
    x = example_input(shape, args.batch_size, dtype=dtype, model=model)
    predicted = predicted_by_module(profile, model, shape, args.batch_size, dtype)
    times = hooked_times(model, x, args.warmup, args.steps)
    print(f"{args.model} forward batch {args.batch_size}, {args.threads} threads; profile {args.profile}; "
          f"{args.steps} hooked steps")
    print(f"{'module':12s} {'type':18s} {'p10 µs':>9s} {'median µs':>10s} {'predicted µs':>13s} {'p10/pred':>9s}")
    kinds = dict(model.named_modules())
    total_p10 = total_predicted = 0.0
    for name, samples in times.items():
        p10, median = np.percentile(samples, 10), np.median(samples)
        guess = predicted.get(name, 0.0)
        total_p10, total_predicted = total_p10 + p10, total_predicted + guess
        ratio = f"{p10 / guess:9.2f}" if guess else ""
        print(f"{name:12s} {type(kinds[name]).__name__:18s} {p10 * 1e6:9.1f} {median * 1e6:10.1f} {guess * 1e6:13.1f} {ratio}")
    print(f"{'sum':12s} {'':18s} {total_p10 * 1e6:9.1f} {'':10s} {total_predicted * 1e6:13.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
