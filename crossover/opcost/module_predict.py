"""Predict the step latency of any ``nn.Module`` on calibrated devices, and where they cross.

:func:`predict_module` traces one step of the model at each batch size
(:func:`crossover.opcost.trace.trace_module`: fake tensors, nothing runs at full cost), costs every op on
every profile (:func:`crossover.opcost.op_costs.op_cost`) and composes the step:

- on a CPU: the sum of the ops' times (each including its dispatch; beyond its floor, a forward 2-D convolution's and a
  depthwise one's times ``1 + conv_forward_extra`` (fitted on the reference CNN's dense ones; a 1-D one costed on its
  own grids, or a pointwise one on its own, is not scaled) and a backward kernel's other than a convolution's times
  ``1 + backward_extra``: ops run slower in a model than repeated alone, by factors fitted on reference models; on a GPU
  these scale kernel time), plus per step the host work no op records: ``module_call_s`` per module called, ``event_s``
  per op or module call (ops in a sequence dispatch slower than one op repeated), ``fresh_byte_s`` per byte of outputs
  of 32 MiB or more (glibc maps them afresh at every allocation and the kernel faults them in page by page: a cost the
  calibration measures with a primitive of its own), and for a training step autograd's recording per forward op, the
  backward engine (once and per backward op) and the optimizer (once and per parameter), times ``1 + train_host_extra``
  (this host work runs slower in a real step than in the calibration's tight loops; fitted on reference models), and
  ``conv_train_s`` per forward convolution (a convolution costs a training step more than its primitives: fitted alike);
  and per forward convolution its path's price among other kernels (:mod:`crossover.opcost.conv_neighbours`: measured);
- on a GPU, a synchronised step (one request served, what ``measure`` times):
  ``max(host time, device kernel time) + step_sync_s``, where the host time is per op its family's
  host floor (:func:`crossover.opcost.op_costs.op_cost`: what a tiny op of the family costs the host,
  a cuBLAS product more than an elementwise kernel, a product with bias at its own shape:
  :func:`crossover.opcost.gpu_ops.matmul_host_s`) plus the same host work, the kernel times come
  from CUDA-event calibrations, and ``step_sync_s`` is what one synchronised launch pays beyond its
  dispatch (``sync_s`` for calibrations from before that primitive); plus the host→device copy of the
  input when ``transfer=True``. The composition terms of a GPU profile are fitted on the reference
  models' synchronised steps.

The interval is ``latency × (1 ± r)`` (on a CPU its low end ``(latency − fault_s) × (1 − r)``, at least a tenth of the
latency: the page faults of the step's buffers of 32 MiB or more are paid only when glibc's heap has no free block to
serve them from, which depends on the process's history, not on the model; see :mod:`crossover.measurement.allocator`)
where ``r`` is the calibration's round-to-round spread of the families the step spends its time in, over the square root
of the rounds it kept (a cost pools its repeats over them: the spread of that pooled statistic, not of one round's
median; rescored on the Intel VM's 862 zoo measurements of 39 sittings, 85.5% inside at a median half-width of 21.8%
with one round's, 82.0% at 18.4% with the pooled one: ``intel-xeon-2c/logs/rescore_pooled_spread_1129.log``), and at
least the profile's noise floor (its drift reference's spread) and its interval error (``interval_rel``: the
leave-one-out error of this composition on the calibration's reference models' forward steps at
:data:`crossover.opcost.composition.INTERVAL_COVERAGE`, 80%; for a training step ``train_interval_rel``, the same over
their training steps; the median for an older profile). ``launch_share``, ``memory_share`` and ``compute_share`` split
the latency into the dispatch/launch floors and host overheads, the rest of memory-bound ops, and the rest of matmul,
convolution and attention; ``bound`` names the largest.
"""

from __future__ import annotations

import contextlib
import math
import warnings as _warnings
from collections import defaultdict
from typing import Mapping, Optional, Sequence

