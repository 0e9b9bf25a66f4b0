"""What an op costs in a sequence of other ops against repeated alone: the evidence behind the forward
passes' low bias at small batches (#27), in three measurements in one process.

    python experiments/bench_op_chains.py [--threads 1] [--trials 6]

1. **Distinct ops in a cycle.** Cycles of ``L`` distinct small ops (20 kinds: elementwise, reductions, a
   layer norm, a small product, a small convolution, ...; inputs of at most 16 KiB, so that no data leaves
   the private cache) drawn at random, ``--trials`` cycles per ``L``, each timed as a cycle: the extra
   per op over the same ops repeated alone, against ``L`` (the code a step cycles through, not its data).
2. **After a producer.** Pairs of layer-sized ops at batch 1 (a depthwise 3×3 convolution of 32 channels
   on 16 × 16, a 1×1 one into 64, a batch norm, a ReLU, a ``Linear``), each pair called back to back as
   aten ops: the extra over both alone.
3. **The reference models.** Each calibration reference model's forward pass at batch 1 (eval, no grad)
   against its leaf modules' ``forward`` each repeated alone on its input from the step, the same
   ``forward`` calls chained (no ``nn.Module.__call__``), and the step as ``measure`` times it
   (``model(x)``): what the chain adds, and what the module calls add.
4. **A serial read after a parallel write** (two threads or more). A ``cumsum`` (serial in ATen) over a
   tensor of 64 KiB to 1 MiB, right after a parallel in-place ``mul_`` of the same tensor (each thread
   writes its share, in its own core's cache) against right after the same ``mul_`` of a 1 KiB tensor:
   what reading lines another core just wrote costs.

Every figure is the second-quickest of a few blocks of back-to-back calls (``block_timing``), medians
over repeats. Run it on a quiet machine (about half a minute).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys

from block_timing import block_mean_us

#: The cycle lengths of part 1.
CYCLE_LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 20)


def small_ops():
    """Part 1's pool: name -> a call on small fixed inputs."""
    import torch
    import torch.nn.functional as F

    v, m, a = torch.randn(1, 256), torch.randn(64, 64), torch.randn(1, 64)
    img, cw = torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3)
    lw, lb, idx = torch.ones(256), torch.zeros(256), torch.tensor([1, 5, 7])
    return {"add": lambda: v + v, "mul": lambda: v * v, "relu": lambda: v.relu(), "sigmoid": lambda: v.sigmoid(),
            "tanh": lambda: v.tanh(), "gelu": lambda: F.gelu(v), "layer_norm": lambda: F.layer_norm(v, (256,), lw, lb),
            "softmax": lambda: v.softmax(-1), "sum": lambda: v.sum(), "amax": lambda: v.amax(-1),
            "cat": lambda: torch.cat([v, v], 1), "addmm": lambda: torch.addmm(a, a, m),
            "conv": lambda: F.conv2d(img, cw, padding=1), "max_pool": lambda: F.max_pool2d(img, 2),
            "transpose_copy": lambda: m.t().contiguous(), "index": lambda: v[:, idx], "exp": lambda: v.exp(),
            "clamp": lambda: v.clamp(-1, 1), "mean": lambda: v.mean(-1), "sqrt": lambda: v.abs().sqrt()}


def layer_ops():
    """Part 2's ops: name -> an aten call at a depthwise CNN's batch-1 shapes."""
    import torch

    c = 32
    x, y, z = torch.randn(1, c, 16, 16), torch.randn(1, c, 16, 16), torch.randn(1, 64)
    w_dw, w_pw = torch.randn(c, 1, 3, 3), torch.randn(64, c, 1, 1)
    mean, var, gamma, beta = torch.zeros(c), torch.ones(c), torch.ones(c), torch.zeros(c)
    lw, lb = torch.randn(10, 64), torch.randn(10)
    return {"depthwise": lambda: torch.conv2d(x, w_dw, None, 1, 1, 1, c), "pointwise": lambda: torch.conv2d(y, w_pw),
            "batch_norm": lambda: torch.batch_norm(y, gamma, beta, mean, var, False, 0.1, 1e-5, False),
            "relu": lambda: torch.relu(y), "linear": lambda: torch.addmm(lb, z, lw.t())}


PAIRS = (("depthwise", "batch_norm"), ("depthwise", "relu"), ("depthwise", "linear"), ("pointwise", "linear"),
         ("pointwise", "batch_norm"), ("batch_norm", "linear"), ("batch_norm", "relu"))


def _sequence(calls):
    def run():
        for call in calls:
            call()
    return run


