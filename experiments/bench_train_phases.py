"""Where a reference model's training step spends what its primitives do not cost: its phases, and each
leaf module's forward, timed in four settings on this CPU.

The composition fit (:mod:`crossover.opcost.composition`) scales a training step's autograd and optimizer
host work by ``1 + train_host_extra``; on the 2-core VM it fits 0.4-1.8, and the reference MLP's training step
at batch 1 still reads +35-39% (left out of the fit) while the CNNs' read low. This times, for one reference
model (:data:`crossover.opcost.reference_models.REFERENCE_MODELS`) at one batch size:

- ``train``: the training step as :func:`crossover.measurement.module_rounds.make_module_step` runs it
  (``zero_grad(set_to_none=True)``, forward and cross-entropy loss, ``backward``, ``SGD.step``), each phase
  with ``time.perf_counter``;
- ``forward+backward``: the same without the optimizer (gradients set to None by hand);
- ``grad forward``: the forward pass and loss with autograd recording, no backward;
- ``no_grad forward``: the forward pass under ``torch.no_grad()`` in eval mode;
- ``SGD.step alone``: the optimizer on the same gradients step after step.

Each leaf module's forward is timed with a pre- and a post-forward hook (a few hundred nanoseconds each).
Medians of ``--steps`` steps after ``--warmup``. Run it on a quiet machine.

    python experiments/bench_train_phases.py cnn --batch-size 1 --threads 1
    python experiments/bench_train_phases.py zoo:mnist_mlp --batch-size 8 --threads 2
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    from crossover.opcost.reference_models import REFERENCE_MODELS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help=f"a reference model ({', '.join(sorted(REFERENCE_MODELS))}), or zoo:NAME for "
                                      "a model of experiments/zoo with a float input (zoo:mnist_mlp)")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--steps", type=int, default=2500)
    args = parser.parse_args(argv)
    zoo_name = args.model.partition("zoo:")[2]
    zoo_path = Path(__file__).resolve().parent / "zoo" / f"{zoo_name}.py"
    if zoo_name and not zoo_path.exists():
        parser.error(f"no zoo model {zoo_name!r} ({zoo_path} does not exist)")
    if not zoo_name and args.model not in REFERENCE_MODELS:
        parser.error(f"unknown reference model {args.model!r}; expected one of {', '.join(sorted(REFERENCE_MODELS))}")

    import torch

    from crossover.opcost.reference_models import reference_model

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if zoo_name:
        from crossover.measurement.user_module import load_factory

        factory = load_factory(f"{zoo_path}:model")
        model, shape = factory(), tuple(factory.__globals__["INPUT_SHAPE"])
    else:
        model, shape = reference_model(args.model), REFERENCE_MODELS[args.model]
    x = torch.randn(args.batch_size, *shape)
    y = torch.randint(0, 10, (args.batch_size,))
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    clock = time.perf_counter
    times, started = defaultdict(list), {}
    leaves = [(name, module) for name, module in model.named_modules() if not list(module.children())]
    for name, module in leaves:
        module.register_forward_pre_hook(lambda m, i: started.__setitem__(id(m), clock()))
        module.register_forward_hook(lambda m, i, o, name=name: times[name].append(clock() - started[id(m)]))

    def train():
        a = clock()
        optimizer.zero_grad(set_to_none=True)
        b = clock()
        loss = loss_fn(model(x), y)
        c = clock()
        loss.backward()
        d = clock()
        optimizer.step()
        e = clock()
        for phase, seconds in (("zero_grad", b - a), ("forward+loss", c - b), ("backward", d - c),
                               ("optimizer", e - d), ("step", e - a)):
            times[phase].append(seconds)

    def forward_backward():
        a = clock()
        loss = loss_fn(model(x), y)
        b = clock()
        loss.backward()
        c = clock()
        for p in model.parameters():
            p.grad = None
        times["forward+loss"].append(b - a)
        times["backward"].append(c - b)
        times["step"].append(c - a)

    def grad_forward():
        a = clock()
        loss_fn(model(x), y)
        times["step"].append(clock() - a)

    def no_grad_forward():
        a = clock()
        with torch.no_grad():
            model(x)
        times["step"].append(clock() - a)

    def optimizer_alone():
        a = clock()
        optimizer.step()
        times["optimizer"].append(clock() - a)

    settings = (("train", train, True), ("forward+backward", forward_backward, True),
                ("grad forward", grad_forward, True), ("no_grad forward", no_grad_forward, False))
    columns = [name for name, _ in leaves] + ["zero_grad", "forward+loss", "backward", "optimizer", "step"]
    table = {}
    for label, run, training in settings:
        model.train(training)
        times.clear()
        for _ in range(args.warmup + args.steps):
            run()
        table[label] = {k: float(np.median(v[args.warmup:])) for k, v in times.items()}
    with torch.no_grad():  # the gradients the last training steps left
        loss_fn(model(x), y)
    model.train(True)
    loss_fn(model(x), y).backward()
    times.clear()
    for _ in range(args.warmup + args.steps):
        optimizer_alone()
    table["SGD.step alone"] = {"optimizer": float(np.median(times["optimizer"][args.warmup:]))}

    print(f"{args.model}, batch {args.batch_size}, {torch.get_num_threads()} threads; median µs of "
          f"{args.steps} steps (leaf modules by name, hooks included)")
    width = max(len(c) for c in columns)
    print(f"{'':<{width}s} " + " ".join(f"{label:>17s}" for label in table))
    for column in columns:
        cells = [table[label].get(column) for label in table]
        print(f"{column:<{width}s} " + " ".join(f"{c * 1e6:17.1f}" if c is not None else f"{'':>17s}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
