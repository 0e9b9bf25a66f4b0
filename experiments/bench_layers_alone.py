"""Each leaf layer of a zoo model alone, on the input it gets in the model's step, predicted against measured.

    python experiments/bench_layers_alone.py depthwise_cnn --batch-size 64 --profile DIR [--threads 1] [--rounds 150] [--prefixes | --inside]

Tells a miss of an op's own cost (a shape the calibration's grids cost wrongly alone) from one of composing
it into the step: each leaf module is wrapped alone, predicted from the profile as a one-layer model (so each
prediction carries one step's per-step costs too), and timed on a copy of the input it received in one
forward pass of the model, every layer in turn in each round (a block of five calls each; the 10th percentile
of a layer's blocks), the allocator settled as every measurement; the model's step itself is timed in the same
rounds, so the step against its layers' sum is read in one state of the host. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

ZOO = Path(__file__).resolve().parent / "zoo"


def clocked_layers(leaves, x) -> list:
    """The leaves run in a row on ``x``, a clock read between each two: each layer's seconds inside the step."""
    clock = [time.perf_counter()]
    for layer in leaves:
        x = layer(x)
        clock.append(time.perf_counter())
    return list(np.diff(clock))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model of experiments/zoo (e.g. depthwise_cnn)")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--profile", type=Path, required=True, help="calibration profile directory")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--prefixes", action="store_true",
                        help="also time the model's first k leaf layers chained, for every k (a model that is its "
                             "leaves in a row): each layer's cost inside the step, as the difference of two prefixes")
    parser.add_argument("--inside", action="store_true",
                        help="also run the model's leaf layers in a row with a clock read between them (a model that is "
                             "its leaves in a row): each layer's own time inside the step, on the buffers the step "
                             "passes it")
    args = parser.parse_args(argv)
    import torch

    from crossover.measurement.allocator import settle_allocator
    from crossover.measurement.user_module import input_dtype, load_factory
    from crossover.opcost.module_predict import predict_module
    from crossover.opcost.profiles import load_profile

    warnings.simplefilter("ignore")
    torch.set_num_threads(args.threads)
    path = ZOO / f"{args.model}.py"
    if not path.exists():
        parser.error(f"no zoo model {args.model!r} ({path} does not exist)")
    factory = load_factory(f"{path}:model")
    shape = tuple(factory.__globals__["INPUT_SHAPE"])
    dtype = input_dtype(factory.__globals__.get("INPUT_DTYPE", "float32"))
    torch.manual_seed(0)
    model = factory().eval()
    profile = load_profile(args.profile)
    leaves, inputs = [], []

    def record(module, given, _):
        leaves.append(module)
        inputs.append(given[0].detach().clone())

    hooks = [m.register_forward_hook(record) for m in model.modules() if not list(m.children())]
    with torch.no_grad():
        model(torch.randn(args.batch_size, *shape) if dtype.is_floating_point else
              torch.randint(0, 100, (args.batch_size, *shape)))
    for hook in hooks:
        hook.remove()
    alone = [torch.nn.Sequential(m) for m in leaves]
    predicted = [float(predict_module(layer, sample_shape=tuple(x.shape[1:]), batch_sizes=[args.batch_size],
                                      input_dtype=x.dtype, profiles=[profile], warn=False)["latency_s"][0])
                 for layer, x in zip(alone, inputs)]
    settle_allocator()
    times = [[] for _ in leaves]
    step_x = inputs[0].clone()
    whole = []  # the model's step itself, in the same rounds: what composing the layers adds
    prefixes = [torch.nn.Sequential(*leaves[:k]) for k in range(1, len(leaves) + 1)] if args.prefixes else []
    if prefixes:
        with torch.no_grad():
            if not torch.allclose(prefixes[-1](step_x), model(step_x)):
                parser.error(f"{args.model} is not its leaf layers in a row: --prefixes does not apply")
    prefix_times = [[] for _ in prefixes]
    if args.inside and not prefixes:
        with torch.no_grad():
            if not torch.allclose(torch.nn.Sequential(*leaves)(step_x), model(step_x)):
                parser.error(f"{args.model} is not its leaf layers in a row: --inside does not apply")
    inside_times = [[] for _ in leaves] if args.inside else []
    with torch.no_grad():
        for layer, x in zip(alone, inputs):
            for _ in range(20):
                layer(x)
        for _ in range(args.rounds):
            for i, (layer, x) in enumerate(zip(alone, inputs)):
                start = time.perf_counter()
                for _ in range(5):
                    layer(x)
                times[i].append((time.perf_counter() - start) / 5)
            start = time.perf_counter()
            for _ in range(5):
                model(step_x)
            whole.append((time.perf_counter() - start) / 5)
            for i, prefix in enumerate(prefixes):
                start = time.perf_counter()
                for _ in range(5):
                    prefix(step_x)
                prefix_times[i].append((time.perf_counter() - start) / 5)
            for _ in range(5 if inside_times else 0):
                for i, spent in enumerate(clocked_layers(leaves, step_x)):
                    inside_times[i].append(spent)
    print(f"{args.model} batch {args.batch_size}, {args.threads} thread(s), {args.rounds} rounds; profile {args.profile}")
    total_p = total_m = 0.0
    in_step = np.diff([0.0] + [float(np.quantile(t, 0.1)) for t in prefix_times]) if prefixes else None
    if inside_times:  # each layer's own clock inside the step (its 10th percentile)
        in_step = np.array([float(np.quantile(t, 0.1)) for t in inside_times])
    for i, (layer, x, p, t) in enumerate(zip(leaves, inputs, predicted, times)):
        m = float(np.quantile(t, 0.1))
        total_p, total_m = total_p + p, total_m + m
        print(f"{type(layer).__name__:20s} {str(tuple(x.shape)):18s} predicted {p * 1e6:9.1f} µs  measured "
              f"{m * 1e6:9.1f} µs  {100 * (p / m - 1):+6.1f}%" + ("" if in_step is None else f"  in the step {in_step[i] * 1e6:9.1f} µs"))
    print(f"{'sum':39s} predicted {total_p * 1e6:9.1f} µs  measured {total_m * 1e6:9.1f} µs  {100 * (total_p / total_m - 1):+6.1f}%")
    step_p = float(predict_module(model, sample_shape=shape, batch_sizes=[args.batch_size], input_dtype=dtype,
                                  profiles=[profile], warn=False)["latency_s"][0])
    step_m = float(np.quantile(whole, 0.1))
    if inside_times:
        print(f"{'inside the step, summed':39s} measured {float(np.sum(in_step)) * 1e6:9.1f} µs  (layer by layer: "
              f"{float(np.quantile(np.sum(inside_times, axis=0), 0.1)) * 1e6:.1f} µs a step)")
    print(f"{'the step':39s} predicted {step_p * 1e6:9.1f} µs  measured {step_m * 1e6:9.1f} µs  {100 * (step_p / step_m - 1):+6.1f}%"
          f"  (the step / its layers' sum: predicted {step_p / total_p:.2f}, measured {step_m / total_m:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
