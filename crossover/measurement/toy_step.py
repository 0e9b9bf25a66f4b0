"""Measuring one configuration of the toy model: build it, make a step, time it.

A :class:`Config` names one benchmark point completely (sizes, device, workload, execution mode,
precision, input transfer, threads, timing regime). :func:`measure` returns a :class:`Measurement`
that keeps the raw times, the counts (params, FLOPs, bytes) and, when asked, per-step profiler
counts. Nothing here writes files.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Optional

import torch

from .machine_load import LoadMonitor
from ..errors import ConfigError
from .environment import available_memory_bytes
from ..axes import BYTES_PER_ELEMENT, DEVICES, DTYPES, MODES, REGIMES, TRANSFERS, WORKLOADS
from .toy_counts import param_count, step_bytes, step_flops
from .toy_model import ResidualMLP
from .timer import Timing, TimerOptions, time_step

__all__ = [
    "Config",
    "Measurement",
    "ConfigError",
    "measure",
    "make_step",
    "estimate_memory_bytes",
    "check_fits",
    "profile_counts",
    "DEVICES",
    "MODES",
    "DTYPES",
    "TRANSFERS",
]

_TORCH_DTYPE = {
    "float32": torch.float32,
    "tf32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


@dataclass(frozen=True)
class Config:
    """One benchmark point. Defaults are DESIGN's anchor: d_model=128, n_layers=128, batch 1."""

    d_model: int = 128
    n_layers: int = 128
    batch_size: int = 1
    device: str = "cpu"
    workload: str = "forward"
    mode: str = "eager"
    dtype: str = "float32"
    transfer: str = "device"
    regime: str = "latency"
    threads: int = 0  # CPU intra-op threads; 0 means torch's default (all usable cores)

    def __post_init__(self):
        for name in ("d_model", "n_layers", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 0:
            raise ConfigError(f"threads must be a non-negative integer, got {self.threads!r}")
        for name, allowed in (
            ("device", DEVICES),
            ("workload", WORKLOADS),
            ("mode", MODES),
            ("dtype", DTYPES),
            ("transfer", TRANSFERS),
            ("regime", REGIMES),
        ):
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"unknown {name} {getattr(self, name)!r}; expected one of {', '.join(allowed)}"
                )
        if self.device == "cpu":
            if self.mode == "cudagraph":
                raise ConfigError("mode 'cudagraph' needs device 'cuda' (CUDA graphs do not exist on the CPU)")
            if self.dtype == "tf32":
                raise ConfigError("dtype 'tf32' is a CUDA matmul mode; use float32 on the CPU")
            if self.transfer != "device":
                raise ConfigError(f"transfer {self.transfer!r} needs device 'cuda'; on the CPU use 'device'")
        if self.mode == "cudagraph" and self.transfer == "pageable":
            raise ConfigError(
                "mode 'cudagraph' cannot capture a copy from pageable memory; use transfer 'pinned' or 'device'"
            )

    @property
    def params(self) -> int:
        return param_count(self.d_model, self.n_layers)

    @property
    def flops(self) -> int:
        return step_flops(self.d_model, self.n_layers, self.batch_size, self.workload)

    @property
    def bytes_per_element(self) -> int:
        return BYTES_PER_ELEMENT[self.dtype]

    @property
    def bytes(self) -> int:
        return step_bytes(
            self.d_model,
            self.n_layers,
            self.batch_size,
            bytes_per_element=self.bytes_per_element,
            workload=self.workload,
        )


