"""A depthwise-separable CNN (MobileNet-style) on 32×32 RGB images: a 3×3 stem convolution, three blocks
of a depthwise 3×3 convolution (``groups`` = channels) and a pointwise 1×1 one, each with batch norm and
ReLU, global average pooling and a ``Linear`` to 10 classes.

A kind of model the calibration's reference models do not cover: grouped convolutions do little
arithmetic per byte, and batch norm runs in eval mode between them. Added for the transfer checks of
the CPU issue (#27); fixed before it was first measured.

    crossover predict --model experiments/zoo/depthwise_cnn.py:model --input-shape 3,32,32 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample: a 3×32×32 image (the batch dimension is added).
INPUT_SHAPE = (3, 32, 32)


def _separable(c_in: int, c_out: int, stride: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False), nn.BatchNorm2d(c_in),
                         nn.ReLU(), nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


def model() -> nn.Module:
    """Stem conv(3→16) · separable(16→32, /2) · separable(32→64, /2) · separable(64→64) · pool · Linear."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.ReLU(), _separable(16, 32, 2), _separable(32, 64, 2),
                         _separable(64, 64, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
