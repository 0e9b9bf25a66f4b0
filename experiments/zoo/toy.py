"""The project's own toy model, as a zoo entry: :class:`crossover.measurement.toy_model.ResidualMLP` with d_model 256
and 8 residual blocks (2 MiB of float32 weights: on the 2-core VM just within the 2 MiB of private L2
of its two threads, so costed warm).

Each block is ``x + relu(x @ W.T)`` with a bias-free ``Linear``.

    crossover predict --model experiments/zoo/toy.py:model --input-shape 256 --batch-size 1,8,64,512
"""

from crossover.measurement.toy_model import ResidualMLP

#: One sample's shape (the batch dimension is added).
INPUT_SHAPE = (256,)

D_MODEL = 256
N_LAYERS = 8


def model():
    """``ResidualMLP(d_model=256, n_layers=8)``."""
    return ResidualMLP(D_MODEL, N_LAYERS)
