"""A two-layer bidirectional LSTM over 32 embedded token ids (3,000 words × 48), hidden 96 each way, the mean
over time, a ``Linear`` to 8 classes.

Written for the third out-of-sample check of the own-model method (#27), after every change the second
batch (``experiments/zoo_unseen``) led to; fixed before it was first measured.

    crossover predict --model experiments/zoo_third/bilstm_tagger.py:model --input-shape 32 --input-dtype long --batch-size 1,8,64,512
"""

from torch import nn

#: One sample: 32 token ids (the batch dimension is added), of dtype :data:`INPUT_DTYPE`.
INPUT_SHAPE = (32,)
INPUT_DTYPE = "long"


class BiLstmTagger(nn.Module):
    """``Embedding(3000, 48)`` → ``LSTM(48, 96, 2 layers, bidirectional)`` → mean over time → ``Linear(192 → 8)``."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(3000, 48)
        self.lstm = nn.LSTM(48, 96, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(192, 8)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out.mean(dim=1))


def model() -> nn.Module:
    """A fresh :class:`BiLstmTagger`."""
    return BiLstmTagger()
