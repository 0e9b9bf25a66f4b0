"""Softmax over rows shorter than a vector register: the CPU's row-wise ops by row length (#27).

For each row length in ``--lengths``, over ``--rows`` rows of float32 at ``--threads``, a call's time
(``block_timing.block_mean_us``: the second-quickest of nine blocks of back-to-back calls; the median over
``--rounds`` shuffled rounds) of ``softmax``, ``log_softmax``, their backward kernels (``_softmax_backward_data``,
``_log_softmax_backward_data``), ``layer_norm`` and ``sum`` over the last dimension, in µs and in ns per
element. ATen's vectorised softmax kernels run rows shorter than one vector of floats (16 on AVX-512, 8 on
AVX2: ``torch.backends.cpu.get_cpu_capability()``) element by element: on the 2-core Intel VM (AVX-512) at
one thread a log-softmax over 1024 rows of 10, a classifier's ten classes, took about ten times as long as
over rows of 16. A training step's cross-entropy over ten classes pays it forward and backward. The log is
the evidence behind the sub-vector row primitives (``rows_subvector``, ``rows_subvector_backward`` in :mod:`crossover.opcost.short_rows`). Run it on
a quiet machine.

    python experiments/bench_row_length.py [--threads 1] [--rows 1024] [--rounds 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from block_timing import block_mean_us

LENGTHS = (2, 4, 8, 10, 12, 15, 16, 17, 24, 32, 64, 256)
OPS = ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward", "layer_norm", "sum")


def _call(op: str, rows: int, length: int):
    import torch

    x = torch.randn(rows, length)
    if op == "softmax":
        return lambda: torch.softmax(x, -1)
    if op == "log_softmax":
        return lambda: torch.log_softmax(x, -1)
    if op in ("softmax_backward", "log_softmax_backward"):
        grad = torch.randn(rows, length)
        if op == "softmax_backward":
            y = torch.softmax(x, -1)
            return lambda: torch.ops.aten._softmax_backward_data(grad, y, 1, torch.float32)
        y = torch.log_softmax(x, -1)
        return lambda: torch.ops.aten._log_softmax_backward_data(grad, y, 1, torch.float32)
    if op == "layer_norm":
        return lambda: torch.layer_norm(x, (length,))
    return lambda: x.sum(-1)


def _visit_s(call, min_block_s: float = 2e-4) -> float:
    """Seconds a call: :func:`block_timing.block_mean_us` over blocks of at least ``min_block_s``."""
    start = time.perf_counter()
    call()
    calls = max(1, int(min_block_s / max(time.perf_counter() - start, 1e-7)))
    return block_mean_us(call, calls) * 1e-6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="row lengths, comma-separated")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    lengths = [int(v) for v in args.lengths.split(",") if v]
    cases = [(op, length) for op in OPS for length in lengths]
    calls = {case: _call(case[0], args.rows, case[1]) for case in cases}
    visits = {case: [] for case in cases}
    rng = random.Random(0)
    for _ in range(args.rounds):
        order = list(cases)
        rng.shuffle(order)
        for case in order:
            visits[case].append(_visit_s(calls[case]))
    print(f"{torch.__version__}, {torch.backends.cpu.get_cpu_capability()}, {args.threads} threads, {args.rows} rows, "
          f"{args.rounds} shuffled rounds; µs a call (ns per element)")
    print(f"{'length':>6s} " + " ".join(f"{op:>21s}" for op in OPS))
    for length in lengths:
        cells = []
        for op in OPS:
            s = statistics.median(visits[(op, length)])
            cells.append(f"{s * 1e6:10.1f} ({s * 1e9 / (args.rows * length):6.2f})")
        print(f"{length:6d} " + " ".join(f"{c:>21s}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
