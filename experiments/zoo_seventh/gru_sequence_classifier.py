"""A GRU sequence classifier over 30 time steps of 12 features, hidden 48, a ``Linear`` to 6 classes from
the last step.

Written on 28 Nov 2026 for the seventh out-of-sample batch (GRU training steps on a CPU); fixed, and
committed, before it was first measured.

    crossover predict --model experiments/zoo_seventh/gru_sequence_classifier.py:model --input-shape 30,12 --batch-size 1,8,64 --workload train
"""

from torch import nn

#: One sample: 30 time steps × 12 features (the batch dimension is added).
INPUT_SHAPE = (30, 12)
#: Measured forward and as a training step.
WORKLOADS = ("forward", "train")


class GruSequenceClassifier(nn.Module):
    """``GRU(12, 48)`` → the last step → ``Linear(48 → 6)``."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(12, 48, batch_first=True)
        self.head = nn.Linear(48, 6)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


def model() -> nn.Module:
    """The classifier, freshly initialised."""
    return GruSequenceClassifier()
