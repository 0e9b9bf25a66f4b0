"""Each layer of a calibration reference model alone and inside its step, at batch 1: what a step pays for
running different ops in turn.

Each leaf layer is timed alone (a block of ten calls on the input it gets in the step, the 10th percentile of
the blocks), then the step runs its leaves in a row with a clock read between each two (the 10th percentile
of each layer's single calls), and the step itself (blocks of ten) and its leaves called through ``forward``
without ``nn.Module.__call__``; all in the same rounds.

The reference models that are held out of the composition's fit set the interval's width
(:func:`crossover.opcost.composition.with_composition`: its 80% error over the forward steps, the held-out
kinds' errors as they are): on the AMD VM the normalised MLP read 17-41% low and the deep MLP 7-28% high at
batch 1 in the sittings of 1129p-r. This shows where.

    python experiments/bench_reference_inside.py norm_mlp deep_mlp mlp [--threads 1] [--rounds 300]

Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench_layers_alone import clocked_layers


def _p10_us(times) -> float:
    return float(np.quantile(times, 0.1)) * 1e6


def leaves_and_inputs(name: str) -> tuple:
    """Reference model ``name`` (eval mode, seeded), its leaf layers in a row, and each leaf's input at batch 1
    in its step (the first is the step's input)."""
    import torch

    from crossover.opcost.reference_models import REFERENCE_MODELS, reference_model

    torch.manual_seed(0)
    model = reference_model(name).eval()
    leaves = [m for m in model.modules() if not list(m.children())]
    x = torch.randn(1, *REFERENCE_MODELS[name])
    inputs, y = [], x
    with torch.no_grad():
        for layer in leaves:
            inputs.append(y)
            y = layer(y)
        if not torch.allclose(y, model(x)):
            raise SystemExit(f"{name} is not its leaf layers in a row")
    return model, leaves, inputs


def inside_and_alone(name: str, rounds: int) -> str:
    """The table of one reference model at batch 1 (see the module's docstring)."""
    import torch

    model, leaves, inputs = leaves_and_inputs(name)
    x = inputs[0]

    def bare(z):
        for layer in leaves:
            z = layer.forward(z)
        return z

    alone, inside, step, direct = [[] for _ in leaves], [[] for _ in leaves], [], []
    with torch.no_grad():
        for _ in range(rounds):
            for i, (layer, xi) in enumerate(zip(leaves, inputs)):
                start = time.perf_counter()
                for _ in range(10):
                    layer(xi)
                alone[i].append((time.perf_counter() - start) / 10)
            for run, out in ((model, step), (bare, direct)):
                start = time.perf_counter()
                for _ in range(10):
                    run(x)
                out.append((time.perf_counter() - start) / 10)
            for i, spent in enumerate(clocked_layers(leaves, x)):
                inside[i].append(spent)
    lines = [f"{name} batch 1, {torch.get_num_threads()} thread(s), {rounds} rounds; 10th percentiles, µs"]
    for i, layer in enumerate(leaves):
        lines.append(f"  {type(layer).__name__:12s} alone {_p10_us(alone[i]):7.2f}  inside the step {_p10_us(inside[i]):7.2f}"
                     f"  {_p10_us(inside[i]) - _p10_us(alone[i]):+6.2f}")
    lines.append(f"  layers alone summed {sum(map(_p10_us, alone)):.1f}; inside the step summed {sum(map(_p10_us, inside)):.1f};"
                 f" the step {_p10_us(step):.1f}; its leaves' forward() in a row {_p10_us(direct):.1f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="reference models (crossover.opcost.reference_models), e.g. norm_mlp")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args(argv)
    import torch

    from crossover.opcost.reference_models import REFERENCE_MODELS

    unknown = [m for m in args.models if m not in REFERENCE_MODELS]
    if unknown:
        parser.error(f"no reference model {unknown[0]!r} (known: {', '.join(REFERENCE_MODELS)})")
    torch.set_num_threads(args.threads)
    for name in args.models:
        print(inside_and_alone(name, args.rounds), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
