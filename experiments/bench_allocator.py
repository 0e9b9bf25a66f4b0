"""What the host allocator's state does to a CPU step: zoo models timed in a fresh process and in one
whose glibc allocator was first settled (:func:`crossover.measurement.allocator.settle_allocator`).

    python experiments/bench_allocator.py [--threads 1] [--batch-sizes 8,64] [--models conv1d_sequence,...]
    python experiments/bench_allocator.py --processes 6 --batch-sizes 512 --models depthwise_cnn,conv1d_sequence
    python experiments/bench_allocator.py --visits 8 --batch-sizes 512 --models depthwise_cnn
    python experiments/bench_allocator.py --processes 2 --batch-sizes 512 --models wavenet_block --zoo experiments/zoo_third

Each (state, model) runs in a process of its own, so what one measured cannot warm the next; per step
it prints the page faults (``getrusage``) and the 10th percentile of 30 timed steps. Run it on a quiet
machine.

With ``--processes K`` it runs K settled processes per (model, batch) instead and prints, per process,
the MiB faulted in per step (least, median, most of the 30) and the 10th percentile and median of the
step, beside the MiB the prediction faults in (:func:`crossover.opcost.op_costs.fresh_bytes` summed
over the step's trace): how far the settled state's page faults vary between steps and processes.

With ``--visits K`` it runs one settled process per (model, batch) that times the step K times, 10 steps
a visit, each visit after other zoo models' steps (``--others``) and after allocating buffers of 1 to
60 MiB of which it keeps up to three alive (a seeded draw): a long-running process whose heap holds
and has freed other things, as a calibration's rounds or a server's are.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ZOO = Path(__file__).resolve().parent / "zoo"

#: Each child times its steps with this: per step the seconds and the page faults (``getrusage``).
_TIMED = """
import resource, time
def timed(model, x, steps):
    times, faults = [], []
    for _ in range(steps):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t = time.perf_counter()
        model(x)
        times.append(time.perf_counter() - t)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return times, faults
"""

_CHILD = """
import json, resource, sys, time
import numpy as np, torch
sys.path.insert(0, {zoo!r})
torch.set_num_threads({threads})
if {settle}:
    from crossover.measurement.allocator import settle_allocator
    settle_allocator()
import importlib
module = importlib.import_module({model!r})
torch.manual_seed(0)
model = module.model().eval()
out = []
for batch in {batches}:
    x = torch.randn(batch, *module.INPUT_SHAPE)
    with torch.no_grad():
        for _ in range(5):
            model(x)
        times, step_faults = timed(model, x, 30)
        faults = sum(step_faults) / 30
    out.append(dict(batch=batch, faults=faults, p10_s=float(np.quantile(times, 0.1)), step_faults=step_faults,
                    times_s=times))
print(json.dumps(out))
"""


_VISITS = """
import json, random, resource, sys, time
import numpy as np, torch
sys.path.insert(0, {zoo!r})
torch.set_num_threads({threads})
from crossover.measurement.allocator import settle_allocator
settle_allocator()
import importlib
torch.manual_seed(0)
def load(name, batch):
    module = importlib.import_module(name)
    return module.model().eval(), torch.randn(batch, *module.INPUT_SHAPE)
model, x = load({model!r}, {batch})
others = [load(name, {batch}) for name in {others!r}]
draw, kept, out = random.Random({seed}), [], []
with torch.no_grad():
    for visit in range({visits}):
        for _ in range(5):
            other, ox = draw.choice(others)
            other(ox)
            kept.append(torch.empty(draw.randint(1, 60) * 2**18).fill_(1.0))
            if len(kept) > 3:
                kept.pop(draw.randrange(len(kept)))
        for _ in range(3):
            model(x)
        times, faults = timed(model, x, 10)
        out.append(dict(p10_s=float(np.quantile(times, 0.1)), step_faults=faults))
print(json.dumps(out))
"""


def visits(models: list, batches: list, threads: int, count: int, others: list, seed: int) -> None:
    """Print each visit's page faults per step and step time in one disturbed process per (model, batch)."""
    import numpy as np

    mib = 4096 / 2**20
    print(f"{'model':18s} {'batch':>5s} {'visit':>5s} {'faulted MiB/step: least':>24s} {'median':>7s} {'p10 ms':>7s}")
    for model in models:
        for batch in batches:
            code = _TIMED + _VISITS.format(zoo=str(ZOO), threads=threads, model=model, batch=batch, seed=seed,
                                           visits=count, others=[o for o in others if o != model])
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            for k, visit in enumerate(json.loads(done.stdout.strip().splitlines()[-1])):
                f = np.array(visit["step_faults"]) * mib
                print(f"{model:18s} {batch:5d} {k + 1:5d} {f.min():24.0f} {np.median(f):7.0f} "
                      f"{visit['p10_s'] * 1e3:7.2f}", flush=True)
            print(f"{model:18s} {batch:5d} predicted: {predicted_fresh_bytes(model, batch, threads) / 2**20:.0f} MiB "
                  "faulted in every step")


