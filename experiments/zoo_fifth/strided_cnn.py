"""An all-convolutional network on 1×28×28 images, trained: three 3×3 convolutions that each halve the
side with a stride of 2 (16, 32 and 64 channels, biases, ReLU) in place of pooling, then a ``Linear`` over
the flattened 64×4×4 maps to 10 classes. No batch norm: the strided convolutions' gradients alone.

Written on 28 Nov 2026 for the fifth out-of-sample batch; fixed, and committed, before it was first
measured.

    crossover predict --model experiments/zoo_fifth/strided_cnn.py:model --input-shape 1,28,28 --batch-size 1,8,64 --workload train
"""

from torch import nn

#: One sample: a 1×28×28 image (the batch dimension is added).
INPUT_SHAPE = (1, 28, 28)
#: The steps measured: the forward pass and a training step (SGD).
WORKLOADS = ("forward", "train")


def model() -> nn.Module:
    """conv(1→16, /2) · conv(16→32, /2) · conv(32→64, /2) · Linear(1024→10), ReLUs between."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                         nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(), nn.Flatten(), nn.Linear(64 * 4 * 4, 10))
