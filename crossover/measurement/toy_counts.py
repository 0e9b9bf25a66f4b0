"""The toy model's exact cost counts: closed forms in ``(d_model, n_layers, batch_size)``, without torch.

The model itself is :class:`crossover.measurement.toy_model.ResidualMLP` (which re-exports these
counts); they live apart from it so that fitting and predicting (:mod:`crossover.fit.latency_models`)
do not import torch (about 0.8 s). Tests check the FLOP counts against
``torch.utils.flop_counter.FlopCounterMode``.

What is counted
---------------
FLOPs count the matrix products only, two per multiply-add, exactly as ``FlopCounterMode`` does:
the ReLU and the residual add (``batch_size * d_model`` each per layer) are *not* counted.
Bytes count the ideal traffic of one step: every weight read once, and per layer the activation reads
and writes of the three ops (linear: read x, write y; relu: read y, write y; add: read x and y, write
the output), i.e. ``7 * batch_size * d_model`` elements per layer.
"""

from __future__ import annotations

from ..axes import WORKLOADS

__all__ = ["param_count", "forward_flops", "train_flops", "step_flops", "step_bytes", "work_per_step",
           "ACTIVATION_ACCESSES_PER_LAYER"]


#: Activation elements read or written per layer per sample (see the module docstring).
ACTIVATION_ACCESSES_PER_LAYER = 7


def _check_positive(**sizes: int) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def param_count(d_model: int, n_layers: int) -> int:
    """Exact number of parameters: ``n_layers * d_model**2``.

    Examples
    --------
    >>> param_count(128, 128)
    2097152
    """
    _check_positive(d_model=d_model, n_layers=n_layers)
    return n_layers * d_model**2


def work_per_step(d_model, n_layers, batch_size, workload: str = "forward") -> tuple:
    """FLOPs, weight element accesses and activation element accesses of one step.

    The closed forms every count of this package derives from (the other functions here check their
    arguments and call it; :mod:`crossover.fit.latency_models` calls it on arrays). Unchecked: Python
    ints give exact ints, numpy arrays or floats give floats (continuous sizes, vectorised).

    Parameters
    ----------
    d_model, n_layers, batch_size : int, float or array
        The sizes.
    workload : {"forward", "train"}
        Forward: ``2 B d² L`` FLOPs, every weight read once (``L d²`` elements) and
        ``7 B d`` activation accesses per layer. Train: forward plus the backward matmuls
        (``2 B d² (3 L - 1)`` FLOPs, see :func:`train_flops`); about three times the forward traffic
        plus the optimizer's read-modify-write of weights and gradients (``3 L d²``): ``6 L d²``
        weight and ``3 · 7 B d L`` activation accesses.

    Returns
    -------
    (flops, weight_elements, activation_elements)

    Examples
    --------
    >>> work_per_step(128, 2, 1)
    (65536, 32768, 1792)
    """
    weights = n_layers * d_model * d_model
    activations = ACTIVATION_ACCESSES_PER_LAYER * batch_size * d_model * n_layers
    if workload == "forward":
        return 2 * batch_size * d_model * d_model * n_layers, weights, activations
    if workload == "train":
        return 2 * batch_size * d_model * d_model * (3 * n_layers - 1), 6 * weights, 3 * activations
    raise ValueError(f"unknown workload {workload!r}; expected one of {WORKLOADS}")


def forward_flops(d_model: int, n_layers: int, batch_size: int) -> int:
    """FLOPs of one forward pass: ``2 * batch_size * d_model**2 * n_layers`` (matmuls only)."""
    return step_flops(d_model, n_layers, batch_size, "forward")


def train_flops(d_model: int, n_layers: int, batch_size: int) -> int:
    """FLOPs of one training step's matmuls: forward, plus backward for weights and activations.

    The backward pass computes a weight gradient for every layer (``2 B d²`` each) and an input
    gradient for every layer but the first (the input needs no gradient), hence
    ``2 * batch_size * d_model**2 * (3 * n_layers - 1)``. The loss and the optimizer update are
    elementwise and, like ReLU, not counted by ``FlopCounterMode``.
    """
    return step_flops(d_model, n_layers, batch_size, "train")


def step_flops(d_model: int, n_layers: int, batch_size: int, workload: str = "forward") -> int:
    """FLOPs of one step of ``workload`` (``"forward"`` or ``"train"``), see :func:`work_per_step`."""
    _check_positive(d_model=d_model, n_layers=n_layers, batch_size=batch_size)
    return work_per_step(d_model, n_layers, batch_size, workload)[0]


def step_bytes(
    d_model: int,
    n_layers: int,
    batch_size: int,
    *,
    bytes_per_element: int = 4,
    workload: str = "forward",
) -> int:
    """Ideal memory traffic of one step in bytes (weight and activation accesses of
    :func:`work_per_step` times ``bytes_per_element``, see :data:`crossover.axes.BYTES_PER_ELEMENT`).

    Forward: every weight read once plus ``7 * batch_size * d_model`` activation accesses per layer.
    Train: about three times the forward traffic (forward, backward for activations and weights) plus
    the optimizer's read-modify-write of weights and gradients (``3 * params`` elements).
    """
    _check_positive(d_model=d_model, n_layers=n_layers, batch_size=batch_size)
    _, weights, activations = work_per_step(d_model, n_layers, batch_size, workload)
    return (weights + activations) * bytes_per_element
