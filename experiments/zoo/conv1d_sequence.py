"""A 1-D CNN over sequences: two ``Conv1d`` layers (8 → 32 → 64 channels, kernel 5) with ReLU, max-pooling
over time, then a ``Linear`` to 10 classes; one sample is 8 channels of 256 steps (a sensor window).

A kind of model the calibration's reference models do not cover (convolutions over one dimension,
long sequences, global pooling). Added for the transfer checks of the CPU issue (#27); fixed before it
was first measured.

    crossover predict --model experiments/zoo/conv1d_sequence.py:model --input-shape 8,256 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample: 8 channels of 256 time steps (the batch dimension is added).
INPUT_SHAPE = (8, 256)


def model() -> nn.Module:
    """Conv1d(8→32, 5) · ReLU · MaxPool1d(2) · Conv1d(32→64, 5) · ReLU · global max-pool · Linear(64→10)."""
    return nn.Sequential(nn.Conv1d(8, 32, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                         nn.Conv1d(32, 64, 5, padding=2), nn.ReLU(), nn.AdaptiveMaxPool1d(1),
                         nn.Flatten(), nn.Linear(64, 10))