@dataclass(frozen=True)
class Measurement:
    """What one measurement produced: its config, the timing, threads used, and optional extras."""

    config: Config
    timing: Timing
    threads_used: int
    compile_s: float = math.nan  # compile: the first (compiling) call; cudagraph: warm-up and capture
    setup_s: float = math.nan  # building the model and inputs
    ops_per_step: float = math.nan  # top-level torch operators dispatched per step (profiler)
    kernels_per_step: float = math.nan  # device kernels launched per step (profiler, CUDA)
    device_busy_s: float = math.nan  # summed kernel time per step (profiler, CUDA): busy = this / median_s
    device_name: str = ""
    warnings: tuple = field(default=())
    load: Optional[object] = None  # crossover.measurement.machine_load.LoadReport of the timed window, when monitored

    @property
    def all_warnings(self) -> tuple:
        """Every warning of this measurement, each a whole sentence: the machine's, then the timer's."""
        load_warnings = tuple(self.load.warnings) if self.load is not None else ()
        return load_warnings + tuple(self.warnings) + tuple(self.timing.warnings)

    def summary(self) -> dict:
        """A flat, JSON-friendly dict of config, counts and statistics (no raw times).

        ``warnings`` is a list of whole sentences; ``busy`` and the load columns say whether other
        processes competed for the cores while this point was timed (see :mod:`crossover.measurement.machine_load`).
        """
        t = self.timing
        load = self.load.as_row() if self.load is not None else {
            "other_cpu_cores": math.nan, "cpu_utilisation": math.nan, "steal_fraction": math.nan, "busy": None}
        return {
            **asdict(self.config),
            "threads": self.threads_used,
            "device_name": self.device_name,
            "params": self.config.params,
            "flops": self.config.flops,
            "bytes": self.config.bytes,
            "median_s": t.median_s,
            "iqr_s": t.iqr_s,
            "q1_s": t.q1_s,
            "q3_s": t.q3_s,
            "mean_s": t.mean_s,
            "min_s": t.min_s,
            "median_ci_low_s": t.median_ci_s[0],
            "median_ci_high_s": t.median_ci_s[1],
            "n_repeats": t.n_repeats,
            "calls_per_repeat": t.calls_per_repeat,
            "stop_reason": t.stop_reason,
            "device_median_s": t.device_median_s,
            "compile_s": self.compile_s,
            "setup_s": self.setup_s,
            "ops_per_step": self.ops_per_step,
            "kernels_per_step": self.kernels_per_step,
            "device_busy_s": self.device_busy_s,
            **load,
            "warnings": list(self.all_warnings),
        }


def estimate_memory_bytes(config: Config) -> int:
    """Upper estimate of the memory one measurement allocates on its device, in bytes.

    Weights, plus for training their gradients and the saved activations of every layer (the
    optimizer is plain SGD, so it keeps no state), plus a few live activation buffers, plus 10% and
    64 MiB for the allocator and workspace.
    """
    element = config.bytes_per_element
    weights = config.params * element
    activation = config.batch_size * config.d_model * element
    if config.workload == "train":
        need = 2 * weights + 4 * activation * config.n_layers + 4 * activation
    else:
        need = weights + 4 * activation
    return int(need * 1.1) + 64 * 2**20


def check_fits(config: Config, available_bytes: Optional[int] = None) -> None:
    """Raise :class:`ConfigError` when ``config`` would not fit in the device's free memory."""
    if available_bytes is None:
        available_bytes = available_memory_bytes(config.device)
    need = estimate_memory_bytes(config)
    if need > 0.9 * available_bytes:
        raise ConfigError(
            f"needs about {need / 2**30:.1f} GiB on {config.device} but only "
            f"{available_bytes / 2**30:.1f} GiB is free"
        )


def _check_device_supports(config: Config) -> str:
    """Check the device and dtype exist here; return the device's name."""
    from .environment import device_name, require_device

    require_device(config.device)
    try:
        a = torch.ones(4, 4, dtype=_TORCH_DTYPE[config.dtype], device=config.device)
        (a @ a).sum().item()
    except RuntimeError as exc:  # pragma: no cover - depends on the build and the device
        raise ConfigError(f"dtype {config.dtype} is not supported on {config.device}: {exc}") from None
    return device_name(config.device)


