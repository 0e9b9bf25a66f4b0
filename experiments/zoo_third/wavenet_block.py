"""WaveNet-style gated residual blocks over a one-channel series of 512 steps: a 1-D convolution to 24
channels, then four blocks of dilations 1, 2, 4 and 8, each ``tanh(conv) * sigmoid(conv)`` through a 1×1
convolution added back; the mean over time and a ``Linear`` to 4 classes.

Written for the third out-of-sample check of the own-model method (#27); fixed before it was first
measured.

    crossover predict --model experiments/zoo_third/wavenet_block.py:model --input-shape 1,512 --batch-size 1,8,64,512
"""

import torch
from torch import nn

#: One sample's shape: channels × time steps (the batch dimension is added).
INPUT_SHAPE = (1, 512)


class GatedBlock(nn.Module):
    """``x + conv1x1(tanh(filter(x)) * sigmoid(gate(x)))``, the dilated convolutions of kernel 3 padded to
    keep the length."""

    def __init__(self, channels: int, dilation: int):
        super().__init__()
        self.filter = nn.Conv1d(channels, channels, 3, padding=dilation, dilation=dilation)
        self.gate = nn.Conv1d(channels, channels, 3, padding=dilation, dilation=dilation)
        self.mix = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        return x + self.mix(torch.tanh(self.filter(x)) * torch.sigmoid(self.gate(x)))


class WaveNetBlocks(nn.Module):
    """``Conv1d(1 → 24)``, four :class:`GatedBlock` (dilations 1-8), mean over time, ``Linear(24 → 4)``."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Conv1d(1, 24, 3, padding=1)
        self.blocks = nn.Sequential(*[GatedBlock(24, d) for d in (1, 2, 4, 8)])
        self.head = nn.Linear(24, 4)

    def forward(self, x):
        return self.head(self.blocks(self.inp(x)).mean(dim=-1))


def model() -> nn.Module:
    """A fresh :class:`WaveNetBlocks`."""
    return WaveNetBlocks()