from ..crossings import crossover_ends, log_crossings
from ..measurement.module_rounds import model_mode
from .gpu_ops import costs_recurrent_whole, fused_recurrent_row
from .recurrent_layers import costs_recurrent_training, gpu_records, train_records
from .layer_primitives import layer_family
from .op_costs import fresh_bytes, op_cost
from .trace import op_name
from .profiles import Profile, load_profiles
from .reuse import reuse_s
from .conv_neighbours import neighbours_s
from .thread_starts import counts_thread_starts, libraries_warning, step_thread_starts, unpriced_warning
from .thread_wake import step_wake_s, wake_warning
from ..units import format_seconds

__all__ = ["predict_module", "module_crossover", "step_prediction", "model_mode", "trace_step", "host_events"]


@contextlib.contextmanager
def _counting_module_calls(counter: list):
    from torch.nn.modules.module import register_module_forward_pre_hook

    def count(module, args):
        counter[0] += 1

    handle = register_module_forward_pre_hook(count)
    try:
        yield
    finally:
        handle.remove()


def trace_step(model, sample_shape, batch_size: int, workload: str = "forward", dtype=None):
    """``(trace table, module calls)`` of one step at ``batch_size`` (the model in eval mode for a
    forward pass, train mode for a training step; its modes restored after)."""
    import torch

    from .trace import trace_module

    counter = [0]
    example = torch.empty((batch_size, *sample_shape), dtype=dtype, device="meta")
    with model_mode(model, workload == "train"), _counting_module_calls(counter):
        table = trace_module(model, example, workload)
    return table, counter[0]


#: Layer families whose calibration primitive is the whole functional call (``F.max_pool1d``,
#: ``F.adaptive_max_pool1d``): the views the trace records around the 2-D op it lowers them to are inside
#: the primitive's time already.
WHOLE_CALL_FAMILIES = ("pool1d", "adaptive_pool")


def costed_rows(profile: Profile, rows) -> list:
    """``rows`` without the views a module's whole-call layer primitive already times (pure).

    The trace records ``nn.MaxPool1d`` and ``nn.AdaptiveMaxPool1d`` as an ``unsqueeze``, the 2-D pooling and
    two ``squeeze`` rows; their primitives (:data:`WHOLE_CALL_FAMILIES`) time the functional call, views and
    all. Counted again as views and host events they cost the 1-D CNN's batch-1 step on the VM about 7 µs
    (+10%, in every sitting at both thread counts). Only forward rows of a module whose every launching
    forward row is costed on such a primitive lose their views."""
    rows = list(rows)
    inference = not any(row.get("phase") in ("backward", "optimizer") for row in rows)
    families = defaultdict(set)
    for row in rows:
        if row.get("phase", "forward") == "forward" and row.get("kind") != "view" and int(row.get("launches", 1) or 0):
            layer = layer_family(row, op_name(row.get("op", "")), inference=inference, device=profile.device)
            families[row.get("module")].add(layer if layer in profile.curves else None)
    whole = {module for module, found in families.items() if found and found <= set(WHOLE_CALL_FAMILIES)}
    return [row for row in rows if not (row.get("kind") == "view" and row.get("phase", "forward") == "forward"
                                        and row.get("module") in whole)]


def host_events(rows, module_calls: int) -> int:
    """Ops (launching or views) and module calls of a step: what the host dispatches one by one."""
    return len(rows) + module_calls


