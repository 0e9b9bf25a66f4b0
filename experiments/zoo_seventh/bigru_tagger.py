"""A token classifier: 25 token ids embedded (2,000 words × 32), a two-layer bidirectional GRU of hidden 32
each way, the mean over time, a ``Linear`` to 4 classes.

Written on 28 Nov 2026 for the seventh out-of-sample batch (GRU training steps on a CPU); fixed, and
committed, before it was first measured.

    crossover predict --model experiments/zoo_seventh/bigru_tagger.py:model --input-shape 25 --input-dtype long --batch-size 1,8,64 --workload train
"""

from torch import nn

#: One sample: 25 token ids (the batch dimension is added), of dtype :data:`INPUT_DTYPE`.
INPUT_SHAPE = (25,)
INPUT_DTYPE = "long"
#: Measured forward and as a training step.
WORKLOADS = ("forward", "train")


class BiGruTagger(nn.Module):
    """``Embedding(2000, 32)`` → ``GRU(32, 32, 2 layers, bidirectional)`` → mean over time → ``Linear(64 → 4)``."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(2000, 32)
        self.gru = nn.GRU(32, 32, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(64, 4)

    def forward(self, ids):
        out, _ = self.gru(self.embed(ids))
        return self.head(out.mean(dim=1))


def model() -> nn.Module:
    """The tagger, freshly initialised."""
    return BiGruTagger()
