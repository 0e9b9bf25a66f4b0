"""Ops a CPU calibration once costed as cheaper ones: activation functions against a ReLU of the same bytes,
and strided native convolutions against the stride-1 ones of the same output.

    python experiments/bench_costly_ops.py [--threads 1] [--repeats 7]

Part 1 times each activation (forward, and the backward kernels) over 2^12 and 2^20 float32 elements and
prints its nanoseconds per element beside a ReLU's: what ``crossover/opcost/activations.py`` calibrates
each of them for. Part 2 times one image's 3×3 convolution on PyTorch's native path (oneDNN off) at
stride 2 on a 32 × 32 input and at stride 1 on a 16 × 16 one (the same 16 × 16 output), and prints the
difference per unfolded input element: what ``native_stride_column_s`` calibrates. Each time is the
second-quickest of ``--repeats`` blocks of back-to-back calls (``block_timing.block_mean_us``). Run it on a
quiet machine.
"""

from __future__ import annotations

import argparse
import sys

from block_timing import block_mean_us

FORWARD = ("relu", "tanh", "sigmoid", "gelu", "silu", "elu", "softplus", "mish", "exp", "erf")
BACKWARD = ("threshold_backward", "tanh_backward", "sigmoid_backward", "gelu_backward", "silu_backward",
            "mish_backward")
CONVS = ((3, 16), (8, 16), (16, 32), (32, 64))


def activation_ns_per_element(n: int, repeats: int) -> dict:
    """Nanoseconds per element of each op of :data:`FORWARD` and :data:`BACKWARD` over ``n`` elements."""
    import torch

    aten = torch.ops.aten
    x, grad = torch.randn(n), torch.randn(n)
    y, s = torch.tanh(x), torch.sigmoid(x)
    calls = max(3, 2**22 // n)
    calls_of = {"relu": lambda: aten.relu(x), "threshold_backward": lambda: aten.threshold_backward(grad, x, 0.0),
                "tanh_backward": lambda: aten.tanh_backward(grad, y),
                "sigmoid_backward": lambda: aten.sigmoid_backward(grad, s)}
    for op in FORWARD[1:]:
        calls_of[op] = (lambda f: lambda: f(x))(getattr(aten, op))
    for op in ("gelu_backward", "silu_backward", "mish_backward"):
        calls_of[op] = (lambda f: lambda: f(grad, x))(getattr(aten, op))
    return {op: block_mean_us(call, calls, blocks=repeats, warmup=3) / n * 1e3 for op, call in calls_of.items()}


def strided_native_us(c_in: int, c_out: int, repeats: int) -> tuple:
    """(stride 2 on 32 × 32, stride 1 on 16 × 16) µs of one image's native 3×3 convolution."""
    import torch

    w, b = torch.randn(c_out, c_in, 3, 3), torch.randn(c_out)
    big, small = torch.randn(1, c_in, 32, 32), torch.randn(1, c_in, 16, 16)
    before = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        strided = block_mean_us(lambda: torch.conv2d(big, w, b, stride=2, padding=1), 200, blocks=repeats, warmup=3)
        plain = block_mean_us(lambda: torch.conv2d(small, w, b, stride=1, padding=1), 200, blocks=repeats, warmup=3)
    finally:
        torch._C._set_mkldnn_enabled(before)
    return strided, plain


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    parser.add_argument("--repeats", type=int, default=7, help="blocks timed per op (default 7)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    print(f"{torch.get_num_threads()} threads; ns per element (second-quickest of {args.repeats} blocks)")
    for n in (2**12, 2**20):
        per = activation_ns_per_element(n, args.repeats)
        print(f"  {n:>8d} elements: " + "  ".join(f"{op} {ns:.2f}" for op, ns in per.items()), flush=True)
    print("native 3x3 convolution of one image, µs: stride 2 on 32x32 | stride 1 on 16x16 (same output) | ns more "
          "per unfolded input element")
    for c_in, c_out in CONVS:
        strided, plain = strided_native_us(c_in, c_out, args.repeats)
        per_element = (strided - plain) * 1e3 / (c_in * 9 * 16 * 16)
        print(f"  {c_in:>3d} -> {c_out:<3d} {strided:8.1f} {plain:8.1f}   x{strided / plain:.2f}  {per_element:.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