def step_prediction(profile: Profile, rows, *, module_calls: int, n_params: int, param_bytes: int,
                    input_bytes: int = 0, transfer: bool = False, top: int = 5,
                    weights: Optional[str] = None, thread_starts: float = 0.0) -> dict:
    """Compose one step on one profile from its traced op rows (pure).

    Parameters
    ----------
    profile : Profile
    rows : sequence of mapping
        Trace rows (:func:`crossover.opcost.trace.trace_module`).
    module_calls : int
        Module forwards called in the step.
    n_params : int
        Parameter tensors the optimizer updates (training steps).
    param_bytes : int
        The model's parameter bytes: above the profile's ``warm_bytes`` (its shared last-level cache: a
        step streams every weight once, so weights larger than it come back from DRAM at each use),
        matrix products are costed with their weights cold.
    input_bytes : int
        Bytes of the input (the host→device copy on a GPU when ``transfer``).
    transfer : bool
        Add the input's host→device copy (GPU profiles only).
    top : int
        How many of the costliest ops to list.
    weights : {"hot", "cold"}, optional
        Cost the matrix products with their weights hot or cold whatever ``param_bytes`` says
        (:mod:`crossover.fit.calibrated_model` blends the two).
    thread_starts : float
        OpenMP threads the step starts anew each time on a CPU (:mod:`.thread_starts`, counted by running it),
        each at the profile's ``thread_start_s``.

    Returns
    -------
    dict
        ``latency_s``, ``latency_low_s``, ``latency_high_s``, ``host_s``, ``device_s``, ``sync_s``,
        ``copy_s``, ``overhead_s`` (host work no op records; on a CPU it includes ``fault_s``, the page faults
        of the step's fresh buffers, and a training step's ``conv_train_s`` per forward convolution, every
        kind: ``conv_trains`` of them, and ``neighbours_s``: :mod:`.conv_neighbours`), ``autograd_s`` (of it, a training step's
        autograd and optimizer work, scaled by the profile's ``train_host_extra``), ``thread_starts`` and
        ``thread_starts_s``, ``wake_s`` and
        ``wake_regions`` (a CPU's parallel ops that wait for sleeping threads, :mod:`.thread_wake`), ``reuse_s``
        and ``footprint_bytes`` (its weights and gradients read back from the shared cache, :mod:`.reuse`),
        ``conv_forward_s`` and ``backward_kernels_s`` (the calibrated time beyond the floors of the forward
        dense and depthwise convolutions and of the backward kernels other than convolutions, before their
        ``conv_forward_extra`` and
        ``backward_extra``), ``launches``, ``flops``, ``bytes``, ``weights`` ("hot"/"cold"),
        ``launch_share``, ``memory_share``, ``compute_share``, ``bound``, ``kind_shares`` (dict),
        ``top_ops`` (list of dicts) and ``warnings`` (list of str).
    """
    on_gpu = profile.device == "cuda"
    rows = costed_rows(profile, rows)
    if weights not in (None, "hot", "cold"):
        raise ValueError(f"weights must be 'hot', 'cold' or None, not {weights!r}")
    cold = param_bytes > profile.warm_bytes if weights is None else weights == "cold"
    o = profile.overhead
    host = device = floors = memory = compute = 0.0
    launches = flops = moved = 0
    fresh = conv_forward = backward_kernels = uncovered = 0.0
    convolutions = 0  # forward convolutions: a training step pays conv_train_s for each (.composition)
    by_kind, by_family, costs, warnings = defaultdict(float), defaultdict(float), [], []
    phase_ops = defaultdict(int)
    inference = not any(row.get("phase") in ("backward", "optimizer") for row in rows)
    timeline = []  # (row, seconds, dispatch) before the composition terms, in the order the step runs them
    for row in rows:
        cost = op_cost(profile, row, cold=cold, inference=inference)
        base = cost
        timeline.append((row, base.host_s, base.floor_s))
        # oneDNN's forward convolutions run slower between other ops in a model than repeated alone: the reference
        # CNN's dense ones, fitted, and a depthwise one by the same share (experiments/zoo_fourth's models, out of
        # sample, read half their miss with it: experiments/results/intel-xeon-2c/README.md)
        if cost.family in ("conv", "conv_depthwise"):
            cost = _scaled(cost, 1.0 + profile.conv_forward_extra, on_gpu)
            conv_forward += _beyond_floor(base, on_gpu)
        elif row.get("phase") == "backward" and cost.family not in ("conv_backward", "view"):
            cost = _scaled(cost, 1.0 + profile.backward_extra, on_gpu)
            backward_kernels += _beyond_floor(base, on_gpu)
        time_s = cost.device_s if on_gpu else cost.host_s
        host += cost.host_s
        device += cost.device_s
        floors += cost.floor_s
        rest = max(time_s - cost.floor_s, 0.0)
        compute += min(cost.compute_s, rest)
        memory += rest - min(cost.compute_s, rest)
        launches += cost.launches
        fresh += fresh_bytes(row, None if on_gpu else profile.threads)
        flops += int(row.get("flops") or 0)
        moved += int(row.get("bytes_read") or 0) + int(row.get("bytes_written") or 0)
        by_kind[row.get("kind", "other")] += time_s
        by_family[cost.family] += time_s
        if cost.launches:
            phase_ops[row.get("phase", "forward")] += 1
        convolutions += row.get("phase", "forward") == "forward" and op_name(row.get("op", "")) == "convolution"
        costs.append((time_s, row, cost))
        uncovered += time_s if cost.warning and not on_gpu else 0.0
        if cost.warning and cost.warning not in warnings:
            warnings.append(cost.warning)
    train = phase_ops.get("backward", 0) > 0 or phase_ops.get("optimizer", 0) > 0
    faults = 0.0 if on_gpu else fresh * o("fresh_byte_s")  # a GPU's caching allocator faults nothing
    neighbours = neighbours_s(profile, rows)  # forward convolutions among other kernels (.conv_neighbours)
    overhead = module_calls * o("module_call_s") + faults + host_events(rows, module_calls) * o("event_s") + neighbours
    autograd = autograd_calibrated = 0.0  # the latter as the primitives cost it, without train_host_extra
    if train:
        autograd_calibrated = (phase_ops.get("forward", 0) * o("grad_record_s") + o("backward_call_s")
                               + phase_ops.get("backward", 0) * o("backward_op_s") + o("optimizer_step_s")
                               + n_params * o("optimizer_param_s"))
        autograd = autograd_calibrated * (1.0 + profile.train_host_extra)
        overhead += autograd + (0.0 if on_gpu else convolutions * o("conv_train_s"))  # a GPU's: not fitted
    host += overhead
    # a CPU's parallel ops whose threads fell asleep over the serial work before them (thread_wake); the
    # host's work between ops as the primitives cost it, without the composition terms (fitted after
    # the wake-ups, on the residual they leave: the same gaps in the fit and in a prediction)
    between_s = module_calls * o("module_call_s") + autograd_calibrated
    wake_paid_s, wake_regions, regions = step_wake_s(profile, timeline, between_s / max(len(timeline), 1))
    wake_unsure_s = (regions - wake_regions) * o("wake_s")  # gaps the count put under the threads' spin
    # a CPU step's weights and gradients read back from the shared cache once its footprint outgrows the
    # private ones (reuse; 0 on a GPU, on a profile without the curve, or with the weights costed cold)
    state_s, footprint = reuse_s(profile, rows, cold)
    # threads the OpenMP runtime starts anew each step (a team wider than the one before: thread_starts)
    starts_s = 0.0 if on_gpu else thread_starts * o("thread_start_s")
    unpriced = unpriced_warning(profile)
    if unpriced:
        warnings.append(unpriced)
    host += wake_paid_s + state_s + starts_s
    memory += state_s
    by_family["reuse"] += state_s
    sync = (o("step_sync_s") or o("sync_s")) if on_gpu else 0.0
    copy = 0.0
    if on_gpu and transfer and input_bytes:
        h2d = profile.curves.get("h2d")
        copy = h2d(input_bytes) if h2d is not None else 0.0
    if on_gpu:
        busy = max(host, device)
        launch_part = floors + max(host - device, 0.0) + sync + copy
    else:
        busy = host
        launch_part = floors + overhead - faults + wake_paid_s + starts_s  # page faults: the memory system's work, not dispatch
        memory += faults
    latency = busy + sync + copy
    by_family["overhead"] += overhead + wake_paid_s + starts_s if not on_gpu else max(host - device, 0.0)
    spread = sum(share * float(profile.spread_rel.get(family, 0.0) or 0.0)
                 for family, share in ((f, t / latency) for f, t in by_family.items()) if latency > 0)
    spread /= math.sqrt(max(int(profile.meta.get("rounds_kept") or 1), 1))  # of the pooled statistic, not a round's
    r = max(spread, profile.noise_floor_rel, profile.interval_for(train))
    if faults > HEAP_FAULT_WARN_SHARE * latency:
        warnings.append(heap_fault_warning(fresh, faults, latency))
    if wake_unsure_s > WAKE_WARN_SHARE * latency:
        warnings.append(wake_warning(profile, regions, wake_regions, wake_unsure_s))
    shares = {"launch": launch_part / latency, "memory": memory / latency, "compute": compute / latency} \
        if latency > 0 else {"launch": 0.0, "memory": 0.0, "compute": 0.0}
    costs.sort(key=lambda item: -item[0])
    top_ops = [dict(op=row.get("op"), kind=row.get("kind"), module=row.get("module", ""), phase=row.get("phase"),
                    seconds=t, share=t / latency if latency > 0 else 0.0, bound=cost.bound)
               for t, row, cost in costs[:top]]
    # the low end: the step with its large buffers served from glibc's heap, faulting nothing
    # and the ops no primitive covers (each one's cost carries a warning) off by UNCOVERED_FACTOR either way
    low = (latency - faults) * (1 - r) - uncovered * (1 - 1 / UNCOVERED_FACTOR)
    return dict(latency_s=latency, latency_low_s=max(low, 0.1 * latency),
                latency_high_s=latency * (1 + r) + uncovered * (UNCOVERED_FACTOR - 1) + wake_unsure_s, fault_s=faults,
                host_s=host, device_s=device if on_gpu else math.nan, sync_s=sync, copy_s=copy, overhead_s=overhead,
                autograd_s=autograd, wake_s=wake_paid_s, wake_regions=wake_regions, thread_starts=thread_starts,
                thread_starts_s=starts_s, reuse_s=state_s,
                footprint_bytes=footprint, conv_forward_s=conv_forward,
                backward_kernels_s=backward_kernels, conv_trains=convolutions if train else 0, neighbours_s=neighbours,
                launches=launches, flops=flops, bytes=moved, weights="cold" if cold else "hot",
                launch_share=shares["launch"], memory_share=shares["memory"], compute_share=shares["compute"],
                bound=max(shares, key=shares.get),
                kind_shares={k: v / latency for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])}
                if latency else {},
                top_ops=top_ops, warnings=warnings)


