"""What a GPU runs differently from the trace's CPU path, and what its host pays per op; and a recurrent
layer costed whole where a calibration timed one (cuDNN's fused call on a GPU, PyTorch's C++ loop on a CPU).

- :func:`host_floor_s`: on a GPU the host's seconds per op of a family, its calibration's time at the
  smallest size (queued tiny kernels run at the rate the host issues them);
- :func:`fused_recurrent_row` and :func:`recurrent_cost`: an ``nn.GRU``/``nn.LSTM``/``nn.RNN`` runs on a
  GPU as cuDNN's one fused call, not as the per-time-step ops the trace records (PyTorch's CPU path).
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

from .profiles import Grid, Profile

__all__ = ["host_floor_s", "matmul_host_s", "bias_free_queued_s", "HOST_BOUND_KN", "CPU_RNN_TERMS", "CPU_RNN_CALL",
           "CPU_LSTM_TERMS", "CPU_LSTM_CALL", "LSTM_FIT", "LSTM_WARNING", "cpu_recurrent_features",
           "cpu_recurrent_seconds", "cpu_recurrent_residuals", "residual_ratio", "RNN_RESIDUAL_GRID",
           "fit_cpu_recurrent", "costs_recurrent_whole", "fused_recurrent_row", "recurrent_cost", "gru_flops",
           "RNN_WARNING", "CPU_RNN_STEPS"]


#: Which calibrated grids hold a family's times (by the grid names' part before any ``@side``).
_FAMILY_GRIDS = {"matmul": ("matmul",), "conv": ("conv",), "conv_backward": ("conv_backward",), "conv1d": ("conv1d",)}


def host_floor_s(profile: Profile, family: str, dims: Optional[tuple] = None, *, bias: bool = True) -> float:
    """On a GPU, the host's seconds per op of ``family``: its calibration's time at the smallest size, or
    for a matrix product of known ``dims`` (``(M, K·N)``) its own (:func:`matmul_host_s`) on the grid of
    its kind: products with bias (``matmul``, every calibration) or without (``matmul_host``; a profile
    without it: the smallest time, since a bias-free product does not take cuBLASLt's bias epilogue,
    whose host work jumps at 32 rows: the toy's GPU steps, all bias-free, cost the same per layer from 2
    rows to 2048 on the H200).

    Queued calls of a tiny kernel run at the rate the host issues them, so that time is the host's
    work per call: a cuBLAS product (~11 µs on an H100 host) or a cuDNN convolution (~19 µs) costs it
    more than an elementwise kernel (~7 µs). 0 for a family the profile has no calibration of.
    """
    grid = profile.grids.get("matmul" if bias else "matmul_host")
    if family == "matmul" and dims is not None and grid is not None:
        return matmul_host_s(grid, *dims, by_flops=not bias)
    grids = [grid for name, grid in profile.grids.items()
             if name.split("@")[0] in _FAMILY_GRIDS.get(family, ())]
    if grids:
        return min(min(min(row) for row in grid.time_s) for grid in grids)
    curve = profile.curves.get({"optimizer": "elementwise"}.get(family, family))
    return float(curve.time_s[0]) if curve is not None else 0.0


#: Weight sizes (K·N) up to which a queued product's kernel is far shorter than the host's work per call
#: (at most 2·1024·16384 FLOPs, a third of a microsecond at the H100's 51 TFLOP/s): those cells of a GPU
#: calibration's matrix grid time the host alone.
HOST_BOUND_KN = 16384
#: The same bound in FLOPs (2·1024·16384): a product of ``m`` rows and ``K·N`` weights within it is
#: host-bound whatever its shape.
HOST_BOUND_FLOPS = 2.0 * 1024 * HOST_BOUND_KN


def matmul_host_s(grid, m: float, kn: float, *, by_flops: bool = False) -> float:
    """The host's seconds per call of a ``(m, kn)`` product on a GPU: the calibration's queued time at that
    shape, at most the host's time for products of ``m`` rows (the median of the grid's host-bound cells
    at ``m``: weights of at most :data:`HOST_BOUND_KN` elements).

    With ``by_flops`` (the bias-free grid, whose weights since the plan's 256² and 512² columns go past
    that size while its few rows keep the kernel short) the host's time for ``m`` rows is the cheapest of
    the row's cells of at most :data:`HOST_BOUND_FLOPS`: a dearer one is its kernel's time, charged to the
    device where the grid covers the shape (:func:`bias_free_queued_s`). On the H200 cuBLAS takes a tiled
    kernel of 49 and 28 µs (with a memset) at 8 and 16 rows of a 128² and a 256² weight, where a 64² or
    512² weight's takes 2-4 µs and the host issues each in ~10 (``experiments/results/nvidia-h200-16c/run4/
    mm-kernels.log``); the H100's grid, without the 256² column, has the 128² cell's 53 µs at 8 rows.
    Costed as host work (a row's median, or the cell itself), those cells put the toy model's batch-8 GPU
    step 26-50% above what it measured on four H200 zoo processes and 40% on the H100's fifth visit.

    cuBLAS's host work depends on the shape: on the H100 and H200 hosts a product with bias of up to 16 rows
    is issued every ~11.5 µs, one of 32 rows or more every ~21 µs (cuBLASLt's bias epilogue) until its
    weights are large (~14.5 µs); one floor for all (the grid's smallest time) under-costs every
    product of 32 rows or more. Where the kernel outlasts the host's work (a large product), the queued
    time is the kernel's, and the host's is the row's host-bound time.
    """
    if by_flops:
        small = [kn_i for kn_i in grid.kn if 2.0 * m * kn_i <= HOST_BOUND_FLOPS] or [grid.kn[0]]
        return min(grid(m, kn), min(grid(m, kn_i) for kn_i in small))
    small = [kn_i for kn_i in grid.kn if kn_i <= HOST_BOUND_KN] or [grid.kn[0]]
    host_bound = sorted(grid(m, kn_i) for kn_i in small)
    mid = len(host_bound) // 2
    plateau = host_bound[mid] if len(host_bound) % 2 else 0.5 * (host_bound[mid - 1] + host_bound[mid])
    return min(grid(m, kn), plateau)


def bias_free_queued_s(grid, m: float, kn: float) -> Optional[float]:
    """The queued seconds per call of a bias-free ``(m, kn)`` product on a GPU, from the bias-free grid
    (``matmul_host``): its own cell where the grid times that shape host-bound or nearly (at most
    :data:`HOST_BOUND_FLOPS`, within the grid's weights), else None. A queued call takes the larger of
    the host's work and its kernel, so this is a floor for the product's kernel time: the composition
    charges it to the device (:func:`crossover.opcost.op_costs.op_cost`) and the host the cheapest of
    its row (:func:`matmul_host_s`), which keeps a kernel cuBLAS picks for a few shapes (the H200's
    28-49 µs at 8 and 16 rows of a 128² or 256² weight) off the host's sum.
    """
    if 2.0 * m * kn <= HOST_BOUND_FLOPS and kn <= grid.kn[-1]:
        return grid(m, kn)
    return None


#: The time steps of most of a CPU calibration's recurrent primitives (their curve, a fallback, is a
#: step's cost times this: :data:`crossover.opcost.calibration_plan.Plan.cpu_rnn_shapes`).
CPU_RNN_STEPS = 16


#: The warning a fused recurrent op's cost carries: no calibration primitive times cuDNN's RNN.
RNN_WARNING = ("cuDNN's fused recurrent op (_cudnn_rnn) is not calibrated (a calibration from before its "
               "primitive): costed as its input projections, its recurrent products at the device's peak rate, "
               "and a matrix product's host floor per launch")


def fused_recurrent_row(rows, module, path: str, batch_size: int):
    """What a GPU runs for ``module`` (an ``nn.GRU``, ``nn.LSTM`` or ``nn.RNN``) in a forward pass: one
    ``_cudnn_rnn`` call, in place of the ops ``rows`` trace for it on the CPU (a GRU's C++ loop: each
    step's products and gates as separate ops; a float LSTM: oneDNN's one layer op). A CPU profile with
    recurrent primitives costs the row whole too. None when ``rows`` hold none of the module's ops."""
    own = [r for r in rows if r.get("module") == path and r.get("phase", "forward") == "forward"]
    if not own:
        return None
    gates = {"GRU": 3, "LSTM": 4}.get(type(module).__name__, 1)
    directions = 2 if module.bidirectional else 1
    # the time steps: the CPU path unbinds the input projections into one tensor per step (a GRU's C++
    # loop), or hands the whole time-major sequence to oneDNN's layer (a CPU LSTM: no unbind)
    steps = max([len(r.get("output_shapes") or ()) for r in own if r.get("op", "").startswith("aten.unbind")]
                + [tuple(r["input_shapes"][0])[0] for r in own
                   if r.get("op", "").startswith("aten.mkldnn_rnn_layer") and r.get("input_shapes")], default=1)
    # what the one call writes: the output sequence and the final states (the per-step buffers the trace
    # records are its workspace: counted as outputs they would read as pages faulted in afresh every step)
    first_out = [math.prod(s) for s in (own[0].get("output_shapes") or ())]
    element = (float(own[0].get("bytes_written") or 0) / sum(first_out)) if sum(first_out) else 4.0
    outputs = [(batch_size, steps, module.hidden_size * directions),
               *[(module.num_layers * directions, batch_size, module.hidden_size)] * (2 if gates == 4 else 1)]
    layers = [module.input_size] + [module.hidden_size * directions] * (module.num_layers - 1)
    return dict(own[0], op="aten._cudnn_rnn.default", kind="rnn", launches=2 * module.num_layers * directions,
                flops=sum(int(r.get("flops") or 0) for r in own)  # oneDNN's layer counts none: its products'
                or int(directions * sum(gru_flops(batch_size, steps, w, module.hidden_size, gates) for w in layers)),
                bytes_read=sum(int(r.get("bytes_read") or 0) for r in own),
                state_bytes=sum(p.numel() * p.element_size() for p in module.parameters()),  # its weights, once
                output_shapes=tuple(outputs), bytes_written=int(element * sum(math.prod(s) for s in outputs)),
                rnn=dict(batch=batch_size, input=module.input_size, hidden=module.hidden_size, gates=gates,
                         layers=module.num_layers, directions=directions, steps=steps))


#: A CPU recurrent step's terms (PyTorch's C++ loop, each time step of each layer and direction), fitted
#: on the calibration's GRU primitives (:func:`fit_cpu_recurrent`): a fixed cost, the gates' elementwise
#: work (per element of batch × hidden × gates), the products (per FLOP) and the weights read (per element).
CPU_RNN_TERMS = ("rnn_step_s", "rnn_gate_element_s", "rnn_flop_s", "rnn_weight_element_s")
#: What a CPU recurrent layer costs once per call beyond its steps (the loop's set-up, the output's
#: allocation), fitted beside :data:`CPU_RNN_TERMS` where the primitives span two sequence lengths (with
#: one length it cannot be told from the per-step fixed cost, and is 0). On the 2-core VM at one thread
#: a GRU(64 → 64) at batch 8 took 246 µs over 16 steps and 730 µs over 50: 18 µs a call, 14.2 a step.
CPU_RNN_CALL = "rnn_call_s"
#: A CPU LSTM's terms, of the same form, fitted on the calibration's LSTM primitives: PyTorch runs a float
#: LSTM on a CPU through oneDNN's RNN layer, not the GRU's loop. On the 2-core VM at one thread an
#: ``LSTM(32 → 64)`` over 24 steps took 61-65 µs at batch 1 under the profiler, 2.7 µs a step, where the
#: same calibration's GRU terms cost 7.5 µs a step and 16 µs a call (``bench_op_breakdown_unseen.log``).
CPU_LSTM_TERMS = ("lstm_step_s", "lstm_gate_element_s", "lstm_flop_s", "lstm_weight_element_s")
CPU_LSTM_CALL = "lstm_call_s"
#: :func:`fit_cpu_recurrent`'s arguments for the LSTM primitives.
LSTM_FIT = dict(gates=4, terms=CPU_LSTM_TERMS, call=CPU_LSTM_CALL)
#: The warning an LSTM's CPU cost carries where the profile has no LSTM primitives.
LSTM_WARNING = ("an LSTM is costed with the GRU loop's terms: this CPU calibration has no LSTM primitives "
                "(oneDNN runs a CPU LSTM, not the GRU's loop; recalibrate for its own terms)")


def cpu_recurrent_features(batch: float, width: float, hidden: float, gates: int = 3) -> tuple:
    """One time step's amounts of each of :data:`CPU_RNN_TERMS` (1, gate elements, FLOPs, weight elements)."""
    weights = (width + hidden) * gates * hidden
    return 1.0, batch * hidden * gates, 2.0 * batch * weights, float(weights)


#: The grid of a CPU calibration's GRU primitives' misses by the fitted terms (:func:`cpu_recurrent_residuals`),
#: over batch and hidden width: where the primitives measured a batch and width, a layer of them is
#: costed near what they measured (the smoothing's prior pulls a measured node some way toward 1), not as the four linear terms fit them (on the VM at two threads those read
#: the batch-8 primitives 17% under, and the zoo's GRU at batch 8 15-18% under in every sitting).
RNN_RESIDUAL_GRID = "rnn_residual"
_RESIDUAL_BATCHES = (1.0, 8.0, 64.0, 512.0)
_RESIDUAL_HIDDEN = (32.0, 64.0, 128.0, 256.0)
#: The smoothing of :func:`cpu_recurrent_residuals`: a Gaussian kernel of this many octaves (of batch and
#: of width), and a ratio of 1 weighing as much as a primitive this many octaves away.
_RESIDUAL_OCTAVES, _PRIOR_OCTAVES = 1.0, 2.0


def cpu_recurrent_seconds(overheads: Mapping, batch: float, steps: float, width: float, hidden: float,
                          gates: int = 3, terms: tuple = CPU_RNN_TERMS, call: str = CPU_RNN_CALL) -> float:
    """One CPU recurrent layer's call of ``steps`` time steps from the fitted ``terms`` and ``call`` in
    ``overheads`` (default the GRU loop's, :data:`CPU_RNN_TERMS` and :data:`CPU_RNN_CALL`)."""
    per_step = sum(overheads[t] * f for t, f in zip(terms, cpu_recurrent_features(batch, width, hidden, gates)))
    return overheads.get(call, 0.0) + steps * per_step


def cpu_recurrent_residuals(cells, overheads: Mapping):
    """The GRU primitives' measured over fitted time, smoothed onto a grid of batch × hidden width (pure).

    Parameters
    ----------
    cells : sequence of (batch, steps, hidden, seconds)
        As :func:`fit_cpu_recurrent` takes them.
    overheads : mapping
        Holding the fitted terms.

    Returns
    -------
    Grid or None
        At each node (batches 1-512, widths 32-256) the kernel-weighted mean of the cells' ratios (a
        Gaussian of :data:`_RESIDUAL_OCTAVES` in log2 batch and width), with a ratio of 1 weighing as a
        cell :data:`_PRIOR_OCTAVES` away: near a measured shape its own miss, far from all of them none.
        None without the fitted terms or cells.
    """

    if not cells or not all(t in overheads for t in CPU_RNN_TERMS):
        return None
    points = [(math.log2(b), math.log2(h), s / cpu_recurrent_seconds(overheads, b, steps, h, h))
              for b, steps, h, s in cells if s > 0 and cpu_recurrent_seconds(overheads, b, steps, h, h) > 0]
    prior = math.exp(-0.5 * (_PRIOR_OCTAVES / _RESIDUAL_OCTAVES) ** 2)
    values = []
    for batch in _RESIDUAL_BATCHES:
        row = []
        for hidden in _RESIDUAL_HIDDEN:
            weights = [(math.exp(-0.5 * ((math.log2(batch) - lb) ** 2 + (math.log2(hidden) - lh) ** 2)
                                 / _RESIDUAL_OCTAVES ** 2), ratio) for lb, lh, ratio in points]
            row.append((prior + sum(w * r for w, r in weights)) / (prior + sum(w for w, _ in weights)))
        values.append(tuple(row))
    return Grid(_RESIDUAL_BATCHES, _RESIDUAL_HIDDEN, tuple(values))


def residual_ratio(profile: Profile, batch: float, hidden: float) -> float:
    """The profile's :data:`RNN_RESIDUAL_GRID` at ``(batch, hidden)``, held at its edges; 1 without it."""
    grid = profile.grids.get(RNN_RESIDUAL_GRID)
    if grid is None:
        return 1.0
    return grid(min(max(batch, grid.m[0]), grid.m[-1]), min(max(hidden, grid.kn[0]), grid.kn[-1]))


def fit_cpu_recurrent(cells, gates: int = 3, terms: tuple = CPU_RNN_TERMS, call: str = CPU_RNN_CALL) -> dict:
    """:data:`CPU_RNN_TERMS` from the calibration's CPU GRU primitives (pure); with ``gates=4``,
    :data:`CPU_LSTM_TERMS` and :data:`CPU_LSTM_CALL` as ``terms`` and ``call``, the LSTM's from its own.

    Parameters
    ----------
    cells : sequence of (batch, steps, hidden, seconds)
        Each primitive (input width = hidden) and its time, less what a model's trace costs apart.
    gates : int
        3 for a GRU, 4 for an LSTM.
    terms, call : names of the fitted terms in the returned dict.

    Returns
    -------
    dict
        The terms, non-negative, fitted by least squares on relative errors (a curve over FLOPs alone
        mixes a batch-512 step, whose gates' elementwise work dominates, with a batch-1 step's fixed
        cost and a wide layer's products), and :data:`CPU_RNN_CALL` (0 unless the cells span two
        sequence lengths); ``{}`` with fewer cells than terms.
    """
    import numpy as np

    cells = [c for c in cells if c[3] > 0]
    if len(cells) < len(terms):
        return {}
    from scipy.optimize import nnls

    lengths = len({steps for _, steps, _, _ in cells}) > 1 and len(cells) > len(terms)
    X = np.array([[float(lengths)] + [steps * f for f in cpu_recurrent_features(b, h, h, gates)]
                  for b, steps, h, _ in cells])
    y = np.array([c[3] for c in cells], dtype=float)
    coef, _ = nnls(X / y[:, None], np.ones(len(y)))
    return {call: float(coef[0]), **dict(zip(terms, map(float, coef[1:])))}


def gru_flops(batch: int, steps: int, width: int, hidden: int, gates: int = 3) -> float:
    """FLOPs of one recurrent layer's products (input projections and recurrent products, all steps):
    ``gates`` = 3 for a GRU, 4 for an LSTM, 1 for a plain RNN."""
    return 2.0 * batch * steps * (width + hidden) * gates * hidden


def costs_recurrent_whole(profile: Profile) -> bool:
    """Whether ``profile`` costs a recurrent layer as one call (:func:`recurrent_cost`): a GPU's (cuDNN's
    fused call, calibrated or not), a CPU's with the GRU primitives' step terms or curve; else the trace's
    per-step ops are summed."""
    return (profile.device == "cuda" or "rnn" in profile.curves
            or all(t in profile.overheads for t in CPU_RNN_TERMS))


def recurrent_cost(profile: Profile, row: Mapping) -> dict:
    """A recurrent layer costed whole (:func:`fused_recurrent_row`): on a CPU from the fitted step terms
    (the LSTM's own where the profile has them), else its curve; on a GPU cuDNN's call from its curve,
    else its products. Returns ``host_s``, ``device_s``, ``floor_s``, ``launches``, ``warning`` (an
    uncalibrated GPU layer's, or an LSTM costed on the GRU's primitives) and ``compute_s`` (the fields of
    :class:`crossover.opcost.op_costs.OpCost`, family ``rnn``)."""
    r = row["rnn"]
    layers = [(r["input"] if layer == 0 else r["hidden"] * r["directions"]) for layer in range(r["layers"])]
    curve = profile.curves.get("rnn")
    if profile.device == "cpu" and all(t in profile.overheads for t in CPU_RNN_TERMS):  # PyTorch's C++ loop
        o = profile.overheads
        lstm = r["gates"] == 4 and all(t in o for t in CPU_LSTM_TERMS)  # oneDNN's layer, timed on its own
        terms, call = (CPU_LSTM_TERMS, CPU_LSTM_CALL) if lstm else (CPU_RNN_TERMS, CPU_RNN_CALL)
        ratio = residual_ratio(profile, r["batch"], r["hidden"]) if r["gates"] == 3 else 1.0  # GRU primitives only
        host = r["directions"] * ratio * sum(
            cpu_recurrent_seconds(o, r["batch"], r["steps"], width, r["hidden"], r["gates"], terms, call)
            for width in layers)
        floor = min(host, r["directions"] * len(layers) * (r["steps"] * o[terms[0]] + o.get(call, 0.0)))
        warning = LSTM_WARNING if r["gates"] == 4 and not lstm else ""
        return dict(host_s=host, device_s=0.0, floor_s=floor, launches=row["launches"], warning=warning,
                    compute_s=host - floor)
    if curve is not None and profile.device == "cpu":  # a profile from before the fitted terms: a curve over FLOPs
        per_length = r["steps"] / CPU_RNN_STEPS  # a step costs the same whatever the sequence's length
        flops = [gru_flops(r["batch"], CPU_RNN_STEPS, width, r["hidden"], r["gates"]) for width in layers]
        host = r["directions"] * per_length * sum(curve(f) for f in flops)
        floor = min(host, curve.time_s[0])
        return dict(host_s=host, device_s=0.0, floor_s=floor, launches=row["launches"],
                    warning=LSTM_WARNING if r["gates"] == 4 else "", compute_s=host - floor)
    if curve is not None:  # calibrated: cuDNN's GRU timed whole (host floor and kernels), per layer and direction
        flops = [gru_flops(r["batch"], r["steps"], width, r["hidden"], r["gates"]) for width in layers]
        device = r["directions"] * sum(curve.affine(f) for f in flops)  # three shapes far apart: affine between
        host = r["directions"] * len(layers) * host_floor_s(profile, "rnn")
        floor = min(device, host)
        return dict(host_s=host, device_s=device, floor_s=floor, launches=row["launches"], warning="",
                    compute_s=device - floor)
    grid = profile.grids.get("matmul")
    projections = recurrent = 0.0
    for width in layers:
        projections += r["directions"] * grid(r["batch"] * max(r["steps"], 1), width * r["gates"] * r["hidden"])
        recurrent += r["directions"] * r["steps"] * 2.0 * r["batch"] * r["hidden"] * r["gates"] * r["hidden"]
    device = projections + recurrent / profile.peak_flop_rate
    host = row["launches"] * max(profile.overhead("launch_s"), host_floor_s(profile, "matmul"))
    floor = min(device, profile.overhead("launch_s"))
    return dict(host_s=host, device_s=device, floor_s=floor, launches=row["launches"], warning=RNN_WARNING,
                compute_s=device - floor)
