"""A wide MLP of 16 MB of weights with SiLU: 1024 → 1536 → 1536 → 10.

Written on 27 Nov 2026 to check the method away from the zoo it was made on (``experiments/zoo_extra``),
fixed before it was first measured: its products' weights (6 and 9 MiB) lie past the calibration grid's
largest (4 MiB).
"""

from torch import nn

#: One sample: 1024 features.
INPUT_SHAPE = (1024,)


def model() -> nn.Module:
    """1024 → 1536 → 1536 → 10 with SiLU between."""
    return nn.Sequential(nn.Linear(1024, 1536), nn.SiLU(), nn.Linear(1536, 1536), nn.SiLU(), nn.Linear(1536, 10))
