"""What one op of each kind pays once other work has turned over the private caches: a follower per cost
family, timed right after a plain copy of 1 or 4 MiB, against both alone.

    python experiments/bench_cold_followers.py [--threads 1] [--rounds 20]

``bench_after_conv.py`` showed the effect on two followers (a batch norm and a ReLU): an op costs more once
the work before it has moved its data and code out of a core's private cache, which the calibration's
primitives, each repeated back to back, never pay. Its what-if (``whatif_cold_ops_1127ev_*``) charged
every op one fixed price and helped at one thread count, hurt at the other, and left the question this
answers first: is the price op by op? Each follower is one op at a shape the zoo's models run at batch 8
(LeNet-5's second convolution and first pooling, the depthwise CNN's depthwise, pointwise and batch norm,
a linear layer's product, a Transformer's layer norm and softmax rows), on fixed inputs (it reads nothing
the copy wrote). Each (copy, follower) pair, each copy and each follower alone is a visit of 40 calls
(per-call median) in shuffled rounds, one process, the allocator settled; the table gives the median
over rounds of ``pair - copy - follower``. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import sys

from bench_after_conv import measure

#: Sizes of the copies that turn the caches over (KiB read, as many written).
COPY_KIB = (1024, 4096)


def followers() -> dict:
    """name -> (cost family, call), on tensors made once."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    act = torch.randn(8, 32, 8, 8)  # 64 KiB
    plane = torch.randn(8, 16, 16, 16)  # 128 KiB
    lenet_pool_in, lenet_conv_in = torch.randn(8, 6, 28, 28), torch.randn(8, 6, 14, 14)
    lenet_w, lenet_b = torch.randn(16, 6, 5, 5), torch.randn(16)
    dw_in, dw_w = torch.randn(8, 32, 16, 16), torch.randn(32, 1, 3, 3)
    pw_w = torch.randn(64, 32, 1, 1)
    norm = torch.nn.BatchNorm2d(16).eval()
    rows, weight, bias = torch.randn(8, 256), torch.randn(256, 256), torch.randn(256)
    tokens, scores = torch.randn(512, 256), torch.randn(2048, 64)
    ln_w, ln_b = torch.ones(256), torch.zeros(256)
    pooled = torch.randn(8, 64, 8, 8)
    return {"relu 64 KiB": ("elementwise", lambda: torch.relu(act)),
            "add 64 KiB": ("elementwise", lambda: act + act),
            "hardtanh 64 KiB": ("activation", lambda: F.hardtanh(act, 0.0, 6.0)),
            "batch norm 128 KiB": ("batch_norm", lambda: norm(plane)),
            "conv 6->16 5x5 (LeNet b8)": ("conv", lambda: F.conv2d(lenet_conv_in, lenet_w, lenet_b)),
            "depthwise 32 3x3 b8": ("conv_depthwise", lambda: F.conv2d(dw_in, dw_w, padding=1, groups=32)),
            "pointwise 32->64 b8": ("conv_pointwise", lambda: F.conv2d(dw_in, pw_w)),
            "max pool 2 (LeNet b8)": ("pool", lambda: F.max_pool2d(lenet_pool_in, 2)),
            "mean over planes b8": ("reduction", lambda: pooled.mean((2, 3))),
            "addmm 8x256x256": ("matmul", lambda: torch.addmm(bias, rows, weight)),
            "layer norm 512x256": ("reduction", lambda: F.layer_norm(tokens, (256,), ln_w, ln_b)),
            "softmax 2048x64": ("reduction", lambda: torch.softmax(scores, -1))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    import torch

    from crossover.measurement.allocator import settle_allocator

    torch.set_num_threads(args.threads)
    settle_allocator()
    copies = {}
    for kib in COPY_KIB:
        source, target = torch.randn(kib * 256), torch.empty(kib * 256)
        copies[f"copy {kib} KiB"] = (lambda s, t: lambda: t.copy_(s))(source, target)
    ops = followers()
    t = measure(copies, {name: call for name, (_, call) in ops.items()}, args.rounds)
    print(f"{torch.get_num_threads()} thread(s), {args.rounds} rounds of 40 calls; µs: the follower alone, then "
          f"after each copy its extra over both alone (the copy alone: "
          + ", ".join(f"{c} {t[(c, None)] * 1e6:.1f}" for c in copies) + ")")
    print(f"  {'follower':28s} {'family':15s} {'alone':>7s}  " + "  ".join(f"{c:>14s}" for c in copies))
    for name, (family, _) in ops.items():
        extras = "  ".join(f"{(t[(c, name)] - t[(c, None)] - t[(None, name)]) * 1e6:+14.1f}" for c in copies)
        print(f"  {name:28s} {family:15s} {t[(None, name)] * 1e6:7.1f}  {extras}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