#: How far the cost of an op no calibration primitive covers (its cost carries a warning) may lie from
#: the truth, either way: a CPU step's interval widens by that op's time times this less one above and
#: one less its inverse below (a GPU's keeps its width: no GPU evidence sizes the factor). On the 2-core
#: VM the uncovered ops of the out-of-sample sittings measured
#: 3.5-35 times their cost under the profiler (tanh, GELU, an LSTM, transposed and dilated convolutions:
#: ``bench_costly_ops.log``, ``bench_zoo_unseen_p1_*``); 4 covers the milder half and keeps an interval
#: that still says something.
UNCOVERED_FACTOR = 4.0
#: A CPU step whose page faults of fresh buffers are more than this share of it gets a warning; so
#: does one whose parallel ops could pay that share in thread wake-ups the prediction does not count.
HEAP_FAULT_WARN_SHARE = WAKE_WARN_SHARE = 0.1


def heap_fault_warning(buffer_bytes: float, fault_s: float, latency_s: float) -> str:
    """The warning of a CPU step whose buffers of 32 MiB or more (``buffer_bytes`` in all) cost ``fault_s``
    of its predicted ``latency_s`` in page faults: whether a process pays them depends on its heap
    (see :mod:`crossover.measurement.allocator`)."""
    from ..measurement.allocator import no_fresh_pages_env

    return (f"{buffer_bytes / 2**20:.0f} MiB of this step's buffers are 32 MiB or larger: glibc maps them "
            f"afresh and the step faults them in ({format_seconds(fault_s)}, {fault_s / latency_s:.0%} of the "
            "prediction) unless its heap has a free block to hold them, which depends on what the process "
            "holds and has freed; the interval's low end is the step without them, what a process started "
            f"with {no_fresh_pages_env()} pays (glibc keeps every buffer on its heap)")


