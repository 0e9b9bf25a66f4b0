"""A reference model's layers in turn with and without their data passing from one to the next, at batch 1:
whether a step pays for switching between kinds of op, or for what one op hands the next.

``bench_reference_inside.py`` found that each layer of the normalised MLP (a product, ``LayerNorm``, GELU, a
product) took 4.9-9.5 µs more inside its step than repeated alone on the AMD VM, where the deep and plain
MLPs' repeated products and ReLUs took 0.1-1.5 µs more. Two things differ between a layer inside the step and
repeated alone: the layers before it are other kinds of op (their code and ATen's dispatch state in the core),
and its input is the output the layer before it has just allocated and written. This times, in the same
shuffled rounds (blocks of ten calls each, the 10th percentile of the blocks, per call):

- ``step``: the leaves in a row, each on the one before's output (the step as it runs);
- ``cycle``: the same leaves in the same order, each on a fixed input recorded once (the kinds switch, nothing
  passes between them);
- ``alone``: each leaf repeated ten times on its fixed input (the sum over leaves);
- ``step, kept``: the step with every output kept alive until the block ends (no buffer freed and reused
  within a step).

``cycle`` near ``alone`` and ``step`` above both: what a layer hands the next costs, not the switching;
``cycle`` near ``step``: the switching does. ``others`` times the calibration's own rotation of four small
kernels (``conv_neighbours``' others) the same way: ``cycle`` and ``alone`` only.

    python experiments/bench_cycle_inputs.py norm_mlp deep_mlp mlp cnn others [--threads 1] [--rounds 200]

Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from bench_reference_inside import leaves_and_inputs

BLOCK = 10
#: The name that times the calibration's rotation of small kernels instead of a reference model.
OTHERS = "others"


def variants(name: str) -> dict:
    """The no-argument calls timed for ``name``: a reference model's, or ``others`` (the calibration's rotation
    of four small kernels, :data:`crossover.opcost.conv_neighbours.OTHERS`, which pass nothing between them:
    no ``step``); each one block (see the module's docstring)."""
    if name == OTHERS:
        from crossover.opcost.conv_neighbours import OTHERS as KERNELS, _calls

        kernels = _calls("cpu")
        ops = [kernels[k] for k in KERNELS]
        calls = {}
    else:
        _, leaves, inputs = leaves_and_inputs(name)
        ops = [lambda layer=layer, x=x: layer(x) for layer, x in zip(leaves, inputs)]

        def step():
            for _ in range(BLOCK):
                z = inputs[0]
                for layer in leaves:
                    z = layer(z)

        def kept():
            held = []
            for _ in range(BLOCK):
                z = inputs[0]
                for layer in leaves:
                    z = layer(z)
                    held.append(z)

        calls = {"step": step, "step, kept": kept}

    def cycle():
        for _ in range(BLOCK):
            for op in ops:
                op()

    def alone(op):
        def block():
            for _ in range(BLOCK):
                op()
        return block

    calls["cycle"] = cycle
    calls.update({f"alone {i}": alone(op) for i, op in enumerate(ops)})
    return calls


def table(name: str, rounds: int, seed: int) -> str:
    """Per variant the 10th percentile of its blocks' time per call (µs), ``alone`` summed over the leaves."""
    import torch

    calls = variants(name)
    times = {key: [] for key in calls}
    order = list(calls)
    rng = random.Random(seed)
    with torch.no_grad():
        for call in calls.values():  # warm every path once
            call()
        for _ in range(rounds):
            rng.shuffle(order)
            for key in order:
                start = time.perf_counter()
                calls[key]()
                times[key].append((time.perf_counter() - start) / BLOCK)
    p10 = {key: float(np.quantile(t, 0.1)) * 1e6 for key, t in times.items()}
    alone = sum(v for k, v in p10.items() if k.startswith("alone "))
    leaves = sum(k.startswith("alone ") for k in p10)
    lines = [f"{name}: {leaves} leaves, batch 1, 10th percentile of {rounds} blocks of {BLOCK} (µs a call)"]
    lines += [f"  {key:<11} {p10[key]:8.1f}" for key in ("step", "step, kept") if key in p10]
    lines += [f"  cycle       {p10['cycle']:8.1f}",
              f"  alone (sum) {alone:8.1f}   " + " ".join(f"{p10[f'alone {i}']:.1f}" for i in range(leaves)),
              (f"  step - cycle {p10['step'] - p10['cycle']:+.1f}, " if "step" in p10 else "  ")
              + f"cycle - alone {p10['cycle'] - alone:+.1f} ({(p10['cycle'] - alone) / leaves:+.2f} a leaf)"]
    return "\n".join(lines)


def main(argv=None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="reference models (crossover.opcost.reference_models), or "
                        f"{OTHERS!r}")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s)")
    for name in args.models:
        print(table(name, args.rounds, args.seed), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