def run(model: str, batches: list, threads: int, settle: bool) -> list:
    code = _TIMED + _CHILD.format(zoo=str(ZOO), threads=threads, settle=settle, model=model, batches=batches)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def predicted_fresh_bytes(model: str, batch: int, threads: int) -> float:
    """Bytes the prediction counts as faulted in afresh every step (the trace's fresh outputs and oneDNN
    copies, :func:`crossover.opcost.op_costs.fresh_bytes`)."""
    import importlib

    sys.path.insert(0, str(ZOO))
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import fresh_bytes

    module = importlib.import_module(model)
    table, _ = trace_step(module.model(), module.INPUT_SHAPE, batch, "forward")
    return sum(fresh_bytes(row, threads) for row in table.to_dict("records"))


def processes(models: list, batches: list, threads: int, count: int) -> None:
    """Print each settled process's page faults per step and its step times (see the module docstring)."""
    import numpy as np

    mib = 4096 / 2**20
    print(f"{'model':18s} {'batch':>5s} {'process':>7s} {'faulted MiB/step: least':>24s} {'median':>7s} "
          f"{'most':>6s} {'p10 ms':>7s} {'median ms':>9s}")
    for model in models:
        predicted = {b: predicted_fresh_bytes(model, b, threads) / 2**20 for b in batches}
        for k in range(count):
            for point in run(model, batches, threads, True):
                f = np.array(point["step_faults"]) * mib
                print(f"{model:18s} {point['batch']:5d} {k + 1:7d} {f.min():24.0f} {np.median(f):7.0f} {f.max():6.0f} "
                      f"{point['p10_s'] * 1e3:7.2f} {np.median(point['times_s']) * 1e3:9.2f}", flush=True)
        for b in batches:
            print(f"{model:18s} {b:5d} predicted: {predicted[b]:.0f} MiB faulted in every step")


def main(argv=None) -> int:
    global ZOO
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-sizes", default="8,64")
    parser.add_argument("--models", default="conv1d_sequence,depthwise_cnn,lenet5,mnist_mlp")
    parser.add_argument("--processes", type=int, default=0,
                        help="run this many settled processes per model and print each one's faults per step")
    parser.add_argument("--visits", type=int, default=0,
                        help="time the step this many times in one process whose heap other work disturbs")
    parser.add_argument("--others", default="conv1d_sequence,lenet5",
                        help="with --visits: the zoo models run between visits")
    parser.add_argument("--seed", type=int, default=1, help="with --visits: the draw of the buffers kept")
    parser.add_argument("--zoo", type=Path, default=ZOO, help="folder of the models (default: experiments/zoo)")
    args = parser.parse_args(argv)
    ZOO = args.zoo.resolve()
    batches = [int(b) for b in args.batch_sizes.split(",")]
    sys.path.insert(0, str(ZOO))
    import importlib

    models = []
    for name in args.models.split(","):  # the steps run on random floats: models of integer ids are left out
        if getattr(importlib.import_module(name), "INPUT_DTYPE", "float32") not in ("float", "float32"):
            print(f"{name}: left out (its input is integer ids; this script feeds random floats)", file=sys.stderr)
        else:
            models.append(name)
    args.models = ",".join(models)
    if args.visits:
        visits(args.models.split(","), batches, args.threads, args.visits, args.others.split(","), args.seed)
        return 0
    if args.processes:
        processes(args.models.split(","), batches, args.threads, args.processes)
        return 0
    print(f"{'model':18s} {'batch':>5s} {'fresh: faults/step':>19s} {'µs':>9s} {'settled: faults/step':>21s} {'µs':>9s}")
    for model in args.models.split(","):
        fresh, settled = run(model, batches, args.threads, False), run(model, batches, args.threads, True)
        for a, b in zip(fresh, settled):
            print(f"{model:18s} {a['batch']:5d} {a['faults']:19.0f} {a['p10_s'] * 1e6:9.0f} {b['faults']:21.0f} "
                  f"{b['p10_s'] * 1e6:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