def _beyond_floor(cost, on_gpu: bool) -> float:
    return (cost.device_s if on_gpu else cost.host_s) - cost.floor_s


def _scaled(cost, factor: float, on_gpu: bool):
    """``cost`` with its time beyond the floor (the device's on a GPU, else the host's) times ``factor``."""
    import dataclasses

    if on_gpu:
        return dataclasses.replace(cost, device_s=cost.floor_s + (cost.device_s - cost.floor_s) * factor,
                                   compute_s=cost.compute_s * factor)
    return dataclasses.replace(cost, host_s=cost.floor_s + (cost.host_s - cost.floor_s) * factor,
                               compute_s=cost.compute_s * factor)


def _sample(example_input, sample_shape, batch_sizes, input_dtype):
    import torch

    if example_input is not None:
        if not isinstance(example_input, torch.Tensor):
            raise TypeError("example_input must be one tensor (its first dimension is the batch); "
                            "or pass sample_shape=")
        shape, dtype = tuple(example_input.shape[1:]), example_input.dtype
        batch_sizes = batch_sizes or (int(example_input.shape[0]),)
    elif sample_shape is not None:
        shape, dtype = tuple(int(n) for n in sample_shape), input_dtype or torch.get_default_dtype()
    else:
        raise TypeError("pass example_input (a tensor) or sample_shape (one sample's shape)")
    batch_sizes = tuple(batch_sizes or (1,))
    if any(isinstance(b, bool) or not isinstance(b, int) or b <= 0 for b in batch_sizes):
        raise ValueError(f"batch sizes must be positive integers, got {batch_sizes!r}")
    return shape, dtype, batch_sizes


