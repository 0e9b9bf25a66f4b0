"""The MNIST MLP people ask about: 784 → 128 → 10, with biases and a ReLU.

The input is one MNIST image, ``1 × 28 × 28`` (as a ``DataLoader`` of MNIST yields it), flattened by
``nn.Flatten`` (a view: it costs nothing). Two ``Linear`` layers with biases (``addmm`` each).

    crossover predict --model experiments/zoo/mnist_mlp.py:model --input-shape 1,28,28 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample's shape (the batch dimension is added).
INPUT_SHAPE = (1, 28, 28)
#: The steps the zoo measures of it: the forward pass and a training step (SGD).
WORKLOADS = ("forward", "train")


def model() -> nn.Module:
    """784 → 128 → 10 with biases and a ReLU, on a flattened 1×28×28 image."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
