"""A small ResNet on 3×32×32 images, trained: a 3×3 stem convolution (16 channels) with batch norm and
ReLU, one basic block at the same width and one that halves the side and doubles the channels (its
shortcut a strided 1×1 convolution with batch norm), global average pooling and a ``Linear`` to 10
classes. The training step (SGD) runs batch norm in training mode and the strided convolutions' gradients.

Written on 28 Nov 2026 for the fifth out-of-sample batch; fixed, and committed, before it was first
measured.

    crossover predict --model experiments/zoo_fifth/resnet_block.py:model --input-shape 3,32,32 --batch-size 1,8,64 --workload train
"""

from torch import nn

#: One sample: a 3×32×32 image (the batch dimension is added).
INPUT_SHAPE = (3, 32, 32)
#: The steps measured: the forward pass and a training step (SGD).
WORKLOADS = ("forward", "train")


class BasicBlock(nn.Module):
    """Two 3×3 convolutions with batch norm, the input added back (through a strided 1×1 convolution and
    batch norm where the shape changes), ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(),
                                  nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out))
        self.shortcut = nn.Identity() if stride == 1 and c_in == c_out else nn.Sequential(
            nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


def model() -> nn.Module:
    """Stem conv(3→16) · block(16→16) · block(16→32, /2) · pool · Linear(32→10)."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
