"""A strided convolution's gradients against the stride-1 convolution of the same output, alone.

For several ``(batch, C_in → C_out, side, k)`` each stride-2 convolution over ``side × side`` images is
paired with the stride-1 one over ``side/2`` (the same output pixels and FLOPs): the 10th percentile of
20 calls of its input gradient, its weight gradient (``aten.convolution_backward`` with one output each)
and its forward pass, then the input gradient's time per input-gradient element. The calibration's
``conv_backward`` grid is timed at stride 1 and indexed by the output's pixels, which is what a strided
convolution's input gradient is not costed right by.

    python experiments/bench_strided_backward.py [--threads 1] [--native]

``--native``: one image each, with oneDNN off (PyTorch's native path, which it takes for a single small
image), the input-gradient and weight-gradient times only.

Run it on a quiet machine (about 20 s).
"""

from __future__ import annotations

import argparse

from block_timing import call_p10_us

SHAPES = ((16, 16, 32, 32, 3), (8, 64, 64, 16, 3), (8, 8, 16, 64, 3), (1, 32, 64, 32, 3), (64, 16, 16, 16, 3),
          (16, 16, 32, 32, 1), (8, 32, 32, 32, 5))


def p10_us(fn, calls: int = 20) -> float:
    """µs of ``fn``'s 10th-percentile call of ``calls``, after three."""
    return call_p10_us(fn, calls, warmup=3)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--native", action="store_true", help="one image each, oneDNN off")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    if args.native:
        return native(torch)
    print(f"{args.threads} thread(s); µs: input gradient / weight gradient / forward, stride 2 then stride 1 "
          f"(same output), their ratios, and the stride-2 input gradient per input element (ns)")
    for batch, c_in, c_out, side, k in SHAPES:
        s2, s1 = stride_pair(torch, (batch, c_in, c_out, side, k), forward=True)
        per_element_ns = s2[0] * 1e3 / (batch * c_in * side * side)
        print(f"b{batch:<3d} {c_in:>2d}->{c_out:<2d} side {side:2d} k{k}:  stride 2 {s2[0]:6.0f} / {s2[1]:5.0f} / "
              f"{s2[2]:5.0f}   stride 1 {s1[0]:5.0f} / {s1[1]:5.0f} / {s1[2]:5.0f}   ratios {s2[0] / s1[0]:5.2f} "
              f"{s2[1] / s1[1]:4.2f} {s2[2] / s1[2]:4.2f}   {per_element_ns:5.1f} ns an input element")
    return 0


def stride_pair(torch, shape, forward: bool, calls: int = 20) -> tuple:
    """µs of a stride-2 convolution of ``shape`` (batch, C_in, C_out, side, k) over ``side × side`` images and
    of the stride-1 one over half the side (the same output): its input gradient, its weight gradient and,
    with ``forward``, its forward pass, each the 10th percentile of ``calls`` calls."""
    batch, c_in, c_out, side, k = shape
    backward = torch.ops.aten.convolution_backward.default
    w = torch.randn(c_out, c_in, k, k)
    out = []
    for stride, s in ((2, side), (1, side // 2)):
        x = torch.randn(batch, c_in, s, s)
        g = torch.randn_like(torch.conv2d(x, w, None, stride, k // 2))
        times = [p10_us(lambda m=m: backward(g, x, w, None, [stride] * 2, [k // 2] * 2, [1, 1], False, [0, 0], 1, m),
                        calls) for m in ([True, False, False], [False, True, False])]
        if forward:
            times.append(p10_us(lambda: torch.conv2d(x, w, None, stride, k // 2), calls))
        out.append(times)
    return tuple(out)


NATIVE_SHAPES = ((1, 16, 32, 32, 3), (1, 8, 16, 32, 3), (1, 32, 32, 16, 3), (1, 16, 16, 32, 1), (1, 3, 16, 32, 3))


def native(torch) -> int:
    """The native path's strided gradients against the stride-1 ones of the same output (one image each)."""
    torch._C._set_mkldnn_enabled(False)
    print(f"{torch.get_num_threads()} thread(s), oneDNN off; µs: input gradient / weight gradient at stride 2, "
          f"then at stride 1 (same output), and the stride-2 time beyond the stride-1 one per unfolded element "
          f"(C_in·k²·output pixels; ns)")
    for batch, c_in, c_out, side, k in NATIVE_SHAPES:
        s2, s1 = stride_pair(torch, (batch, c_in, c_out, side, k), forward=False, calls=30)
        res = {2: s2, 1: s1}
        columns = c_in * k * k * (side // 2) ** 2
        extra_ns = [(a - b) * 1e3 / columns for a, b in zip(res[2], res[1])]
        print(f"b{batch} {c_in:>2d}->{c_out:<2d} side {side:2d} k{k}:  stride 2 {res[2][0]:5.0f} / {res[2][1]:5.0f}   "
              f"stride 1 {res[1][0]:5.0f} / {res[1][1]:5.0f}   beyond, per unfolded element {extra_ns[0]:4.2f} / "
              f"{extra_ns[1]:4.2f} ns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
