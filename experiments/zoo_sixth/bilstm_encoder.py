"""A bidirectional LSTM encoder over 24 frames of 20 features, hidden 64 each way, the last frame's 128
features through a ``Linear`` to 10 classes, with dropout between.

Written on 28 Nov 2026 for the sixth out-of-sample batch (LSTM training steps on a CPU); fixed, and
committed, before it was first measured.

    crossover predict --model experiments/zoo_sixth/bilstm_encoder.py:model --input-shape 24,20 --batch-size 1,8,64 --workload train
"""

from torch import nn

#: One sample: 24 frames × 20 features (the batch dimension is added).
INPUT_SHAPE = (24, 20)
#: Measured forward and as a training step.
WORKLOADS = ("forward", "train")


class BiLstmEncoder(nn.Module):
    """``LSTM(20, 64, bidirectional)`` → the last frame → ``Dropout(0.1)`` → ``Linear(128 → 10)``."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(20, 64, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(self.drop(out[:, -1]))


def model() -> nn.Module:
    """The encoder, freshly initialised."""
    return BiLstmEncoder()
