"""A two-layer LSTM forecaster over 48 time steps of 8 sensor readings, hidden 32, a ``Linear`` to 3
horizons from the last step.

Written on 28 Nov 2026 for the sixth out-of-sample batch (LSTM training steps on a CPU); fixed, and
committed, before it was first measured.

    crossover predict --model experiments/zoo_sixth/lstm_forecaster.py:model --input-shape 48,8 --batch-size 1,8,64 --workload train
"""

from torch import nn

#: One sample: 48 time steps × 8 readings (the batch dimension is added).
INPUT_SHAPE = (48, 8)
#: Measured forward and as a training step.
WORKLOADS = ("forward", "train")


class LstmForecaster(nn.Module):
    """``LSTM(8, 32, 2 layers)`` → the last step → ``Linear(32 → 3)``."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def model() -> nn.Module:
    """The forecaster, freshly initialised."""
    return LstmForecaster()