def predict_module(model, example_input=None, *, sample_shape=None, batch_sizes: Optional[Sequence[int]] = None,
                   profiles=None, workload: str = "forward", input_dtype=None, transfer: bool = False,
                   top: int = 5, warn: bool = True, thread_starts: Optional[Mapping] = None):
    """Predicted step latency of ``model`` on each calibrated device at each batch size.

    Parameters
    ----------
    model : torch.nn.Module
        Not modified (its train/eval mode is set for the trace and restored).
    example_input : torch.Tensor, optional
        An input batch: its shape after the first dimension is one sample's, its dtype the input's,
        and its first dimension the batch size when ``batch_sizes`` is not given.
    sample_shape : tuple of int, optional
        One sample's shape, instead of ``example_input``.
    batch_sizes : sequence of int, optional
    profiles : sequence of Profile or paths, optional
        Default: the shipped profiles (``experiments/profiles/<machine>/profile.json``).
    workload : {"forward", "train"}
        A forward pass under ``no_grad`` in ``eval()`` mode, or a training step with SGD.
    input_dtype : torch.dtype, optional
        With ``sample_shape``: the input's dtype (default float32; ``torch.long`` for token ids).
    transfer : bool
        On GPU profiles, add the input's host→device copy.
    top : int
        Costliest ops listed per prediction.
    warn : bool
        Issue a Python warning for each op no calibration covers (they are in ``warnings`` anyway).
    thread_starts : mapping, optional
        ``{(threads, batch_size): starts}``: the OpenMP threads a step started where the model was measured
        (``experiments/gpu_zoo.py`` records them), used for a CPU profile of that many threads instead of
        counting them here, whose libraries may size their teams otherwise
        (:func:`crossover.opcost.thread_starts.libraries_warning`, then not raised).

    Returns
    -------
    pandas.DataFrame
        One row per (profile, batch size): ``profile`` (its label), ``device``, ``machine``,
        ``batch_size``, ``workload`` and the fields of :func:`step_prediction`. ``attrs["crossovers"]``
        lists the crossovers between every CPU and GPU profile (between the first two profiles when no
        pair has both), ``attrs["crossover"]`` the first of them or None (see :func:`module_crossover`).

    Raises
    ------
    crossover.errors.TraceError
        The model rejects the input (the message names the layer).
    """
    import pandas as pd

    shape, dtype, batch_sizes = _sample(example_input, sample_shape, batch_sizes, input_dtype)
    profiles = load_profiles(profiles)
    params = [p for p in model.parameters()]
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    n_params = sum(1 for p in params if p.requires_grad)
    dense = sorted(set(batch_sizes) | {2**k for k in range(31) if min(batch_sizes) <= 2**k <= max(batch_sizes)})
    element = _element_size(dtype)
    rows = []  # the threads a step starts, counted by running it at a profile's thread count (thread_starts)
    starts = step_thread_starts(model, shape, workload, dtype, recorded=thread_starts)
    for batch_size in dense:
        table, calls = trace_step(model, shape, batch_size, workload, dtype)
        records = table.to_dict("records")
        fused = {device: gpu_records(records, model, batch_size) if workload == "forward" else
                 train_records(records, model, batch_size, device) for device in ("cpu", "cuda")}
        input_bytes = batch_size * math.prod(shape) * element
        for profile in profiles:
            # a recurrent layer as one call where the profile timed one (a GPU's cuDNN, a CPU's C++ loop)
            whole = costs_recurrent_whole(profile) if workload == "forward" else costs_recurrent_training(profile)
            sizes = dict(module_calls=calls, n_params=n_params, param_bytes=param_bytes, input_bytes=input_bytes,
                         transfer=transfer, top=top)
            step = step_prediction(profile, fused[profile.device] if whole else records, **sizes)
            n, told = starts(batch_size, profile.threads) if counts_thread_starts(profile, step["latency_s"]) else (0.0, False)
            if n:
                step = step_prediction(profile, fused[profile.device] if whole else records, thread_starts=n, **sizes)
            differ = libraries_warning(profile) if counts_thread_starts(profile, step["latency_s"]) and not told else ""
            if differ:
                step["warnings"] = [*step["warnings"], differ]
            rows.append(dict(profile=profile.label, device=profile.device, machine=profile.machine,
                             batch_size=batch_size, workload=workload, requested=batch_size in batch_sizes, **step))
    frame = pd.DataFrame(rows)
    crossovers = _all_crossovers(frame, profiles)
    frame = frame[frame["requested"]].drop(columns="requested").reset_index(drop=True)
    frame.attrs["crossovers"] = crossovers
    frame.attrs["crossover"] = crossovers[0] if crossovers else None
    if warn:
        for message in dict.fromkeys(w for ws in frame["warnings"] for w in ws):
            _warnings.warn(message, stacklevel=2)
    return frame


