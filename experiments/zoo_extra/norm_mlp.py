"""An MLP with LayerNorm and GELU: 256 → 512 → 512 → 10.

Written on 27 Nov 2026 to check the method away from the zoo it was made on (``experiments/zoo_extra``),
fixed before it was first measured (sittings p1 and p2: median 12-18% under, the GELU's cost among the
causes; the activation primitives were then chosen looking at these models, so later sittings are not
out of sample).

    python experiments/bench_zoo.py --plan quick --zoo experiments/zoo_extra
"""

from torch import nn

#: One sample: 256 features.
INPUT_SHAPE = (256,)
#: The forward pass and a training step (SGD).
WORKLOADS = ("forward", "train")


def model() -> nn.Module:
    """Two Linear → LayerNorm → GELU blocks of 512, then a head to 10."""
    return nn.Sequential(nn.Linear(256, 512), nn.LayerNorm(512), nn.GELU(),
                         nn.Linear(512, 512), nn.LayerNorm(512), nn.GELU(), nn.Linear(512, 10))
