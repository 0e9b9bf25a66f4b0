"""Each forward convolution of a zoo model timed alone against what a calibration profile costs it: on the
profile as it is, and on the profile without its pointwise grid (the ``conv`` and ``conv1d`` grids, as
before it).

    python experiments/bench_conv_alone.py depthwise_cnn --profile DIR [--zoo experiments/zoo] [--batch-size 64]
    python experiments/bench_conv_alone.py --channels --profile DIR [--batch-size 64]

The model is traced at ``--batch-size``; each of its forward convolutions is called alone on inputs of the
traced shapes (random values; its own stride, padding, dilation and groups), back to back, with the
allocator settled as every measurement is (``crossover.measurement.allocator``: a fresh output of several
MiB faults on each call otherwise), at the profile's threads; the second-quickest of 15 blocks of 20 calls (``block_timing``).
A convolution costed right alone but not in its model is the composition's to explain; one costed wrong
alone is the grid's. ``--channels``: instead of a model, ``Conv1d(C, C, k)`` over sequences of 512 steps
for ``C`` from 16 to 48 and ``k`` of 3 and 1 (oneDNN pads channels to whole blocks of 16 on AVX-512:
``crossover.opcost.conv_primitives.onednn_kn``). Run it on a quiet machine (about 10 s a model).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import warnings
from pathlib import Path

from block_timing import block_mean_us

ZOO = Path(__file__).resolve().parent / "zoo"


def conv_call(row):
    """A call of the convolution of a traced forward ``convolution`` row on fresh random operands."""
    import torch

    from crossover.opcost.trace import row_args

    args, shapes = row_args(row), [tuple(s) for s in row["input_shapes"]]
    x, w = torch.randn(shapes[0]), torch.randn(shapes[1])
    bias = torch.randn(shapes[2]) if len(shapes) > 2 and shapes[2] else None
    conv = torch.conv1d if len(shapes[0]) == 3 else torch.conv2d
    stride, padding, dilation = args.get("stride"), args.get("padding"), args.get("dilation")
    groups = int(args.get("groups", 1))
    return lambda: conv(x, w, bias, stride, padding, dilation, groups)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", help="a model of --zoo (e.g. depthwise_cnn)")
    parser.add_argument("--channels", action="store_true", help="Conv1d(C, C, k) over C = 16-48 instead of a model")
    parser.add_argument("--zoo", type=Path, default=ZOO, help="folder of model modules (default: experiments/zoo)")
    parser.add_argument("--profile", type=Path, required=True, help="calibration profile directory")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args(argv)
    if args.channels == bool(args.model):
        parser.error("give a model or --channels")
    path = args.zoo / f"{args.model}.py" if args.model else None
    if path is not None and not path.exists():
        parser.error(f"no zoo model {args.model!r} ({path} does not exist)")
    import torch

    from crossover.measurement.allocator import settle_allocator
    from crossover.measurement.user_module import load_factory
    from crossover.opcost.conv_primitives import POINTWISE
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import load_profile

    warnings.simplefilter("ignore")
    profile = load_profile(args.profile)
    before = dataclasses.replace(profile, grids={k: g for k, g in profile.grids.items() if not k.startswith(POINTWISE)})
    if profile.threads:
        torch.set_num_threads(profile.threads)
    settle_allocator()
    torch.manual_seed(0)
    if args.channels:
        rows = [r for c, k in itertools.product((16, 20, 24, 28, 32, 40, 48), (3, 1))
                for r in trace_step(torch.nn.Conv1d(c, c, k, padding=k // 2), (c, 512), args.batch_size,
                                    "forward")[0].to_dict("records")]
    else:
        factory = load_factory(f"{path}:model")
        rows = trace_step(factory(), tuple(factory.__globals__["INPUT_SHAPE"]), args.batch_size,
                          "forward")[0].to_dict("records")
    print(f"{args.model or 'Conv1d(C, C, k), 512 steps'} forward batch {args.batch_size}, {torch.get_num_threads()} "
          f"threads; profile {profile.path}")
    print(f"{'input':22s} {'weight':18s} {'family':15s} {'costed µs':>10s} {'without pointwise':>18s} {'alone µs':>9s}"
          f" {'alone/costed':>13s}")
    for row in rows:
        if row["op"].split(".")[1:2] != ["convolution"]:
            continue
        cost, old = op_cost(profile, row, inference=True), op_cost(before, row, inference=True)
        alone = block_mean_us(conv_call(row), calls=20, blocks=15, warmup=5) * 1e-6
        shapes = row["input_shapes"]
        print(f"{str(tuple(shapes[0])):22s} {str(tuple(shapes[1])):18s} {cost.family:15s} {cost.host_s * 1e6:10.1f} "
              f"{old.host_s * 1e6:18.1f} {alone * 1e6:9.1f} {alone / cost.host_s:13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
