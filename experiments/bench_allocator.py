"""What the host allocator's state does to a CPU step: zoo models timed in a fresh process and in one
whose glibc allocator was first settled (:func:`crossover.measurement.allocator.settle_allocator`).

    python experiments/bench_allocator.py [--threads 1] [--batch-sizes 8,64] [--models conv1d_sequence,...]

Each (state, model) runs in a process of its own, so what one measured cannot warm the next; per step
it prints the page faults (``getrusage``) and the 10th percentile of 30 timed steps. Run it on a quiet
machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ZOO = Path(__file__).resolve().parent / "zoo"

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
        start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        times = []
        for _ in range(30):
            t = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t)
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) / 30
    out.append(dict(batch=batch, faults=faults, p10_s=float(np.quantile(times, 0.1))))
print(json.dumps(out))
"""


def run(model: str, batches: list, threads: int, settle: bool) -> list:
    code = _CHILD.format(zoo=str(ZOO), threads=threads, settle=settle, model=model, batches=batches)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-sizes", default="8,64")
    parser.add_argument("--models", default="conv1d_sequence,depthwise_cnn,lenet5,mnist_mlp")
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batch_sizes.split(",")]
    print(f"{'model':18s} {'batch':>5s} {'fresh: faults/step':>19s} {'µs':>9s} {'settled: faults/step':>21s} {'µs':>9s}")
    for model in args.models.split(","):
        fresh, settled = run(model, batches, args.threads, False), run(model, batches, args.threads, True)
        for a, b in zip(fresh, settled):
            print(f"{model:18s} {a['batch']:5d} {a['faults']:19.0f} {a['p10_s'] * 1e6:9.0f} {b['faults']:21.0f} "
                  f"{b['p10_s'] * 1e6:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