def _element_size(dtype) -> int:
    import torch

    return torch.empty((), dtype=dtype).element_size()


def _all_crossovers(frame, profiles) -> list:
    labels = list(dict.fromkeys(p.label for p in profiles))
    device_of = {p.label: p.device for p in profiles}
    pairs = [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:] if device_of[a] != device_of[b]]
    if not pairs and len(labels) >= 2:
        pairs = [(labels[0], labels[1])]
    return [module_crossover(frame, a, b) for a, b in pairs]


def _crossing(batch, a, b):
    """The first batch size where ``a`` and ``b`` (times at ``batch``) cross, or None."""
    roots = log_crossings(batch, a, b)
    return roots[0] if roots else None


def module_crossover(frame, a: str, b: str) -> dict:
    """Where profiles ``a`` and ``b`` swap places along the batch sizes of ``frame``.

    Returns
    -------
    dict
        ``between`` ([a, b]), ``at`` (the batch size where their predicted latencies cross, interpolated
        in log space between the batch sizes where the winner flips; None when it never flips),
        ``low`` and ``high`` (where it flips, the earliest and latest hand-over the two devices' intervals
        allow, :func:`crossover.crossings.crossover_ends`; None when it never flips), ``low_open`` and ``high_open`` (an end
        at the range's edge, the hand-over possibly beyond it), ``winner_below``, ``winner_above`` (when it
        flips), ``winner_everywhere`` (when it does not) and ``range`` (the batch sizes searched).
    """
    ta = frame[frame["profile"] == a].sort_values("batch_size")
    tb = frame[frame["profile"] == b].sort_values("batch_size")
    batch = list(ta["batch_size"])
    if list(tb["batch_size"]) != batch or not batch:
        raise ValueError(f"profiles {a!r} and {b!r} were not predicted at the same batch sizes")
    at = _crossing(batch, list(ta["latency_s"]), list(tb["latency_s"]))
    first, second = (ta, tb) if ta["latency_s"].iloc[0] < tb["latency_s"].iloc[0] else (tb, ta)
    first_winner, other = (a, b) if first is ta else (b, a)
    out = dict(between=[a, b], at=at, low=None, high=None, low_open=False, high_open=False,
               range=[batch[0], batch[-1]], winner_below=None, winner_above=None, winner_everywhere=None)
    if at is None:
        out["winner_everywhere"] = first_winner
        return out
    low, high, low_open, high_open = crossover_ends(batch, list(first["latency_low_s"]), list(first["latency_high_s"]),
                                                    list(second["latency_low_s"]), list(second["latency_high_s"]), at)
    out.update(low=low, high=high, low_open=low_open, high_open=high_open,
               winner_below=first_winner, winner_above=other)
    return out
