"""A small U-Net on one 3×32×32 image: two 3×3 convolutions with a max-pooling between, a stride-2
transposed convolution back up, the skip connection concatenated, two 3×3 convolutions to one channel.

Written for the third out-of-sample check of the own-model method (#27); fixed before it was first
measured. The training step regresses the output on a random map (mean squared error).

    crossover predict --model experiments/zoo_third/unet_lite.py:model --input-shape 3,32,32 --batch-size 1,8,64,512
"""

import torch
from torch import nn

#: One sample's shape (the batch dimension is added).
INPUT_SHAPE = (3, 32, 32)
#: The steps measured of it: the forward pass and a training step (SGD).
WORKLOADS = ("forward", "train")


class UNetLite(nn.Module):
    """3 → 16 (32×32) → pool → 32 (16×16) → up 16 (32×32) ‖ skip → 16 → 1."""

    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
        self.middle = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.out = nn.Sequential(nn.Conv2d(32, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 3, padding=1))

    def forward(self, x):
        skip = self.down(x)
        return self.out(torch.cat([self.up(self.middle(skip)), skip], dim=1))


def model() -> nn.Module:
    """A fresh :class:`UNetLite`."""
    return UNetLite()
