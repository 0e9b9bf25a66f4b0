"""A small convolutional autoencoder on one 1×28×28 image: two stride-2 convolutions down to 16×7×7,
two stride-2 transposed convolutions back up, a sigmoid on the output.

Transposed convolutions: neither the calibration nor the zoo has one. The training step regresses the
output on a random image (mean squared error). Written for the out-of-sample check of the own-model
method (#27); fixed before it was first measured.

    crossover predict --model experiments/zoo_unseen/conv_autoencoder.py:model --input-shape 1,28,28 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample's shape (the batch dimension is added).
INPUT_SHAPE = (1, 28, 28)
#: The steps measured of it: the forward pass and a training step (SGD).
WORKLOADS = ("forward", "train")


def model() -> nn.Module:
    """1×28×28 → 8×14×14 → 16×7×7 → 8×14×14 → 1×28×28, ReLUs between, a sigmoid last."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.ConvTranspose2d(16, 8, 2, stride=2), nn.ReLU(),
        nn.ConvTranspose2d(8, 1, 2, stride=2), nn.Sigmoid(),
    )
