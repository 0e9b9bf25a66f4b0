"""A bag-of-words text classifier: ``nn.EmbeddingBag`` (5,000 words × 64, mean pooling) over 20 token ids
per sample, then a ``Linear`` to 4 classes.

A kind of model the calibration's reference models do not cover: its main op gathers rows of a table
(memory access, no matrix product) and its input is integer ids. Added for the transfer checks of the
CPU issue (#27); fixed before it was first measured.

    crossover predict --model experiments/zoo/embedding_bag.py:model --input-shape 20 --input-dtype long --batch-size 1,8,64,512
"""

from torch import nn

#: One sample: 20 token ids (the batch dimension is added), of dtype :data:`INPUT_DTYPE`.
INPUT_SHAPE = (20,)
INPUT_DTYPE = "long"


class BagClassifier(nn.Module):
    """``EmbeddingBag(5000, 64, mode="mean")`` then ``Linear(64 → 4)``."""

    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(5000, 64, mode="mean")
        self.head = nn.Linear(64, 4)

    def forward(self, ids):
        return self.head(self.bag(ids))


def model() -> nn.Module:
    """A fresh :class:`BagClassifier`."""
    return BagClassifier()