@contextlib.contextmanager
def _matmul_precision(dtype: str):
    """TF32 for float32 CUDA matmuls only while measuring a ``tf32`` config."""
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


@contextlib.contextmanager
def _cold_inductor_caches():
    """Inductor's FX-graph and autotuning caches off, where this torch has the switch."""
    try:
        from torch._inductor import config as inductor_config
    except ImportError:  # pragma: no cover
        yield
        return
    if hasattr(inductor_config, "force_disable_caches"):
        with inductor_config.patch(force_disable_caches=True), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*force disabled.*")  # says what we asked for
            yield
    else:  # pragma: no cover - older torch
        yield


@contextlib.contextmanager
def num_threads(threads: int):
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(previous)


def make_step(config: Config) -> Callable[[], object]:
    """Build the model and inputs for ``config`` and return a no-argument step function.

    ``forward`` runs the model under ``torch.inference_mode``; ``train`` runs forward, a mean-squared
    error loss against a fixed target, backward, and a plain SGD update. ``compile`` wraps the model
    in ``torch.compile`` (the optimizer step stays eager); ``cudagraph`` captures the whole step in a
    CUDA graph and replays it. With transfer ``pageable`` or ``pinned`` each step first copies the
    input from host memory.

    The first call of a ``compile`` step compiles; :func:`measure` times it separately.
    """
    device = torch.device(config.device)
    dtype = _TORCH_DTYPE[config.dtype]
    model = ResidualMLP(config.d_model, config.n_layers, device=device, dtype=dtype)
    generator = torch.Generator().manual_seed(0)
    x_host = torch.randn(config.batch_size, config.d_model, generator=generator, dtype=dtype)
    if config.transfer == "pinned":
        x_host = x_host.pin_memory()
    x_device = x_host.to(device)
    target = torch.zeros_like(x_device)
    copy_input = config.transfer != "device"
    non_blocking = config.transfer == "pinned"

    if config.workload == "forward":
        model.requires_grad_(False)
        model.eval()
    if config.mode == "compile":
        # A fresh compile for every config: without the reset, Dynamo reuses the code it compiled for
        # an earlier model of the same structure (and after two batch sizes compiles a dynamic-shape
        # graph), so compile time and even the compiled code would depend on the sweep's order.
        torch._dynamo.reset()
        runner = torch.compile(model, dynamic=False)
    else:
        runner = model
    optimizer = (
        torch.optim.SGD(model.parameters(), lr=1e-6) if config.workload == "train" else None
    )

    def step():
        x = x_host.to(device, non_blocking=non_blocking) if copy_input else x_device
        if optimizer is None:
            with torch.inference_mode():
                return runner(x)
        optimizer.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(runner(x), target)
        loss.backward()
        optimizer.step()
        return loss

    step.model = model  # for inspection (tests, notebooks)
    if config.mode != "cudagraph":
        return step

    # CUDA graphs: warm up on a side stream, capture one whole step, replay it.
    # A pinned-transfer step copies from its static pinned host buffer inside the graph.
    capture_start = time.perf_counter()
    if optimizer is not None:
        for parameter in model.parameters():
            parameter.grad = torch.zeros_like(parameter)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_output = step()

    def replay():
        graph.replay()
        return static_output

    torch.cuda.synchronize()
    # The graph reads and writes fixed addresses: the input, target and gradients must outlive it.
    # Without this reference the closure's tensors are freed when make_step returns, their memory is
    # reused by later allocations, and every replay after the first reads whatever was written there.
    replay.step = step
    replay.model = model
    replay.capture_s = time.perf_counter() - capture_start  # warm-up and capture, not the model build
    return replay


