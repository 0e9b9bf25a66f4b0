"""What nesting a model's layers in blocks does to its CPU step: the zoo's depthwise CNN as written (its
separable blocks are ``nn.Sequential`` inside the model's), its leaves as one flat ``nn.Sequential``, and the
flat leaves run with each block's input held alive until the block ends, as the outer ``Sequential``'s loop
holds it.

A nested ``Sequential`` keeps a block's input referenced while the block runs, so one more activation is alive
at a time and the allocator hands the block's outputs other addresses than in the flat run. The three run in a
shuffled order in each round, blocks of five steps; the 10th percentile and median of a step. Run it on a
quiet machine.

    python experiments/bench_step_nesting.py [--batch-size 64] [--threads 1] [--rounds 60]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ZOO = Path(__file__).resolve().parent / "zoo"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args(argv)
    import torch

    from crossover.measurement.allocator import settle_allocator

    sys.path.insert(0, str(ZOO))
    import depthwise_cnn

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = depthwise_cnn.model().eval()
    x = torch.randn(args.batch_size, *depthwise_cnn.INPUT_SHAPE)
    flat = torch.nn.Sequential(*[m for m in model.modules() if not list(m.children())])

    def held(y):  # the flat leaves, each block's input kept referenced until the block ends
        for child in model:
            if isinstance(child, torch.nn.Sequential):
                block_input, z = y, y
                for layer in child:
                    z = layer(z)
                del block_input
                y = z
            else:
                y = child(y)
        return y

    with torch.no_grad():
        assert torch.allclose(flat(x), model(x)) and torch.allclose(held(x), model(x))
    runs = {"nested (the model)": model, "flat": flat, "flat, block inputs held": held}
    settle_allocator()
    times = {name: [] for name in runs}
    with torch.no_grad():
        for step in runs.values():
            for _ in range(5):
                step(x)
        for r in range(args.rounds):
            order = list(runs)
            np.random.default_rng(r).shuffle(order)
            for name in order:
                start = time.perf_counter()
                for _ in range(5):
                    runs[name](x)
                times[name].append((time.perf_counter() - start) / 5)
    print(f"depthwise_cnn batch {args.batch_size}, {args.threads} thread(s), {args.rounds} rounds; torch {torch.__version__}")
    base = float(np.quantile(times["flat"], 0.1))
    for name, t in times.items():
        p10 = float(np.quantile(t, 0.1))
        print(f"{name:26s} p10 {p10 * 1e3:7.3f} ms  median {np.median(t) * 1e3:7.3f} ms  p10 / flat's {p10 / base:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
