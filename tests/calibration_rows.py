"""Rows of a calibration's table (``calibration.csv.gz``) for tests that build a profile from them."""

US = 1e-6


def row(name, seconds, *, n=0, family="overhead", m=0, k=0, x=0.0, cold=False, round_=0, reference=False):
    """One visit of a primitive, its three repeats all ``seconds``."""
    return dict(round=round_, sequence=0, reference=reference, key=f"{family}/{name}/{m}x{k}x{n}/{cold}/{x}",
                family=family, name=name, m=m, k=k, n=k if family == "matmul" else n, x=x, cold=cold, shape="",
                median_s=seconds, calls_per_repeat=1, raw_times_s=";".join([repr(seconds)] * 3))


def overhead_rows():
    """The least a CPU profile is built from: the dispatch, view and module-call primitives, the autograd
    chains and SGD steps (1 µs an op), and one matrix product."""
    rows = [row("dispatch", 1 * US), row("view", 0.5 * US), row("module_call", 0.8 * US)]
    rows += [row(f"chain_{m}", 1 * US * c, n=c) for m in ("nograd", "grad", "train") for c in (1, 17)]
    return rows + [row("sgd", 1 * US * c, n=c) for c in (1, 16)] + [row("addmm", 1 * US, family="matmul", m=1, k=8, x=128.0)]
