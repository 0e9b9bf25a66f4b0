"""Which of a small bias-free product's time on a GPU is the host's and which the kernel's.

The CUDA calibration's bias-free product grid (``matmul_host``: ``x @ weight.t()``, as a bias-free
``nn.Linear``) reads 31 µs a call at 8 and 16 rows of a 256² weight and 52 µs of a 128² on the H200 (three
times its neighbours, on two visits), and the composition charges that cell as the host's work
(:func:`crossover.opcost.gpu_ops.matmul_host_s`), which puts the toy model's batch-8 step 50% above what
it measures. This script tells the two apart for each shape: the queued time per call (calls issued back to
back, then one synchronisation: the larger of host and kernel), the host's time per call (the same calls'
issue time alone, before the synchronisation) and the kernels torch.profiler records per call.

    python experiments/bench_mm_kernels.py [--rows 1,2,4,8,16,32,128] [--widths 64,128,256,512]
"""

import argparse
import time


def per_call_s(fn, calls: int, sync) -> tuple:
    """(queued seconds per call, issue seconds per call) of ``calls`` back-to-back calls, best of 5."""
    queued, issued = [], []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        issued.append((t1 - t0) / calls)
        queued.append((t2 - t0) / calls)
    return min(queued), min(issued)


def kernels(fn, calls: int) -> list:
    """[(kernel name, device µs per call)] torch.profiler records over ``calls`` calls."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    out = []
    for e in prof.key_averages():
        device_us = getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0))
        if device_us > 0 and e.count:
            out.append((e.key[:70], device_us / calls, e.count / calls))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1,2,4,8,16,32,128", help="the products' rows (a batch)")
    parser.add_argument("--widths", default="64,128,256,512", help="square weights' widths")
    parser.add_argument("--calls", type=int, default=200, help="calls per timing")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time")
        return 0
    sync = torch.cuda.synchronize
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("rows width  bias  queued_us  issue_us  kernels (name: device µs per call x calls per call)")
    for m in [int(v) for v in args.rows.split(",")]:
        for k in [int(v) for v in args.widths.split(",")]:
            x = torch.randn(m, k, device="cuda")
            w_t = torch.randn(k, k, device="cuda").t()
            bias = torch.randn(k, device="cuda")
            for name, fn in (("no", lambda: torch.mm(x, w_t)), ("yes", lambda: torch.addmm(bias, x, w_t))):
                for _ in range(20):
                    fn()
                queued, issued = per_call_s(fn, args.calls, sync)
                found = "; ".join(f"{n}: {us:.1f} x{c:g}" for n, us, c in kernels(fn, 50))
                print(f"{m:4d} {k:5d} {name:>5} {queued * 1e6:10.1f} {issued * 1e6:9.1f}  {found}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
