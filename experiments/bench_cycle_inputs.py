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
``cycle`` near ``step``: the switching does.

    python experiments/bench_cycle_inputs.py norm_mlp deep_mlp mlp [--threads 1] [--rounds 200]

Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

BLOCK = 10


def _leaves_and_inputs(name: str):
    import torch

    from crossover.opcost.reference_models import REFERENCE_MODELS, reference_model

    torch.manual_seed(0)
    model = reference_model(name).eval()
    leaves = [m for m in model.modules() if not list(m.children())]
    inputs, y = [], torch.randn(1, *REFERENCE_MODELS[name])
    with torch.no_grad():
        for layer in leaves:
            inputs.append(y.clone())
            y = layer(y)
    return leaves, inputs


def variants(name: str) -> dict:
    """The no-argument calls timed for reference model ``name``: one block (see the module's docstring)."""
    leaves, inputs = _leaves_and_inputs(name)
    first = inputs[0]

    def step():
        for _ in range(BLOCK):
            z = first
            for layer in leaves:
                z = layer(z)

    def kept():
        held = []
        for _ in range(BLOCK):
            z = first
            for layer in leaves:
                z = layer(z)
                held.append(z)

    def cycle():
        for _ in range(BLOCK):
            for layer, x in zip(leaves, inputs):
                layer(x)

    def alone(layer, x):
        def block():
            for _ in range(BLOCK):
                layer(x)
        return block

    calls = {"step": step, "cycle": cycle, "step, kept": kept}
    calls.update({f"alone {i}": alone(layer, x) for i, (layer, x) in enumerate(zip(leaves, inputs))})
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
    lines = [f"{name}: {leaves} leaves, batch 1, 10th percentile of {rounds} blocks of {BLOCK} (µs a call)",
             f"  step        {p10['step']:8.1f}",
             f"  step, kept  {p10['step, kept']:8.1f}",
             f"  cycle       {p10['cycle']:8.1f}",
             f"  alone (sum) {alone:8.1f}   " + " ".join(f"{p10[f'alone {i}']:.1f}" for i in range(leaves)),
             f"  step - cycle {p10['step'] - p10['cycle']:+.1f}, cycle - alone {p10['cycle'] - alone:+.1f} "
             f"({(p10['cycle'] - alone) / leaves:+.2f} a leaf)"]
    return "\n".join(lines)


def main(argv=None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="reference models (crossover.opcost.reference_models)")
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
