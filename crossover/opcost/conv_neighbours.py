"""A CPU convolution among a step's other kernels: what it and they pay beyond each alone.

A calibration primitive repeats one op back to back, so its kernel's code and working buffers stay in the
core. A convolution is a large kernel with buffers of its own (the native path unfolds its input and runs
MKL's GEMM; oneDNN picks an implementation, reorders and keeps a scratchpad): run between a step's other
kernels, it pushes their code and data out of the private caches and finds its own gone. On the AMD VM
(512 KiB of L2 a core) at one thread, a rotation of five small kernels (a 1-D max-pooling, a layer norm, a
one-row ``Linear``, a softmax, a ReLU) took -0.1 to +0.3 µs an op more than each alone, and the toy's
product, ReLU and add less; with the 1-D CNN's native convolution and four of them the five took 2.5-3.0 µs
an op more (12-15 µs a convolution), with LeNet-5's 5×5 oneDNN convolution 7.6-10.9 (38-55 µs), three
processes alike and at two threads (``experiments/bench_conv_neighbours.py``, its log
``experiments/results/amd-epyc-2c/logs/conv_neighbours_1129.log``): a fixed cost per convolution call,
whatever the batch, that the forward convolutions' share of the composition (``conv_forward_extra``, a
proportion of their time) spread over every batch size, and the zoo's CNNs read low at batch 1 (the 1-D
CNN by 20-35% in the four calibrations of 1129f-g).

The calibration times it (family :data:`NEIGHBOURS`): for each convolution of :data:`CONVOLUTIONS` (one on
PyTorch's native path, one on oneDNN's) the rotation of it and the :data:`OTHERS` kernels, and the
convolution alone, beside the others' rotation without it; :func:`fit_neighbours` reads each path's price
per call, ``rotation - convolution - others``, and :func:`neighbours_s` charges it to each forward
convolution of a step by the path ATen runs it on (:func:`crossover.opcost.op_costs.conv_backend`).
A profile without the primitive (every calibration before it, every GPU's) charges nothing.

Below :data:`~crossover.opcost.thread_starts.MIN_THREADS` threads only. At more, a batch-1 convolution runs
on a narrower team than its neighbours and the pool churns (:mod:`crossover.opcost.thread_starts`, which
prices that at batch 1, where it happens): the H200 host's 16-thread calibration of 29 November timed
LeNet-5's convolution alone at 0.53 to 12.9 ms a visit (46-87 µs at one thread on the same host) and read
a price of 243 µs for oneDNN's path against 4.0 µs at one thread
(``experiments/results/nvidia-h200-16c/run3/gpu-paired/calibration``): there the primitive times the
host's batch-1 thread costs, not a cache effect, and charged at every batch it over-predicted that visit's
convolution steps at batch 8 and 64 by up to 2.5 times. So a calibration at three or more threads times no
such primitive, and :func:`neighbours_s` charges nothing on a profile made at that many threads (the cache
effect, a few µs a convolution at one thread, is left out there).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

from .op_costs import conv_backend
from .thread_starts import MIN_THREADS
from .trace import op_name

__all__ = ["NEIGHBOURS", "NEIGHBOUR_VISITS", "CONVOLUTIONS", "OTHERS", "neighbour_points", "neighbour_step", "fit_neighbours",
           "neighbours_s", "price_name", "priced_at"]

#: The calibration family of the primitives.
NEIGHBOURS = "conv_neighbours"
#: The convolutions timed among the others, by the path ATen runs them on: ``(input, weight)`` shapes. The
#: native one is the 1-D convolution of one sequence (8 → 32 channels, kernel 5, 256 steps: a height-1 2-D
#: convolution of 2048 elements, unfolded and multiplied); the oneDNN one LeNet-5's second (6 → 16 channels,
#: 5 × 5, on 14 × 14: both kernel sides above 3).
CONVOLUTIONS = {"native": ((1, 8, 256), (32, 8, 5)), "mkldnn": ((1, 6, 14, 14), (16, 6, 5, 5))}
#: The small kernels around it, each a different ATen op.
OTHERS = ("max_pool1d", "layer_norm", "linear", "softmax")
#: The primitives' names besides ``<path>/rotation`` and ``<path>/alone``.
OTHERS_NAME = "others"
#: Visits of each primitive a round, each round's quicker kept (as a reference model's): the price is a difference
#: of three, and this host switches between a fast and a slower state for seconds at a time; visited once a round,
#: in sitting 1129h's one-thread calibration the native convolution alone read 35.2 µs (27.8 in the fast state:
#: ``conv_neighbours_1129.log``) while its rotation read as fast as there (64.4 µs), and the native price 0.7 µs.
NEIGHBOUR_VISITS = 4


def price_name(backend: str) -> str:
    """The profile overhead holding the price of one forward convolution on ``backend`` among other kernels."""
    return f"conv_neighbours_{backend}_s"


def neighbour_points(threads: int = 1) -> list:
    """``(family, name)`` of each primitive: every convolution's rotation and its call alone, the others'
    rotation; none at ``threads`` of :data:`~crossover.opcost.thread_starts.MIN_THREADS` or more (0: several)."""
    if not priced_at(threads):
        return []
    names = [f"{backend}/{what}" for backend in CONVOLUTIONS for what in ("rotation", "alone")]
    return [(NEIGHBOURS, name) for name in [*names, OTHERS_NAME]]


def _calls(device: str) -> dict:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    pooled, row, wide = torch.randn(1, 32, 256, device=device), torch.randn(1, 256, device=device), \
        torch.randn(1, 1000, device=device)
    gamma, beta = torch.randn(256, device=device), torch.randn(256, device=device)
    x, w, b = torch.randn(1, 64, device=device), torch.randn(10, 64, device=device), torch.randn(10, device=device)
    calls = {"max_pool1d": lambda: F.max_pool1d(pooled, 2), "layer_norm": lambda: F.layer_norm(row, (256,), gamma, beta),
             "linear": lambda: F.linear(x, w, b), "softmax": lambda: F.softmax(wide, -1)}
    for backend, (shape, weight_shape) in CONVOLUTIONS.items():
        image, weight = torch.randn(shape, device=device), torch.randn(weight_shape, device=device)
        conv, padding = (F.conv1d, 2) if len(shape) == 3 else (F.conv2d, 0)  # as the 1-D CNN's, as LeNet-5's
        calls[backend] = (lambda conv=conv, image=image, weight=weight, padding=padding: conv(image, weight, padding=padding))
    return calls


def neighbour_step(name: str, device: str = "cpu") -> Callable[[], object]:
    """The primitive ``name`` of :func:`neighbour_points` as a no-argument call (without autograd)."""
    import torch

    calls = _calls(device)
    backend, _, what = name.partition("/")
    sequence = [calls[o] for o in OTHERS] if name == OTHERS_NAME else \
        [calls[backend]] if what == "alone" else [calls[backend], *(calls[o] for o in OTHERS)]

    def step():
        with torch.no_grad():
            for call in sequence:
                call()

    return step


def fit_neighbours(families: Mapping) -> dict:
    """Each path's :func:`price_name` from the primitives under ``families[NEIGHBOURS]`` (``(seconds, spread,
    row)`` each): its rotation less its convolution alone and the others' rotation, at least 0; ``{}`` where
    the calibration lacks them (pure)."""
    by_name = {row["name"]: seconds for seconds, _, row in families.get(NEIGHBOURS, []) if math.isfinite(seconds)}
    if OTHERS_NAME not in by_name:
        return {}
    return {price_name(backend): max(by_name[f"{backend}/rotation"] - by_name[f"{backend}/alone"]
                                     - by_name[OTHERS_NAME], 0.0)
            for backend in CONVOLUTIONS if {f"{backend}/rotation", f"{backend}/alone"} <= set(by_name)}


def priced_at(threads: int) -> bool:
    """Whether a CPU calibration at ``threads`` (0: torch's default, several) times and charges the price."""
    return 0 < threads < MIN_THREADS


def neighbours_s(profile, rows: Sequence[Mapping]) -> float:
    """Seconds a step's forward convolutions pay among its other kernels on a CPU ``profile``: each at its
    path's price (0 on a GPU, where the profile has no price, or where it was made at
    :data:`~crossover.opcost.thread_starts.MIN_THREADS` threads or more)."""
    if profile.device != "cpu" or (profile.threads and not priced_at(int(profile.threads))):
        return 0.0
    return sum(profile.overhead(price_name(conv_backend(row, int(profile.threads or 0))))
               for row in rows if row.get("phase", "forward") == "forward" and op_name(row.get("op", "")) == "convolution")
