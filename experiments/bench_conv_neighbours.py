"""What a convolution costs among a step's other kernels: small kernels in rotation, with and without a
convolution among them, against each repeated alone.

    python experiments/bench_conv_neighbours.py [--threads 1] [--rounds 400]

The lead behind :mod:`crossover.opcost.conv_neighbours`. Every variant is a block of five calls timed in
turn with all the others, ``--rounds`` times in one process (each variant's 10th percentile of its blocks),
so every variant sees the host's states alike. The kernels: the 1-D CNN's first convolution at batch 1
(PyTorch's native path), LeNet-5's second (oneDNN's), a 1-D max-pooling, a layer norm over 256, a one-row
``Linear`` 64 → 10, a softmax over 1000, and the toy's product, ReLU and add over 256. For each rotation
it prints its time per op beyond the sum of its kernels alone. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

ROTATIONS = {
    "pair (Linear, softmax)": ["linear", "softmax"],
    "toy's three (mm, ReLU, add)": ["mm", "relu", "add"],
    "three small (Linear, softmax, layer norm)": ["linear", "softmax", "layer_norm"],
    "five small, no convolution": ["max_pool1d", "layer_norm", "linear", "softmax", "relu"],
    "native convolution and ReLU": ["conv1d", "relu"],
    "native convolution and two": ["conv1d", "layer_norm", "linear"],
    "native convolution and four": ["conv1d", "max_pool1d", "layer_norm", "linear", "softmax"],
    "oneDNN convolution and four": ["conv2d", "max_pool1d", "layer_norm", "linear", "softmax"],
}


def kernels() -> dict:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    x1, w1, b1 = torch.randn(1, 8, 256), torch.randn(32, 8, 5), torch.randn(32)
    xl, wl, bl = torch.randn(1, 6, 14, 14), torch.randn(16, 6, 5, 5), torch.randn(16)
    pooled, row, g, be = torch.randn(1, 32, 256), torch.randn(1, 256), torch.randn(256), torch.randn(256)
    x4, w4, b4, wide = torch.randn(1, 64), torch.randn(10, 64), torch.randn(10), torch.randn(1, 1000)
    xr, wr = torch.randn(1, 256), torch.randn(256, 256)
    return {"conv1d": lambda: F.conv1d(x1, w1, b1, padding=2), "conv2d": lambda: F.conv2d(xl, wl, bl),
            "max_pool1d": lambda: F.max_pool1d(pooled, 2), "layer_norm": lambda: F.layer_norm(row, (256,), g, be),
            "linear": lambda: F.linear(x4, w4, b4), "softmax": lambda: F.softmax(wide, -1),
            "mm": lambda: xr @ wr.t(), "relu": lambda: torch.relu(xr), "add": lambda: xr + xr}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    calls = kernels()

    def rotation(names):
        sequence = [calls[n] for n in names]
        return lambda: [call() for call in sequence]

    variants = dict(calls, **{label: rotation(names) for label, names in ROTATIONS.items()})
    times = {name: [] for name in variants}
    with torch.no_grad():
        for call in variants.values():
            for _ in range(50):
                call()
        for _ in range(args.rounds):
            for name, call in variants.items():
                start = time.perf_counter()
                for _ in range(5):
                    call()
                times[name].append((time.perf_counter() - start) / 5)
    p10 = {name: float(np.quantile(t, 0.1)) for name, t in times.items()}
    print(f"{args.threads} thread(s), {args.rounds} rounds; each kernel alone (µs): "
          + ", ".join(f"{n} {p10[n] * 1e6:.1f}" for n in calls))
    for label, names in ROTATIONS.items():
        alone = sum(p10[n] for n in names)
        print(f"{label:42s} {p10[label] * 1e6:7.1f} µs against {alone * 1e6:7.1f} alone: "
              f"{(p10[label] - alone) / len(names) * 1e6:+5.2f} µs an op")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
