"""Self-attention over 16 tokens of width 64 (``nn.MultiheadAttention``, 4 heads, its weights not
returned), a residual add and a ``LayerNorm``, the mean over tokens, a ``Linear`` to 10 classes.

Attention on its own, outside an encoder layer, with a pooling head; its training step too. Written
for the out-of-sample check of the own-model method (#27); fixed before it was first measured.

    crossover predict --model experiments/zoo_unseen/attention_pool.py:model --input-shape 16,64 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample's shape: tokens × width (the batch dimension is added).
INPUT_SHAPE = (16, 64)
#: The steps measured of it: the forward pass and a training step (SGD).
WORKLOADS = ("forward", "train")


class AttentionPool(nn.Module):
    """``x + MultiheadAttention(x, x, x)`` → ``LayerNorm`` → mean over tokens → ``Linear(64 → 10)``."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(64, 4, batch_first=True)
        self.norm = nn.LayerNorm(64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        attended, _ = self.attention(x, x, x, need_weights=False)
        return self.head(self.norm(x + attended).mean(dim=1))


def model() -> nn.Module:
    """A fresh :class:`AttentionPool`."""
    return AttentionPool()
