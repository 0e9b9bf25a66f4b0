"""Pointwise kernels that ATen does not tag ``pointwise``, each timed alone against what a profile costs it:
on the elementwise curve (as :data:`crossover.opcost.activations.UNTAGGED_POINTWISE` maps them) and on the
generic model (``max(dispatch, FLOPs / peak rate, bytes / peak bandwidth)``) that costed them before.

    python experiments/bench_untagged_pointwise.py --profile DIR [--threads 1]

A trace gives these ops kind ``other``: Hardswish, PReLU, and the backward kernels of LeakyReLU, Hardtanh,
Hardsigmoid, Hardswish, ELU and softplus, and the log-sigmoid. For each, over 2^12, 2^15, 2^18 and 2^20
elements (a 4 × 16 × n/1024 × 16 input), one row of a traced step (forward, or a training step for a
backward kernel) is costed both ways, and the ATen op is called alone on real tensors of the row's shapes
(the 10th percentile of 200 calls after 20). The profile should be this machine's, calibrated at the
same thread count, and the machine quiet.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ELEMENTS = (2**12, 2**15, 2**18, 2**20)


def p10_s(step, calls: int = 200) -> float:
    for _ in range(20):
        step()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return sorted(times)[calls // 10]


def cases():
    """name -> (function of the input, the traced op to cost, extra arguments of the ATen call after the tensors)."""
    import torch
    import torch.nn.functional as F

    return {"hardswish": (F.hardswish, "hardswish", ()),
            "prelu": (lambda x: F.prelu(x, torch.full((x.shape[1],), 0.25)), "_prelu_kernel", ()),
            "log_sigmoid_forward": (F.logsigmoid, "log_sigmoid_forward", ()),
            "hardswish_backward": (F.hardswish, "hardswish_backward", ()),
            "hardsigmoid_backward": (F.hardsigmoid, "hardsigmoid_backward", ()),
            "hardtanh_backward": (F.hardtanh, "hardtanh_backward", (-1.0, 1.0)),
            "leaky_relu_backward": (F.leaky_relu, "leaky_relu_backward", (0.01, False)),
            "softplus_backward": (F.softplus, "softplus_backward", (1.0, 20.0)),
            "elu_backward": (F.elu, "elu_backward", None)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", required=True, type=Path, help="a CPU calibration profile directory")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import torch
    from torch import nn

    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import load_profile
    from crossover.opcost.trace import op_name, trace_module

    torch.set_num_threads(args.threads)
    profile = load_profile(args.profile)

    class Apply(nn.Module):
        def __init__(self, f):
            super().__init__()
            self.f, self.scale = f, nn.Parameter(torch.ones(1))  # a parameter: the training step has a backward

        def forward(self, x):
            return self.f(x * self.scale)

    print(f"{args.threads} thread(s); profile {args.profile}")
    print(f"{'op':22s} {'elements':>9s} {'alone µs':>10s} {'curve µs':>10s} {'generic µs':>11s}  curve/alone  generic/alone")
    for elements in ELEMENTS:
        shape = (4, 16, elements // 1024, 16)
        for label, (f, op, extra) in cases().items():
            backward = op.endswith("_backward")
            rows = trace_module(Apply(f), torch.randn(*shape), workload="train" if backward else "forward")
            row = next(dict(r) for _, r in rows.iterrows() if op_name(r["op"]) == op)
            curve = op_cost(profile, row)
            generic = max(profile.overhead("dispatch_s"),
                          (float(row["bytes_read"]) + float(row["bytes_written"])) / profile.peak_bandwidth)
            tensors = [torch.randn(*s) for s in row["input_shapes"]]
            kernel = getattr(torch.ops.aten, op).default
            if op == "elu_backward":  # grad, alpha, scale, input_scale, is_result, self_or_result
                call = (lambda k=kernel, t=tensors: k(t[0], 1.0, 1, 1, False, t[1]))
            elif backward or op == "_prelu_kernel":
                call = (lambda k=kernel, t=tensors, e=extra or (): k(*t, *e))
            else:
                x = torch.randn(*shape)
                call = (lambda g=f, x=x: g(x))
            with torch.no_grad():
                alone = p10_s(call)
            print(f"{label:22s} {elements:9d} {alone * 1e6:10.1f} {curve.host_s * 1e6:10.1f} {generic * 1e6:11.1f}  "
                  f"{curve.host_s / alone:11.2f}  {generic / alone:13.2f}{'  (warned)' if curve.warning else ''}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
