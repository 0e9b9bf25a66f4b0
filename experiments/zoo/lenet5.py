"""A LeNet-5-style CNN on one 1×28×28 MNIST image.

conv 5×5 (1→6, padding 2) → ReLU → max-pool 2 → conv 5×5 (6→16) → ReLU → max-pool 2 → flatten
(16·5·5 = 400) → 120 → 84 → 10, ReLUs between the linear layers (LeCun et al. 1998, with ReLU and
max-pooling as it is usually written today).

    crossover predict --model experiments/zoo/lenet5.py:model --input-shape 1,28,28 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample's shape (the batch dimension is added).
INPUT_SHAPE = (1, 28, 28)


def model() -> nn.Module:
    """LeNet-5 with ReLU and max-pooling, for 1×28×28 inputs and 10 classes."""
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10),
    )
