"""What ops cost inside a model against the same ops repeated alone (the composition terms' evidence).

    python experiments/bench_in_model.py [--steps 3000] [--only {mlp,lenet,toy}]

Two measurements, each in one process within a minute, so that the machine's drift falls on both:

1. The MNIST MLP's training step at batch 1, 8 and 64, each phase timed inside the step
   (``zero_grad``, forward, loss, backward, ``SGD.step``; the 10th percentile over the steps), against
   the same ``SGD.step`` called alone on the same gradients.
2. LeNet-5's convolutions and max-pooling, forward at batch 1, 8 and 64: self time per call under
   ``torch.profiler`` inside the model against the same layer called alone on the same input.

3. The toy model's layers (``ResidualMLP``, forward, no grad) at batch 1, 2 and 16 over widths:
   per-layer time of the whole step against its matrix products alone (``torch.mm`` on the same
   weights, in the same order), interleaved round by round. What is left is the host work and the
   elementwise ops between the products, which the ``calibrated`` latency model costs as its floor:
   it grows as a layer's weights fill a core's private cache (``floor_evicted_scale``) and steps up
   from batch 2 (``gemm_layer_s``, :mod:`crossover.fit.latency_models`).

A calibration times each primitive alone, back to back; the gap between the two columns is what the
profile's composition terms (``train_host_extra``, ``conv_forward_extra``, ``backward_extra``,
fitted on reference models) and the calibrated model's floor terms stand for. Run it on a quiet
machine. ``--only toy`` runs the third part alone (about half a minute).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from crossover.measurement.toy_model import ResidualMLP
from crossover.measurement.user_module import load_factory

ZOO = Path(__file__).resolve().parent / "zoo"


def _phases(batch: int, steps: int) -> tuple:
    """(p10 µs of zero_grad, forward, loss, backward, step, whole step; p10 µs of SGD.step alone)."""
    torch.manual_seed(0)
    model = load_factory(f"{ZOO / 'mnist_mlp'}.py:model")()
    x, target = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, foreach=False)
    clock, laps = time.perf_counter, []
    for i in range(steps):
        t0 = clock()
        optimizer.zero_grad()
        t1 = clock()
        out = model(x)
        t2 = clock()
        loss = F.cross_entropy(out, target)
        t3 = clock()
        loss.backward()
        t4 = clock()
        optimizer.step()
        t5 = clock()
        if i >= steps // 10:  # warm-up
            laps.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0))
    alone = []
    for _ in range(steps):
        t0 = clock()
        optimizer.step()
        alone.append(clock() - t0)
    return tuple(np.percentile(np.array(laps) * 1e6, 10, axis=0)), float(np.percentile(alone, 10) * 1e6)


def _self_us(prof, names) -> dict:
    return {(e.key.split("::")[-1], str(e.input_shapes[0])): e.self_cpu_time_total / e.count
            for e in prof.key_averages(group_by_input_shape=True) if e.key.split("::")[-1] in names}


def _lenet(batch: int, calls: int) -> list:
    """[(op, input shape, µs per call in the model, µs per call alone)] for LeNet-5's convolutions and pools."""
    torch.manual_seed(0)
    model = load_factory(f"{ZOO / 'lenet5'}.py:model")().eval()
    x = torch.randn(batch, 1, 28, 28)
    names = {"mkldnn_convolution", "_slow_conv2d_forward", "max_pool2d_with_indices"}
    with torch.no_grad():
        inputs = [x]
        for layer in model:
            inputs.append(layer(inputs[-1]))
        for _ in range(20):
            model(x)
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as inside:
            for _ in range(calls):
                model(x)
        kinds = (torch.nn.Conv2d, torch.nn.MaxPool2d)
        layers = [(layer, a) for layer, a in zip(model, inputs) if isinstance(layer, kinds)]
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as alone:
            for layer, a in layers:
                for _ in range(calls):
                    layer(a)
    a, b = _self_us(inside, names), _self_us(alone, names)
    return [(op, shape, a[(op, shape)], b.get((op, shape), float("nan"))) for op, shape in a]


def _block_s(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def _toy_layers(d_model: int, batch: int, n_layers: int = 16, rounds: int = 100) -> tuple:
    """(µs per layer of the toy's step, of its matrix products alone): 10th percentiles over
    ``rounds`` interleaved blocks of two steps each."""
    model = ResidualMLP(d_model, n_layers)
    weights = [p.t() for p in model.parameters()]
    x = torch.randn(batch, d_model)

    def products():
        for w in weights:
            torch.mm(x, w)

    step, alone = [], []
    with torch.no_grad():
        model(x)
        products()
        for _ in range(rounds):
            step.append(_block_s(lambda: model(x), 2) / n_layers)
            alone.append(_block_s(products, 2) / n_layers)
    return float(np.percentile(step, 10) * 1e6), float(np.percentile(alone, 10) * 1e6)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000, help="training steps per batch size (default 3000)")
    parser.add_argument("--only", choices=("mlp", "lenet", "toy"), help="run one of the three parts")
    args = parser.parse_args(argv)
    print(f"{torch.get_num_threads()} threads; 10th percentiles in µs")
    if args.only in (None, "mlp"):
        print("MNIST MLP training step, each phase inside the step; SGD.step alone on the same gradients")
        print(f"{'batch':>5s} {'zero_grad':>9s} {'forward':>8s} {'loss':>6s} {'backward':>8s} {'step':>6s} "
              f"{'whole':>7s} {'step alone':>10s}")
        for batch in (1, 8, 64):
            (zero, forward, loss, backward, step, whole), alone = _phases(batch, args.steps)
            print(f"{batch:5d} {zero:9.1f} {forward:8.1f} {loss:6.1f} {backward:8.1f} {step:6.1f} {whole:7.1f} "
                  f"{alone:10.1f}")
    if args.only in (None, "lenet"):
        print("\nLeNet-5 forward: self µs per call under torch.profiler, in the model and the same layer alone")
        print(f"{'batch':>5s} {'op':<26s} {'input':<18s} {'in model':>9s} {'alone':>7s} {'ratio':>6s}")
        for batch in (1, 8, 64):
            for op, shape, inside, alone in _lenet(batch, 200):
                print(f"{batch:5d} {op:<26s} {shape:<18s} {inside:9.1f} {alone:7.1f} {inside / alone:6.2f}")
    if args.only in (None, "toy"):
        print("\nToy model (16 layers), µs per layer: the whole step, its matrix products alone on the same weights, "
              "and what is left between them (host work, elementwise ops)")
        print(f"{'d_model':>7s} {'layer KiB':>9s} " + " ".join(f"{f'B={b} step':>10s} {'products':>8s} {'left':>6s}"
                                                              for b in (1, 2, 16)))
        for d_model in (16, 64, 128, 192, 256, 320, 384, 448, 512, 768, 1024):
            cells = [_toy_layers(d_model, batch) for batch in (1, 2, 16)]
            print(f"{d_model:7d} {4 * d_model * d_model / 1024:9.0f} " + " ".join(
                f"{step:10.1f} {alone:8.1f} {step - alone:6.1f}" for step, alone in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
