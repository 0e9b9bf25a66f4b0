"""A MobileNetV2-style network of inverted residual blocks on 64×64 RGB images: a stride-2 3×3 stem
convolution, three blocks that expand the channels four times with a pointwise convolution, filter them
with a depthwise 3×3 one (``groups`` = channels) and project them back with another pointwise one (batch
norm after each, ReLU6 after the first two, a residual sum where the shapes allow), global average
pooling and a ``Linear`` to 10 classes.

Written on 28 Nov 2026 for the fourth out-of-sample batch; fixed, and committed, before it was first
measured.

    crossover predict --model experiments/zoo_fourth/inverted_residual.py:model --input-shape 3,64,64 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample: a 3×64×64 image (the batch dimension is added).
INPUT_SHAPE = (3, 64, 64)


class InvertedResidual(nn.Module):
    """Pointwise expansion (×``expand``), depthwise 3×3 at ``stride``, pointwise projection; the input is
    added back when the stride is 1 and the channels match."""

    def __init__(self, c_in: int, c_out: int, stride: int, expand: int = 4):
        super().__init__()
        hidden = c_in * expand
        self.residual = stride == 1 and c_in == c_out
        self.body = nn.Sequential(
            nn.Conv2d(c_in, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, c_out, 1, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


def model() -> nn.Module:
    """Stem conv(3→16, /2) · block(16→24, /2) · block(24→24) · block(24→32, /2) · pool · Linear(32→10)."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
                         InvertedResidual(16, 24, 2), InvertedResidual(24, 24, 1), InvertedResidual(24, 32, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
