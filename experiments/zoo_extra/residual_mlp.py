"""Three residual blocks ``x + W2 tanh(W1 x)`` of width 128 (256 inside), then a head to 10.

Written on 27 Nov 2026 to check the method away from the zoo it was made on (``experiments/zoo_extra``),
fixed before it was first measured.
"""

import torch
from torch import nn

#: One sample: 128 features.
INPUT_SHAPE = (128,)


class Block(nn.Module):
    """``x + b(tanh(a(x)))``."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(128, 256), nn.Linear(256, 128)

    def forward(self, x):
        return x + self.b(torch.tanh(self.a(x)))


def model() -> nn.Module:
    """Three blocks, then ``Linear(128 → 10)``."""
    return nn.Sequential(Block(), Block(), Block(), nn.Linear(128, 10))