def cycles(trials: int, calls: int = 200) -> None:
    pool = small_ops()
    alone = {name: statistics.median(block_mean_us(f, calls) for _ in range(3)) for name, f in pool.items()}
    print("1. distinct small ops in a cycle: extra per op over each repeated alone (µs)")
    print("   alone: " + ", ".join(f"{name} {t:.2f}" for name, t in alone.items()))
    rng = random.Random(0)
    for length in CYCLE_LENGTHS:
        extras = []
        for _ in range(trials):
            names = rng.sample(list(pool), length)
            cycle = block_mean_us(_sequence([pool[n] for n in names]), calls)
            extras.append((cycle - sum(alone[n] for n in names)) / length)
        print(f"   {length:2d} distinct: median {statistics.median(extras):+.2f}  [{min(extras):+.2f}, {max(extras):+.2f}]")


def pairs(calls: int = 200) -> None:
    ops = layer_ops()
    alone = {name: statistics.median(block_mean_us(f, calls) for _ in range(3)) for name, f in ops.items()}
    print("2. layer-sized ops at batch 1, one after another (µs)")
    print("   alone: " + ", ".join(f"{name} {t:.2f}" for name, t in alone.items()))
    for first, then in PAIRS:
        pair = statistics.median(block_mean_us(_sequence([ops[first], ops[then]]), calls) for _ in range(3))
        print(f"   {first:>10s} then {then:<10s} {pair:8.2f}  extra {pair - alone[first] - alone[then]:+6.2f}")


def references(repeats: int = 5, calls: int = 100) -> None:
    import torch

    from crossover.opcost.calibration_plan import Point, make_step
    from crossover.opcost.reference_models import REFERENCE_MODELS, reference_model

    print("3. reference models' forward pass at batch 1 (µs): leaf forwards alone, chained, and the step")
    print(f"   {'model':>9s} {'modules':>7s} {'alone':>8s} {'chained':>8s} {'model(x)':>9s} {'chain extra':>12s} "
          f"{'per module call':>16s}")
    for name, shape in REFERENCE_MODELS.items():
        model = reference_model(name).eval()
        x = torch.randn(1, *shape)
        leaves = list(model)
        inputs, h = [], x
        with torch.no_grad():
            for leaf in leaves:
                inputs.append(h)
                h = leaf(h)

            def chained():
                out = x
                for leaf in leaves:
                    out = leaf.forward(out)
                return out

            rows = []
            for _ in range(repeats):
                alone = sum(block_mean_us(lambda leaf=leaf, i=i: leaf.forward(i), calls) for leaf, i in zip(leaves, inputs))
                rows.append((alone, block_mean_us(chained, calls), block_mean_us(lambda: model(x), calls)))
        alone, chain, step = (statistics.median(c) for c in zip(*rows))
        print(f"   {name:>9s} {len(leaves):7d} {alone:8.1f} {chain:8.1f} {step:9.1f} {chain - alone:+12.1f} "
              f"{(step - chain) / (len(leaves) + 1):16.2f}")
    primitive = make_step(Point("overhead", "module_call"), "cpu")
    print(f"   the calibration's module_call primitive (an Identity repeated): "
          f"{statistics.median(block_mean_us(primitive, 1000) for _ in range(repeats)):.2f} µs a call")


def remote_reads(repeats: int = 3, calls: int = 100) -> None:
    import torch

    print("4. a serial cumsum right after a parallel in-place mul_ of its input, against after a tiny mul_ (µs)")
    tiny = torch.randn(256)
    for kib in (64, 256, 1024):
        x = torch.randn(kib * 256)
        after_own = statistics.median(block_mean_us(lambda: (x.mul_(1.0), torch.cumsum(x, 0)), calls)
                                      for _ in range(repeats))
        after_tiny = statistics.median(block_mean_us(lambda: (tiny.mul_(1.0), torch.cumsum(x, 0)), calls)
                                       for _ in range(repeats))
        writes = statistics.median(block_mean_us(lambda: x.mul_(1.0), calls) for _ in range(repeats))
        tiny_s = statistics.median(block_mean_us(lambda: tiny.mul_(1.0), calls) for _ in range(repeats))
        extra = (after_own - writes) - (after_tiny - tiny_s)
        print(f"   {kib:5d} KiB: cumsum after its own mul_ {after_own - writes:8.2f}, after a tiny one "
              f"{after_tiny - tiny_s:8.2f}: {extra:+8.2f} ({extra * 1e3 / (kib * 16):+.1f} ns a 64-byte line of it)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--trials", type=int, default=6, help="cycles drawn per length in part 1")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"{args.threads} thread(s), torch {torch.__version__}")
    with torch.no_grad():
        cycles(args.trials)
        pairs()
    references()
    if args.threads > 1:
        with torch.no_grad():
            remote_reads()
    return 0


if __name__ == "__main__":
    sys.exit(main())
