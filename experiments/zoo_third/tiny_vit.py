"""A tiny vision transformer on one 3×32×32 image: 4×4 patches embedded by a stride-4 convolution (64 tokens
of 64), two ``nn.TransformerEncoderLayer`` (4 heads, feed-forward 128, GELU, batch first), the mean over
tokens, a ``Linear`` to 10 classes.

Written for the third out-of-sample check of the own-model method (#27); fixed before it was first
measured.

    crossover predict --model experiments/zoo_third/tiny_vit.py:model --input-shape 3,32,32 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample's shape (the batch dimension is added).
INPUT_SHAPE = (3, 32, 32)
#: The steps measured of it: the forward pass and a training step (SGD).
WORKLOADS = ("forward", "train")


class TinyViT(nn.Module):
    """Patch embedding ``Conv2d(3 → 64, 4, stride 4)``, two encoder layers, mean over tokens, ``Linear(64 → 10)``."""

    def __init__(self):
        super().__init__()
        self.patches = nn.Conv2d(3, 64, 4, stride=4)
        layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        tokens = self.patches(x).flatten(2).transpose(1, 2)
        return self.head(self.encoder(tokens).mean(dim=1))


def model() -> nn.Module:
    """A fresh :class:`TinyViT`."""
    return TinyViT()
