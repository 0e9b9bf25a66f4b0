"""A CPU step whose working set spills the private caches: its matrix products read their weights from
the shared cache, not from L2 (planning and pure costing; torch only inside the steps).

The matrix grid is timed hot (one weight, in the private caches after the first call) and cold (weights
cycled through a pool twice the last-level cache: DRAM). Between the two lies a step whose weights,
gradients and activations outgrow the private caches of its threads but stay in the shared one. Where
that cache is as quick as L2 (the AMD VM: the toy's 2 MiB of weights at one thread, within 3.2% costed
hot) nothing separates them; on the Intel VM (2 MiB of L2 a core, a 480 MiB shared cache) the toy at one
thread ran 10-25% over its hot cost in four sittings and within 4% at two threads (4 MiB of L2 between
them), and the reference MLP's batch-1 training step (800 KiB of weights, as much of gradients and of
fresh weight gradients) took 130 µs in its products against 29 costed hot (``bench_op_breakdown.py``, one
thread): the composition fitted that to its host work (×3.25), over-predicting every other training step.

The calibration times the product over a pool of weights :data:`SPILL_POOL` times the private caches
(family :data:`SPILL`, :data:`SPILL_M` × :data:`SPILL_KN`); a step spills (:func:`step_spills`) when its
working set (the weights, and in a training step their gradients and the fresh gradients autograd writes,
three times the weights; the input) exceeds the profile's private caches and fits the last-level cache,
and then each of its matrix products costs :func:`spill_ratio` times its grid time. A profile without the
primitives (every GPU's, every calibration before them) costs as before.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable

__all__ = ["SPILL", "SPILL_M", "SPILL_KN", "SPILL_POOL", "spill_points", "spill_step", "step_spills", "spill_ratio"]

#: The family (and grid) of the spilled products (CPU only), its rows and square weights' sides.
SPILL = "matmul_spill"
SPILL_M = (1, 8, 64, 512)
SPILL_KN = (128, 256, 512, 1024)
#: The private caches the weights' pool spans (capped below the last-level cache).
SPILL_POOL = 4
#: A training step's working set in weights: the weights, their gradients, the fresh weight gradients.
TRAIN_WEIGHT_COPIES = 3


def spill_points() -> list:
    """``(family, name, m, kn, flops)`` of each primitive: ``addmm`` of ``m`` rows by a ``kn × kn`` weight."""
    return [(SPILL, "addmm", m, kn, 2.0 * m * kn * kn) for m in SPILL_M for kn in SPILL_KN]


def spill_step(m: int, k: int, n: int, device: str, private_bytes: int, llc_bytes: int) -> Callable[[], object]:
    """One call of the primitive: ``addmm`` as ``nn.Linear`` runs it, each call the next weight of a pool
    spanning :data:`SPILL_POOL` times ``private_bytes`` (at most half of ``llc_bytes``)."""
    import torch

    pool_bytes = min(SPILL_POOL * private_bytes, llc_bytes // 2) if llc_bytes else SPILL_POOL * private_bytes
    copies = max(2, math.ceil(pool_bytes / (4 * k * n)))
    x, bias = torch.randn(m, k, device=device), torch.randn(n, device=device)
    pool = torch.arange(copies * n * k, dtype=torch.float32, device=device).mul_(1e-9)  # no two pages alike
    weights = itertools.cycle([w.t() for w in pool.view(copies, n, k)])
    return lambda: torch.addmm(bias, x, next(weights))


def step_spills(profile, param_bytes: float, input_bytes: float = 0.0, training: bool = False) -> bool:
    """Whether a step's working set spills ``profile``'s private caches and fits its last-level cache
    (pure): the weights (three copies in a training step) and the input, against ``cache_bytes``; False
    where the profile has no :data:`SPILL` grid."""
    if profile.device != "cpu" or SPILL not in profile.grids or not profile.cache_bytes:
        return False
    working = param_bytes * (TRAIN_WEIGHT_COPIES if training else 1) + input_bytes
    return profile.cache_bytes < working and param_bytes <= profile.warm_bytes


def spill_ratio(profile, dims) -> float:
    """The spilled grid's time over the hot one's at a product's ``(M, K·N)`` (at least 1; 1 where the
    profile lacks either grid)."""
    spilled, hot = profile.grids.get(SPILL), profile.grids.get("matmul")
    if spilled is None or hot is None or dims is None:
        return 1.0
    return max(spilled(*dims) / hot(*dims), 1.0)
