"""Ops a CPU calibration once costed as cheaper ones: activation functions against a ReLU of the same bytes,
strided and dilated native convolutions against the plain ones of the same output, and transposed
convolutions against the forward convolutions of the same shapes.

    python experiments/bench_costly_ops.py [--threads 1] [--repeats 7]

Part 1 times each activation (forward, and the backward kernels) over 2^12 and 2^20 float32 elements and
prints its nanoseconds per element beside a ReLU's: what ``crossover/opcost/activations.py`` calibrates
each of them for. Part 2 times one image's 3×3 convolution on PyTorch's native path (oneDNN off) at
stride 2 on a 32 × 32 input and at stride 1 on a 16 × 16 one (the same 16 × 16 output), and prints the
difference per unfolded input element: what ``native_stride_column_s`` calibrates. Part 3 does the same for
dilated convolutions of one image or sequence (dilations 2 and 4, 1-D and 2-D), which the prediction charges
at that same cost per element. Part 4 times ``ConvTranspose2d`` (stride 2) beside the forward convolution
that maps its output back to its input's shape, as PyTorch picks the kernels: why the calibration times them
(``TRANSPOSED`` in ``crossover/opcost/conv_primitives.py``). Each time is the
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
#: (1-D?, C_in, C_out, k, side or length) of the dilated convolutions.
DILATED = ((True, 32, 32, 3, 256), (True, 8, 32, 3, 256), (True, 16, 48, 3, 200), (False, 16, 32, 3, 16),
           (False, 32, 64, 3, 16), (False, 3, 16, 3, 32))
#: (C_in, C_out, k, padding) of the transposed convolutions (stride 2), over 7 × 7 and 14 × 14 inputs.
TRANSPOSED = ((16, 8, 2, 0), (8, 1, 2, 0), (32, 16, 4, 1), (64, 32, 2, 0), (8, 8, 3, 1))


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


def dilated_native_us(one_d: bool, c_in: int, c_out: int, k: int, side: int, dilation: int, repeats: int) -> float:
    """µs of one image's (or sequence's) native convolution at ``dilation``, its output as large as its input."""
    import torch

    shape = (1, c_in, side) if one_d else (1, c_in, side, side)
    x, w = torch.randn(shape), torch.randn((c_out, c_in, k) if one_d else (c_out, c_in, k, k))
    conv = torch.conv1d if one_d else torch.conv2d
    before = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        return block_mean_us(lambda: conv(x, w, None, padding=dilation * (k // 2), dilation=dilation), 100,
                             blocks=repeats, warmup=3)
    finally:
        torch._C._set_mkldnn_enabled(before)


def transposed_us(c_in: int, c_out: int, k: int, padding: int, side: int, batch: int, repeats: int) -> tuple:
    """(transposed, forward) µs: ``ConvTranspose2d`` at stride 2 over ``batch`` images of ``side``, and the
    forward convolution from its output's shape back to its input's, as PyTorch picks the kernels."""
    import torch

    with torch.no_grad():
        up = torch.nn.ConvTranspose2d(c_in, c_out, k, stride=2, padding=padding)
        x = torch.randn(batch, c_in, side, side)
        y = torch.randn(up(x).shape)
        down = torch.nn.Conv2d(c_out, c_in, k, stride=2, padding=padding)
        calls = max(3, 2000 // batch)
        return (block_mean_us(lambda: up(x), calls, blocks=repeats, warmup=2),
                block_mean_us(lambda: down(y), calls, blocks=repeats, warmup=2))


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
    print("native dilated convolution of one image or sequence, µs: dilation 1 | 2 | 4, and ns more per unfolded "
          "input element at 2 and 4")
    for one_d, c_in, c_out, k, side in DILATED:
        times = [dilated_native_us(one_d, c_in, c_out, k, side, d, args.repeats) for d in (1, 2, 4)]
        elements = c_in * (k if one_d else k * k) * (side if one_d else side * side)
        extra = "  ".join(f"{(t - times[0]) * 1e3 / elements:.2f}" for t in times[1:])
        print(f"  {'1-D' if one_d else '2-D'} {c_in:>3d} -> {c_out:<3d} k{k} over {side}: "
              + " | ".join(f"{t:.1f}" for t in times) + f"   {extra}", flush=True)
    print("ConvTranspose2d at stride 2, as PyTorch picks the kernel, µs: transposed | the forward convolution back "
          "| ratio | GFLOP/s")
    for c_in, c_out, k, padding in TRANSPOSED:
        for side in (7, 14):
            for batch in (1, 8, 64, 512):
                up, down = transposed_us(c_in, c_out, k, padding, side, batch, args.repeats)
                gflops = 2.0 * batch * side * side * c_in * c_out * k * k / up / 1e3
                print(f"  {c_in:>3d} -> {c_out:<3d} k{k} {side}x{side} batch {batch:>3d}: {up:9.1f} {down:9.1f}"
                      f"  x{up / down:5.2f} {gflops:7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
