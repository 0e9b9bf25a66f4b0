"""A temporal convolutional network over an 8-channel series of 256 steps: three 1-D convolutions of
32 channels with dilations 1, 2 and 4, ReLUs, average pooling over time, a ``Linear`` to 6 classes.

Dilated convolutions: the calibration's 1-D convolutions are not dilated. Written for the
out-of-sample check of the own-model method (#27); fixed before it was first measured.

    crossover predict --model experiments/zoo_unseen/dilated_tcn.py:model --input-shape 8,256 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample's shape: channels × time steps (the batch dimension is added).
INPUT_SHAPE = (8, 256)


def model() -> nn.Module:
    """Conv1d 8→32 (dilation 1) → 32→32 (2) → 32→32 (4), kernel 3, same length; pool; 32 → 6."""
    return nn.Sequential(
        nn.Conv1d(8, 32, 3, padding=1), nn.ReLU(),
        nn.Conv1d(32, 32, 3, padding=2, dilation=2), nn.ReLU(),
        nn.Conv1d(32, 32, 3, padding=4, dilation=4), nn.ReLU(),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 6),
    )
