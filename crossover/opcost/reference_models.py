"""The generic reference models whose whole steps calibrate how ops compose into a step (none of the zoo's).

Their forward and training steps are timed in the calibration's rounds beside the primitives, and
:mod:`crossover.opcost.composition` fits the composition terms to what the primitives leave unexplained
on the plain MLP, the small CNN and a CNN of convolution-batch-norm-ReLU units, one strided, with global
average pooling (the unit most CNNs are built of; its training step runs batch norm in training mode and a
strided convolution's input gradient), and predicts the other two kinds with them, unseen, for the
interval a new model's prediction gets: a deep narrow MLP (many small layers: a step of host work, ten
parameters for the optimizer) and an MLP with a layer norm and a GELU (the row-wise and activation ops a
modern block runs). Each is timed at one sample and at a batch, forward and training step.
"""

from __future__ import annotations

__all__ = ["REFERENCE_MODELS", "reference_model"]

#: Reference model name -> one sample's shape. See :func:`reference_model`.
REFERENCE_MODELS = {"mlp": (512,), "cnn": (3, 32, 32), "deep_mlp": (256,), "norm_mlp": (128,), "bn_cnn": (3, 32, 32)}


def reference_model(name: str):
    """A fresh reference model (seeded weights).

    ``"mlp"``: 512 → 256 → 256 → 10 with ReLUs. ``"cnn"``: two 3×3 convolutions of 8 and 16 channels with
    ReLU and 2×2 max-pooling, then a linear layer to 10. ``"deep_mlp"``: 256 → 64, four more 64 → 64 layers,
    → 10, ReLUs between. ``"norm_mlp"``: 128 → 256, ``LayerNorm``, GELU, → 10. ``"bn_cnn"``: the
    convolution-batch-norm-ReLU unit most CNNs are built of, twice (3 → 16 channels, then 16 → 32 at stride
    2, no biases), global average pooling and a linear layer to 10: memory-bound ops that read what a
    convolution just wrote, over activations of up to 1 MiB at batch 16.
    """
    import torch
    from torch import nn

    torch.manual_seed(0)
    if name == "mlp":
        return nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
                             nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 8 * 8, 10))
    if name == "deep_mlp":
        hidden = [layer for _ in range(4) for layer in (nn.Linear(64, 64), nn.ReLU())]
        return nn.Sequential(nn.Linear(256, 64), nn.ReLU(), *hidden, nn.Linear(64, 10))
    if name == "norm_mlp":
        return nn.Sequential(nn.Linear(128, 256), nn.LayerNorm(256), nn.GELU(), nn.Linear(256, 10))
    if name == "bn_cnn":
        return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                             nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    raise ValueError(f"unknown reference model {name!r}; expected one of {', '.join(REFERENCE_MODELS)}")
