"""The toy model: a stack of residual MLP blocks (its exact cost counts live in
:mod:`crossover.measurement.toy_counts`, without torch).

Each block computes ``x + relu(x @ W.T)`` with ``W`` of shape ``(d_model, d_model)`` and no bias
(``torch.nn.Linear(d_model, d_model, bias=False)``); see :mod:`crossover.measurement.toy_counts` for
what its FLOP and byte counts count.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..axes import WORKLOADS
from .toy_counts import _check_positive

__all__ = ["ResidualBlock", "ResidualMLP", "WORKLOADS"]


class ResidualBlock(nn.Module):
    """``x + relu(Linear(d_model, d_model, bias=False)(x))``."""

    def __init__(self, d_model: int, *, device=None, dtype=None):
        super().__init__()
        self.linear = nn.Linear(d_model, d_model, bias=False, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (batch, d_model)
        return x + torch.relu(self.linear(x))


class ResidualMLP(nn.Module):
    """``n_layers`` residual blocks of width ``d_model``.

    Weights are uniform in ``±1 / (sqrt(d_model) * n_layers)``, PyTorch's default range divided by the
    depth. With the default range every block adds a positive ReLU term of the activations' size, and a
    deep stack's activations grow by orders of magnitude (float16 overflows to inf and NaN). Divided by
    the depth, the whole stack changes them by a bounded factor, so timings never meet inf, NaN or
    denormal arithmetic. The values do not change the work done.

    Drawing 2^31 random numbers takes tens of seconds on a small CPU, so one ``(d_model, d_model)``
    matrix is drawn (seeded: the model is the same every time) and each layer gets it with its rows in
    a different random order: distinct weights for every layer at the cost of a copy.

    Parameters
    ----------
    d_model : int
        Width of every layer.
    n_layers : int
        Number of residual blocks.
    device, dtype : optional
        Where and in which precision the weights live (``"meta"`` allocates nothing).
    seed : int
        Seed of the weight draw.
    """

    def __init__(self, d_model: int, n_layers: int, *, device=None, dtype=None, seed: int = 0):
        super().__init__()
        _check_positive(d_model=d_model, n_layers=n_layers)
        self.d_model = d_model
        self.n_layers = n_layers
        # Build on the meta device (no memory, no default init), then allocate uninitialised storage.
        self.blocks = nn.Sequential(
            *(ResidualBlock(d_model, device="meta", dtype=dtype) for _ in range(n_layers))
        )
        if torch.device(device if device is not None else "cpu").type == "meta":
            return
        self.to_empty(device=device if device is not None else "cpu")
        bound = 1.0 / (math.sqrt(d_model) * n_layers)
        generator = torch.Generator().manual_seed(seed)
        base = torch.empty(d_model, d_model).uniform_(-bound, bound, generator=generator)
        weight = self.blocks[0].linear.weight
        base = base.to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            for block in self.blocks:
                rows = torch.randperm(d_model, generator=generator).to(weight.device)
                torch.index_select(base, 0, rows, out=block.linear.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (batch, d_model)
        return self.blocks(x)
