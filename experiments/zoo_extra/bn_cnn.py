"""A CNN with BatchNorm, a strided convolution and global average pooling, on 3 × 32 × 32 images.

Written on 27 Nov 2026 to check the method away from the zoo it was made on (``experiments/zoo_extra``),
fixed before it was first measured.
"""

from torch import nn

#: One sample: a 3 × 32 × 32 image.
INPUT_SHAPE = (3, 32, 32)


def model() -> nn.Module:
    """Conv(3 → 16) → BatchNorm → ReLU → Conv(16 → 32, stride 2) → BatchNorm → ReLU → global average → 10."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
