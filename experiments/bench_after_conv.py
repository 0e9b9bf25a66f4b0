"""What the ops right after a convolution pay: a small op timed after each kind of producer, against both
alone, on fixed inputs (so the follower reads nothing the producer wrote).

    python experiments/bench_after_conv.py [--threads 1] [--rounds 15]

A lead for the depthwise-separable CNN, under-predicted on every machine (14-20% on the 2-core VM, 25%
and 37% on the H100's host at 16 and one thread): inside its step each batch norm and ReLU after a
convolution takes 1.2-2.4 times its lone cost (``bench_module_times.py``), and on the Intel VM at one
thread a batch norm on a fixed 128 KiB tensor took some 30 µs more right after the CNN's depthwise
convolution than alone, as did a multiply: the follower pays whatever it reads. The producers are the
depthwise CNN's own (its stem, a depthwise and a pointwise convolution at batch 8), a dense 3×3
convolution, a convolution on PyTorch's native path (one image), a matrix product (MKL), an
elementwise multiply and plain copies of 128 KiB-4 MiB (what the bytes alone do); the followers a ReLU over 4096 elements, four of them, and the CNN's eval batch
norm over 128 KiB. Each (producer, follower) pair, each producer and each follower alone is a visit of
40 calls (per-call median) in shuffled rounds, one process, the allocator settled; the table gives the
median over rounds of ``pair - producer - follower``. Run it on a quiet machine.

On the Intel VM (logs ``experiments/results/intel-xeon-2c/logs/bench_after_conv_t{1,2}.log``) the batch
norm paid 40-48 µs more after the stem, depthwise and dense oneDNN convolutions at one thread (3-4 times
its 12.6 µs alone) and as much after the 512 KiB multiply, but 4-5 µs after the pointwise and native
ones, whose data are small; 15-26 µs at two threads. A ReLU over 16 KiB paid 8-14 µs after the larger
oneDNN convolutions at one thread, 4-16 at two, 2-5 after the rest: an op costs more once work before it
has moved its data and code out of the private caches, which the calibration's primitives, each repeated
back to back, never see (``bench_wake_kinds.py``: an op after 100 µs of other work pays 5-9 µs at one
thread). The plain copies say what triggers it (``bench_after_conv_copies_t{1,2}.log``): at one thread the
batch norm paid nothing after a copy of 128 KiB, 12 µs after 512 KiB, and 55-71 µs after 1-4 MiB (2-8 MiB
moved, from the 2 MiB a core's private cache holds); at two threads nothing up to 512 KiB, 4 µs after
1 MiB and 49-57 µs after 2-4 MiB: the threshold moves with the private caches the op's threads hold.
The ReLU over 16 KiB paid 15-31 µs past it at one thread (-5 and +19 µs at two), far more than reading 16 KiB back: the op's code and the
dispatcher's, not only its data, come back from the shared cache.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time


#: Sizes of the plain copies among the producers (KiB read, as many written): around a private cache.
COPY_KIB = (128, 512, 1024, 2048, 4096)


def producers_and_followers() -> tuple:
    """``(producers, followers)``: name -> call, on tensors made once (nothing a follower reads is written
    by a producer)."""
    import torch

    torch.manual_seed(0)
    x_stem, x_16 = torch.randn(8, 3, 32, 32), torch.randn(8, 16, 32, 32)
    x_dw_out = torch.randn(8, 16, 16, 16)
    stem = torch.nn.Conv2d(3, 16, 3, 1, 1).eval()
    depthwise = torch.nn.Conv2d(16, 16, 3, 2, 1, groups=16, bias=False).eval()
    pointwise = torch.nn.Conv2d(16, 32, 1, bias=False).eval()
    dense = torch.nn.Conv2d(16, 16, 3, padding=1).eval()
    native = torch.nn.Conv2d(16, 16, 3, padding=1).eval()  # one image, 3x3: PyTorch's own path
    x_native = torch.randn(1, 16, 32, 32)
    a, b = torch.randn(64, 256), torch.randn(256, 256)
    m1, m2 = torch.randn(8, 16, 32, 32), torch.randn(8, 16, 32, 32)
    small = torch.randn(4096)
    norm = torch.nn.BatchNorm2d(16).eval()
    producers = {"stem conv 3->16 (oneDNN)": lambda: stem(x_stem),
                 "depthwise 16 /2 (oneDNN)": lambda: depthwise(x_16),
                 "pointwise 16->32 (oneDNN)": lambda: pointwise(x_dw_out),
                 "dense 16->16 3x3 (oneDNN)": lambda: dense(x_16),
                 "native 16->16 3x3, 1 image": lambda: native(x_native),
                 "matmul 64x256x256 (MKL)": lambda: a @ b,
                 "mul 512 KiB": lambda: m1 * m2}
    for kib in COPY_KIB:  # a plain stream of that many bytes read and as many written: the bytes alone
        source, target = torch.randn(kib * 256), torch.empty(kib * 256)
        producers[f"copy {kib} KiB"] = (lambda s, t: lambda: t.copy_(s))(source, target)
    followers = {"relu 4096": lambda: torch.relu(small),
                 "4 x relu 4096": lambda: [torch.relu(small) for _ in range(4)],
                 "batch norm 128 KiB": lambda: norm(x_dw_out)}
    return producers, followers


def measure(producers: dict, followers: dict, rounds: int, calls: int = 40, seed: int = 0) -> dict:
    """``{(producer or None, follower or None): median over rounds of the per-call median, s}``."""
    import torch

    clock = time.perf_counter
    rng = random.Random(seed)
    keys = [(p, f) for p in [*producers, None] for f in [*followers, None] if (p, f) != (None, None)]
    per_round: dict = {}
    with torch.no_grad():
        for _ in range(rounds):
            rng.shuffle(keys)
            for p, f in keys:
                first, then = producers.get(p), followers.get(f)
                call = (lambda: (first(), then())) if first and then else (first or then)
                times = []
                for _ in range(calls):
                    start = clock()
                    call()
                    times.append(clock() - start)
                per_round.setdefault((p, f), []).append(statistics.median(times))
    return {key: statistics.median(values) for key, values in per_round.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    import torch

    from crossover.measurement.allocator import settle_allocator

    torch.set_num_threads(args.threads)
    settle_allocator()
    producers, followers = producers_and_followers()
    t = measure(producers, followers, args.rounds)
    print(f"{torch.get_num_threads()} thread(s), {args.rounds} rounds of 40 calls; µs: the producer alone, "
          f"then per follower the pair's extra over both alone (the follower alone in brackets)")
    for p in producers:
        cells = "  ".join(f"{f}: {(t[(p, f)] - t[(p, None)] - t[(None, f)]) * 1e6:+6.1f} ({t[(None, f)] * 1e6:.1f})"
                          for f in followers)
        print(f"  {p:28s} {t[(p, None)] * 1e6:7.1f}   {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
