"""One Transformer encoder layer: ``nn.TransformerEncoderLayer(d_model=256, nhead=4, batch_first=True)``.

PyTorch's defaults otherwise: feed-forward width 2048, ReLU, dropout 0.1 (active in a training step,
off in a forward pass, which runs the model in ``eval()`` mode), post-norm. One sample is a sequence
of 64 tokens of width 256.

    crossover predict --model experiments/zoo/transformer_layer.py:model --input-shape 64,256 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample's shape: 64 tokens of width 256 (the batch dimension is added; batch first).
INPUT_SHAPE = (64, 256)


def model() -> nn.Module:
    """``TransformerEncoderLayer(d_model=256, nhead=4, batch_first=True)``."""
    return nn.TransformerEncoderLayer(d_model=256, nhead=4, batch_first=True)