def profile_counts(step: Callable[[], object], device: str, n_steps: int = 3) -> dict:
    """Count what one step dispatches, with ``torch.profiler``.

    Returns
    -------
    dict
        ``ops_per_step``: top-level profiler events per step: the calls the host dispatches (``aten::``
        operators, autograd nodes, optimizer calls, a compiled region counts once, a CUDA graph replay
        as one call);
        ``kernels_per_step``: device kernels per step, copies and memsets excluded (CUDA only, else NaN);
        ``device_busy_s``: summed kernel time per step in seconds (CUDA only, else NaN).
    """
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    step()  # not profiled: the first call may still initialise something
    with profile(activities=activities) as prof:
        for _ in range(n_steps):
            step()
        if device == "cuda":
            torch.cuda.synchronize()
    events = prof.events()
    cpu_ops = [
        e for e in events
        if e.device_type == torch.autograd.DeviceType.CPU and e.cpu_parent is None
        and "Synchronize" not in e.name  # our own synchronisation, not part of the step
    ]
    counts = {"ops_per_step": len(cpu_ops) / n_steps, "kernels_per_step": math.nan, "device_busy_s": math.nan}
    if device == "cuda":
        kernels = [
            e for e in events
            if e.device_type == torch.autograd.DeviceType.CUDA and not e.name.startswith(("Memcpy", "Memset"))
        ]
        counts["kernels_per_step"] = len(kernels) / n_steps
        counts["device_busy_s"] = sum(e.device_time for e in kernels) / 1e6 / n_steps  # µs → s
    return counts


def measure(
    config: Config,
    options: TimerOptions = TimerOptions(),
    *,
    profile: bool = False,
    check_memory: bool = True,
) -> Measurement:
    """Measure one configuration.

    Parameters
    ----------
    config : Config
        What to measure.
    options : TimerOptions
        Warm-up, repeats and time budget.
    profile : bool
        Also count operators and kernels per step with ``torch.profiler``.
    check_memory : bool
        Refuse (with :class:`ConfigError`) a config whose memory estimate exceeds free memory,
        before allocating anything.

    Returns
    -------
    Measurement

    Raises
    ------
    ConfigError
        CUDA requested but absent, unsupported dtype, or not enough memory.
    """
    device_name = _check_device_supports(config)
    if check_memory:
        check_fits(config)
    sync = torch.cuda.synchronize if config.device == "cuda" else (lambda: None)
    event_factory = (
        (lambda: torch.cuda.Event(enable_timing=True)) if config.device == "cuda" else None
    )
    with num_threads(config.threads) as threads_used, _matmul_precision(config.dtype):
        setup_start = time.perf_counter()
        step = make_step(config)
        sync()
        setup_s = time.perf_counter() - setup_start
        compile_s = math.nan
        if config.mode == "compile":
            # The first call compiles, with Inductor's on-disk caches off so that it is a cold compile
            # whatever ran before; kept out of the latency.
            first_start = time.perf_counter()
            with _cold_inductor_caches():
                step()
            sync()
            compile_s = time.perf_counter() - first_start
        elif config.mode == "cudagraph":
            compile_s = step.capture_s  # warm-up and capture in make_step; kept out of the latency
        # The machine's load over the timed window: other processes on our cores inflate a CPU step
        # (OpenMP threads wait for a descheduled sibling) without widening its IQR.
        # A CUDA step's host side is one launching thread.
        on_cpu = config.device == "cpu"
        with LoadMonitor(threads=threads_used if on_cpu else 1, check_utilisation=on_cpu) as monitor:
            timing = time_step(step, options, regime=config.regime, sync=sync, event_factory=event_factory,
                               synchronous=config.device == "cpu")
        counts = profile_counts(step, config.device) if profile else {}
    return Measurement(
        config=config,
        timing=timing,
        threads_used=threads_used,
        compile_s=compile_s,
        setup_s=setup_s,
        device_name=device_name,
        load=monitor.report,
        **counts,
    )


def with_defaults(**overrides) -> Config:
    """A :class:`Config` with DESIGN's defaults and the given fields replaced."""
    return replace(Config(), **overrides)
