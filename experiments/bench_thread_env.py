"""Which thread setting a CPU's slow batch-1 steps answer to: zoo steps timed in fresh processes under
environment variants.

    python experiments/bench_thread_env.py [--points lenet5:forward,mnist_mlp:train] [--batches 1,8]
                                           [--variants default,active,passive] [--steps 50]

On the 16-core Xeon hosts of the GPU machines some steps run several times slower at batch 1 than at
batch 8 at 16 threads, and not at one thread: LeNet-5's forward pass (0.6-1.0 ms against 0.3-0.4 ms at
batch 8 and 0.19 ms at one thread), the MNIST MLP's training step (953 against 297 µs on the H100's third
visit), the 1-D CNN's forward pass (473 µs against 124 predicted). The calibration's primitives, each
repeated alone, do not show it. The variants test whether it is the OpenMP threads' waiting between
the step's parallel regions, which a batch-1 step separates by serial ops:

- ``active`` (``OMP_WAIT_POLICY=ACTIVE``): the threads spin between parallel regions, never sleep;
- ``passive`` (``OMP_WAIT_POLICY=PASSIVE``): they sleep at once, and each region wakes them;
- ``bound`` (``OMP_PROC_BIND=close OMP_PLACES=cores``): each thread held on one core;
- ``half`` (``OMP_NUM_THREADS`` half the usable CPUs): as many threads as the cores where two hardware
  threads share each (the environment record's ``cpu_physical_cores``), so no thread waits on a sibling.

(``MKL_NUM_THREADS`` is no variant: PyTorch sizes its OpenMP pool from MKL's thread count, so it sets
every op's threads, not MKL's alone.) On the 2-core VM at two threads the default and ``active`` read
alike and ``passive`` 1.5-5 times slower (LeNet-5 at batch 1: 118, 116 and 368 µs).

Beside each step, the step's convolution and pooling modules each timed alone on the input it had in
the step (10th percentile of ``--steps`` calls, summed): the calibration's primitives are such lone
calls, so a step far above its modules alone under the default and near them under ``active`` points at
the threads' waiting; on the H100's fourth visit torch.profiler put LeNet-5's batch-1 convolutions at
347 µs a call in the step, where the calibration's batch-1 5×5 oneDNN cells (1→8 and 6→16 channels on
16 and 32 pixels) read 80-109 µs alone.

Each variant runs in a process of its own (the environment is read when the runtimes start), with the
allocator settled; per (model, workload, batch) it prints the 10th percentile of ``--steps`` steps in
µs, variant by variant as each process ends, so a run stopped at a time limit keeps what it measured.
Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from crossover.measurement.procfs import usable_cores

ZOO = Path(__file__).resolve().parent / "zoo"
#: Each variant's environment on top of the caller's.
VARIANTS = {"default": {}, "active": {"OMP_WAIT_POLICY": "ACTIVE"}, "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
            "bound": {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
            "half": {"OMP_NUM_THREADS": str(max(usable_cores() // 2, 1))}}

_CHILD = """
import importlib, json, sys, time
import numpy as np, torch
sys.path.insert(0, {zoo!r})
from crossover.measurement.allocator import settle_allocator
from crossover.measurement.module_rounds import example_input, make_module_step
from crossover.measurement.user_module import input_dtype
settle_allocator()
ALONE = (torch.nn.modules.conv._ConvNd, torch.nn.modules.pooling._MaxPoolNd, torch.nn.modules.pooling._AvgPoolNd,
         torch.nn.modules.pooling._AdaptiveMaxPoolNd, torch.nn.modules.pooling._AdaptiveAvgPoolNd)
out = []
for name, workload in {points!r}:
    module = importlib.import_module(name)
    for batch in {batches!r}:
        torch.manual_seed(0)
        model = module.model()
        x = example_input(module.INPUT_SHAPE, batch, dtype=input_dtype(getattr(module, "INPUT_DTYPE", "float32")),
                          model=model)
        step = make_module_step(model, x, workload)
        for _ in range(10):
            step()
        times = []
        for _ in range({steps}):
            t = time.perf_counter()
            step()
            times.append(time.perf_counter() - t)
        # the step's convolutions and poolings alone, each repeated on the input it had in the step
        captured, hooks = [], []
        for layer in model.modules():
            if isinstance(layer, ALONE):
                hooks.append(layer.register_forward_hook(lambda m, args, out: captured.append((m, args))))
        with torch.no_grad():
            model(x)
        for h in hooks:
            h.remove()
        alone_s = 0.0
        with torch.no_grad():
            for layer, args in captured:
                for _ in range(5):
                    layer(*args)
                lone = []
                for _ in range({steps}):
                    t = time.perf_counter()
                    layer(*args)
                    lone.append(time.perf_counter() - t)
                alone_s += float(np.quantile(lone, 0.1))
        out.append(dict(model=name, workload=workload, batch=batch, p10_s=float(np.quantile(times, 0.1)),
                        alone_s=alone_s, alone_modules=len(captured)))
print(json.dumps(dict(threads=torch.get_num_threads(), points=out)))
"""


def run_variant(variant: str, points: list, batches: list, steps: int, zoo: Path = ZOO) -> dict:
    """One fresh process under ``VARIANTS[variant]``: its thread count and each point's 10th percentile
    (the models of the folder ``zoo``)."""
    code = _CHILD.format(zoo=str(zoo), points=points, batches=batches, steps=steps)
    env = dict(os.environ, **VARIANTS[variant])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", default="lenet5:forward,mnist_mlp:train,conv1d_sequence:forward",
                        help="comma-separated zoo MODEL:WORKLOAD (default: the three slow at batch 1)")
    parser.add_argument("--zoo", type=Path, default=ZOO, help="folder of the models (default: experiments/zoo)")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--variants", default="default,active,passive",
                        help=f"comma-separated, of {', '.join(VARIANTS)} (default: default,active,passive)")
    parser.add_argument("--steps", type=int, default=50, help="timed steps per point (default 50)")
    args = parser.parse_args(argv)
    points = [tuple(p.split(":")) for p in args.points.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or any(len(p) != 2 for p in points):
        parser.error(f"unknown variant {unknown[0]!r}" if unknown else "--points takes MODEL:WORKLOAD pairs")
    for variant in variants:
        result = run_variant(variant, points, batches, args.steps, args.zoo)
        cells = "  ".join(f"{p['model']}/{p['workload']} B{p['batch']}: {p['p10_s'] * 1e6:.0f}"
                          + (f" (convs+pools alone {p['alone_s'] * 1e6:.0f})" if p.get("alone_modules") else "")
                          for p in result["points"])
        print(f"{variant:8s} ({result['threads']} threads, µs)  {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
