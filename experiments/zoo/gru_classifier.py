"""A recurrent sequence classifier: one ``nn.GRU`` (32 features in, 64 hidden) over 50 time steps, then a
``Linear`` from the last step's state to 10 classes.

A kind of model the calibration's reference models (an MLP and a small CNN) do not cover: each time
step runs a handful of small matrix products and gates on the previous step's state, so the step is
a long chain of tiny dependent ops. Added to the zoo for the transfer checks of the CPU issue (#27);
fixed before it was first measured.

    crossover predict --model experiments/zoo/gru_classifier.py:model --input-shape 50,32 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample: 50 time steps of 32 features (batch first; the batch dimension is added).
INPUT_SHAPE = (50, 32)


class GRUClassifier(nn.Module):
    """``GRU(32 → 64)`` over the sequence, ``Linear(64 → 10)`` on the last step's output."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


def model() -> nn.Module:
    """A fresh :class:`GRUClassifier`."""
    return GRUClassifier()
