"""Which ops open an OpenMP parallel region on this CPU, measured, against the rule that predicts it.

    python experiments/bench_parallel_regions.py [--threads 2] [--gap-us 30] [--calls 200]

``crossover.opcost.thread_wake`` charges a thread wake-up to each parallel op of a step whose threads
slept over the serial work before it; which ops run in parallel it decides by rule
(:func:`~crossover.opcost.thread_wake.opens_parallel_region`: MKL's thresholds for products, ATen's grain
size, convolutions, pooling). This script checks the rule where it can be seen: each op is timed after a
busy wait of ``--gap-us`` on the calling thread in two child processes, one whose OpenMP threads never
sleep (``OMP_WAIT_POLICY=ACTIVE``) and one whose threads sleep at once (``PASSIVE``; both read by GNU's
and Intel's runtimes alike); an op that runs in parallel pays its threads' wake-up in the second (45-175
µs on the 2-core VM at two threads), a serial one nothing. Each op is traced as the package traces a model
(``trace_module``) and its row given to the rule. Prints one line per op (10th percentiles of ``--calls``
calls) and how many agree. At one thread nothing runs in parallel; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

#: (label, sample shape with its batch, the op on a tensor of that shape, weights it needs by shape)
PROBES = (
    ("addmm 1x784x128", (1, 784), "linear", (128,)), ("addmm 1x128x10", (1, 128), "linear", (10,)),
    ("addmm 1x120x84", (1, 120), "linear", (84,)), ("addmm 1x128x128", (1, 128), "linear", (128,)),
    ("addmm 8x128x128", (8, 128), "linear", (128,)), ("addmm 16x128x128", (16, 128), "linear", (128,)),
    ("addmm 64x64x64", (64, 64), "linear", (64,)), ("addmm 32x64x64", (32, 64), "linear", (64,)),
    ("addmm 512x128x10", (512, 128), "linear", (10,)), ("addmm 4096x8x8", (4096, 8), "linear", (8,)),
    ("relu 32768", (1, 32768), "relu", ()), ("relu 40000", (1, 40000), "relu", ()),
    ("tanh 4096", (1, 4096), "tanh", ()), ("tanh 1024", (1, 1024), "tanh", ()),
    ("sum 64x128", (64, 128), "sum", ()), ("sum 512x128", (512, 128), "sum", ()),
    ("log_softmax 1x10", (1, 10), "log_softmax", ()), ("log_softmax 64x10", (64, 10), "log_softmax", ()),
    ("layer_norm 1x128", (1, 128), "layer_norm", ()), ("layer_norm 4x128", (4, 128), "layer_norm", ()),
    ("conv 1->6 5x5 B1 (oneDNN)", (1, 1, 28, 28), "conv", (6, 5, 2)),
    ("conv 3->8 3x3 B1 (native)", (1, 3, 32, 32), "conv", (8, 3, 1)),
    ("conv1d 4->16 k7 B1", (1, 4, 200), "conv1d", (16, 7, 0)),
    ("max_pool2d B1 6x28x28", (1, 6, 28, 28), "max_pool2d", ()),
    ("bmm 2x16x16", (2, 16, 16), "bmm", ()), ("embedding_bag 8x20", (8, 20), "embedding_bag", (1000, 64)),
    ("embedding_bag 1x20", (1, 20), "embedding_bag", (1000, 64)), ("addmm 1024x8x8", (1024, 8), "linear", (8,)),
    ("addmm 512x16x16", (512, 16), "linear", (16,)), ("conv1d 4->16 k7 B1 x50", (1, 4, 50), "conv1d", (16, 7, 0)),
    ("tanh 128", (1, 128), "tanh", ()), ("sigmoid 2048", (1, 2048), "sigmoid", ()),
    ("gelu 64", (1, 64), "gelu", ()), ("relu 8192", (1, 8192), "relu", ()),
    ("mm 120x1x400 (rank 1)", (1, 400), "outer", (120,)), ("mm 128x1x784 (rank 1)", (1, 784), "outer", (128,)),
    ("mm 10x1x128 (rank 1)", (1, 128), "outer", (10,)), ("mm 84x1x120 (rank 1)", (1, 120), "outer", (84,)),
)

_CHILD = r"""
import json, sys, time
import numpy as np, torch
from torch import nn
import torch.nn.functional as F
from crossover.opcost.thread_wake import opens_parallel_region
from crossover.opcost.trace import trace_module, op_name
probes, gap, calls, threads = json.loads(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
torch.manual_seed(0)

class Probe(nn.Module):
    def __init__(self, kind, shape, extra):
        super().__init__()
        self.kind = kind
        if kind == "linear":
            self.layer = nn.Linear(shape[-1], extra[0])
        elif kind in ("conv", "conv1d"):
            out, k, pad = extra
            layer = nn.Conv2d if kind == "conv" else nn.Conv1d
            self.layer = layer(shape[1], out, k, padding=pad)
        elif kind == "embedding_bag":
            self.layer = nn.EmbeddingBag(extra[0], extra[1], mode="sum")
        elif kind == "outer":  # a batch-1 weight gradient: (M x 1) @ (1 x N)
            self.column = nn.Parameter(torch.randn(extra[0], 1))
    def forward(self, x):
        if self.kind == "outer":
            return torch.mm(self.column, x)
        if hasattr(self, "layer"):
            return self.layer(x)
        return {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "gelu": F.gelu,
                "sum": lambda a: a.sum(0),
                "log_softmax": lambda a: torch.log_softmax(a, -1),
                "layer_norm": lambda a: F.layer_norm(a, a.shape[-1:]),
                "max_pool2d": lambda a: F.max_pool2d(a, 2), "bmm": lambda a: torch.bmm(a, a)}[self.kind](x)

def busy(s):
    until = time.perf_counter() + s
    while time.perf_counter() < until:
        pass

def p10(step, wait):
    times = []
    for _ in range(calls):
        t = time.perf_counter(); busy(wait); step(); times.append(time.perf_counter() - t - wait)
    return float(np.quantile(times, 0.1))

out = []
for label, shape, kind, extra in probes:
    model = Probe(kind, shape, extra).eval()
    x = torch.randint(0, extra[0], shape) if kind == "embedding_bag" else torch.randn(shape)
    rows = trace_module(model, torch.empty(shape, dtype=x.dtype, device="meta")).to_dict("records")
    main = [r for r in rows if r["kind"] != "view" and r["launches"]]
    predicted = any(opens_parallel_region(r, threads) for r in main)
    with torch.no_grad():
        step = lambda: model(x)
        for _ in range(20):
            step()
        after = p10(step, gap)
    out.append(dict(label=label, ops=[op_name(r["op"]) for r in main], after_s=after, predicted=predicted))
print(json.dumps(out))
"""

#: An op whose time after the wait with its threads asleep exceeds that with them spinning by more than
#: this ran in parallel (a wake-up on the VM: 45-175 µs; a serial op: under 2 µs either way).
PARALLEL_EXTRA_S = 12e-6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=min(os.cpu_count() or 2, 16),
                        help="intra-op threads (default: this machine's CPUs, at most 16)")
    parser.add_argument("--gap-us", type=float, default=30.0, help="busy wait before the op, µs (default 30)")
    parser.add_argument("--calls", type=int, default=100, help="calls per timing (default 100)")
    args = parser.parse_args(argv)
    if args.threads < 2:
        parser.error("--threads must be at least 2: one thread opens no parallel region")
    runs = {}
    for policy in ("ACTIVE", "PASSIVE"):
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OMP_WAIT_POLICY=policy)
        env.pop("GOMP_SPINCOUNT", None)
        child = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(PROBES), str(args.gap_us * 1e-6),
                                str(args.calls), str(args.threads)], env=env, capture_output=True, text=True)
        if child.returncode:
            sys.stderr.write(child.stderr)
            return child.returncode
        runs[policy] = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"{args.threads} threads, {args.gap_us:g} µs busy wait before each call: threads spinning "
          "(OMP_WAIT_POLICY=ACTIVE) against asleep (PASSIVE)")
    print(f"{'op':28s} {'traced as':34s} {'spin µs':>9s} {'extra µs':>9s}  measured  rule")
    agree = 0
    for row, asleep in zip(runs["ACTIVE"], runs["PASSIVE"]):
        extra = asleep["after_s"] - row["after_s"]
        measured = extra > PARALLEL_EXTRA_S
        agree += measured == row["predicted"]
        print(f"{row['label']:28s} {' '.join(row['ops'])[:34]:34s} {row['after_s'] * 1e6:9.1f} "
              f"{extra * 1e6:9.1f}  {'parallel' if measured else 'serial  '}  "
              f"{'parallel' if row['predicted'] else 'serial'}{'' if measured == row['predicted'] else '  MISS'}")
    print(f"the rule agrees on {agree} of {len(PROBES)} ops")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
