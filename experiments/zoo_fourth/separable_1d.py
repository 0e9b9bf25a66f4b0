"""A keyword-spotting-style 1-D network over 40 mel features × 100 frames: three blocks of a depthwise
1-D convolution (kernel 9, ``groups`` = channels) and a pointwise one, each followed by batch norm and
ReLU, global average pooling over time and a ``Linear`` to 12 keywords.

Written on 28 Nov 2026 for the fourth out-of-sample batch; fixed, and committed, before it was first
measured.

    crossover predict --model experiments/zoo_fourth/separable_1d.py:model --input-shape 40,100 --batch-size 1,8,64,512
"""

from torch import nn

#: One sample: 40 mel features × 100 frames (the batch dimension is added).
INPUT_SHAPE = (40, 100)


def _block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv1d(c_in, c_in, 9, padding=4, groups=c_in, bias=False),
                         nn.Conv1d(c_in, c_out, 1, bias=False), nn.BatchNorm1d(c_out), nn.ReLU())


def model() -> nn.Module:
    """block(40→64) · block(64→64) · block(64→128) · mean over time · Linear(128→12)."""
    return nn.Sequential(_block(40, 64), _block(64, 64), _block(64, 128), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                         nn.Linear(128, 12))
