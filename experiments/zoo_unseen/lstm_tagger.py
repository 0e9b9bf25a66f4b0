"""A sequence classifier: ``nn.Embedding`` (2,000 words × 32) over 24 token ids, one ``nn.LSTM`` layer of
64 hidden units, and a ``Linear`` to 5 classes from the last step's output.

An LSTM: when it was written the calibration timed GRU primitives only. Written for the out-of-sample check of the
own-model method (#27); fixed before it was first measured.

    crossover predict --model experiments/zoo_unseen/lstm_tagger.py:model --input-shape 24 --input-dtype long --batch-size 1,8,64,512
"""

from torch import nn

#: One sample: 24 token ids (the batch dimension is added), of dtype :data:`INPUT_DTYPE`.
INPUT_SHAPE = (24,)
INPUT_DTYPE = "long"


class LstmTagger(nn.Module):
    """``Embedding(2000, 32)`` → ``LSTM(32, 64)`` → the last step → ``Linear(64 → 5)``."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(2000, 32)
        self.lstm = nn.LSTM(32, 64, batch_first=True)
        self.head = nn.Linear(64, 5)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out[:, -1])


def model() -> nn.Module:
    """A fresh :class:`LstmTagger`."""
    return LstmTagger()
