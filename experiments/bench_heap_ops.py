"""glibc's heap around each op of a zoo model's CPU step: where a step's fresh pages come from.

    python experiments/bench_heap_ops.py wavenet_block --zoo experiments/zoo_third --batch-size 512 --threads 1

Runs the step a few times in this process (settled as a measurement is:
:func:`crossover.measurement.allocator.settle_allocator`) under a dispatch mode that, after every ATen op,
reads ``mallinfo2()`` (the main arena's size, the bytes mapped apart from it, the bytes in use, the free
top) and the process's minor page faults. It prints each step's MiB faulted in, then the last step op by
op. An op whose faults grow while the arena and the mapped bytes stay put mapped and unmapped a buffer
inside itself (oneDNN's blocked copies of 32 MiB or more); an arena that grows and is cut back at the
step's end is glibc trimming its free top. Linux with glibc only.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import resource
import sys
from pathlib import Path

MIB = 2**20


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model of --zoo (e.g. wavenet_block)")
    parser.add_argument("--zoo", type=Path, default=Path(__file__).resolve().parent / "zoo")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args(argv)

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from crossover.measurement.allocator import settle_allocator

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2

    def faults() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    log = []

    class Heap(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            info = libc.mallinfo2()
            log.append((str(func), info.arena / MIB, info.hblkhd / MIB, info.uordblks / MIB, info.keepcost / MIB,
                        faults()))
            return out

    torch.set_num_threads(args.threads)
    settle_allocator()
    sys.path.insert(0, str(args.zoo.resolve()))
    module = importlib.import_module(args.model)
    model = module.model().eval()
    x = torch.randn(args.batch_size, *module.INPUT_SHAPE)
    page_mib = resource.getpagesize() / MIB
    print(f"{args.model} forward, batch {args.batch_size}, {args.threads} threads")
    with torch.no_grad():
        for step in range(args.steps):
            log.clear()
            start = faults()
            with Heap():
                out = model(x)
            del out
            print(f"step {step}: {(faults() - start) * page_mib:.1f} MiB faulted in")
    print(f"{'op (last step)':36s} {'arena MiB':>9s} {'mapped':>7s} {'in use':>7s} {'free top':>8s} {'faulted':>8s}")
    for name, arena, mapped, used, top, count in log:
        print(f"{name[:36]:36s} {arena:9.1f} {mapped:7.1f} {used:7.1f} {top:8.1f} {(count - start) * page_mib:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
