"""A text classifier: 40 token ids embedded (5,000 words × 64), one LSTM of hidden 128, the mean over time,
a ``Linear`` to 5 classes.

Written on 28 Nov 2026 for the sixth out-of-sample batch (LSTM training steps on a CPU); fixed, and
committed, before it was first measured.

    crossover predict --model experiments/zoo_sixth/lstm_text_classifier.py:model --input-shape 40 --input-dtype long --batch-size 1,8,64 --workload train
"""

from torch import nn

#: One sample: 40 token ids (the batch dimension is added), of dtype :data:`INPUT_DTYPE`.
INPUT_SHAPE = (40,)
INPUT_DTYPE = "long"
#: Measured forward and as a training step.
WORKLOADS = ("forward", "train")


class LstmTextClassifier(nn.Module):
    """``Embedding(5000, 64)`` → ``LSTM(64, 128)`` → mean over time → ``Linear(128 → 5)``."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5000, 64)
        self.lstm = nn.LSTM(64, 128, batch_first=True)
        self.head = nn.Linear(128, 5)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out.mean(dim=1))


def model() -> nn.Module:
    """The classifier, freshly initialised."""
    return LstmTextClassifier()
