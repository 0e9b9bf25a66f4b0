"""Recurrent layers' calibration steps, and a CPU training step's LSTM and GRU layers costed from primitives.

PyTorch runs a float CPU LSTM through oneDNN's RNN layer: ``mkldnn_rnn_layer`` once per layer and direction,
and in a training step ``mkldnn_rnn_layer_backward`` for each; a GRU through its C++ loop, whose every time
step's products and gates a trace records, forward and backward. A forward pass's trace replaces a recurrent
module's ops by one fused row (:func:`crossover.opcost.gpu_ops.fused_recurrent_row`). A training step's rows
were costed one by one: the LSTM's two ops on the generic model (FLOPs the flop counter does not count, bytes at
peak bandwidth), a GRU's hundreds of ops each with its dispatch. On the Intel VM that read the three LSTM models
of ``experiments/zoo_sixth`` 75-94% under and the two GRU models of ``experiments/zoo_seventh`` 46-100% over
(``experiments/results/intel-xeon-2c/logs/bench_zoo_{sixth,seventh}_1128a_before_t*.log``).

The calibration times each LSTM and GRU shape of the plan (``cpu_lstm_shapes``, ``cpu_rnn_shapes``) as a
training step of the layer alone (:func:`train_step`, families :data:`LSTM_TRAIN` and :data:`GRU_TRAIN`):
train mode, the forward pass with autograd, ``backward`` of a fixed output gradient, the weights' gradients
set to None first as ``zero_grad`` leaves them. :func:`fit_lstm_backward` and :func:`fit_gru_backward` fit
backward terms of the forward terms' form (:func:`crossover.opcost.gpu_ops.fit_cpu_recurrent`) on what each
primitive takes beyond its module call, the backward pass's start and its forward call.
:func:`recurrent_train_cost` costs a traced LSTM row from its shapes; for a GRU, the trace attributes the
backward ops of a recurrent module's autograd nodes to it (:mod:`crossover.opcost.trace`) and
:func:`train_records` replaces its forward and backward ops by two calls.

On a GPU a training step's recurrent layers are cuDNN's calls: the forward one as a forward pass costs it, the
backward one estimated from it (no primitive times it; the prediction warns). Not covered: ``nn.RNN`` on a CPU
(its C++ loop's ops stay costed one by one).
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional

from .gpu_ops import (CPU_LSTM_CALL, CPU_LSTM_TERMS, LSTM_FIT, cpu_recurrent_seconds, fit_cpu_recurrent,
                      fused_recurrent_row, recurrent_cost)
from .trace import op_name

__all__ = ["LSTM_TRAIN", "LSTM_BACKWARD_TERMS", "LSTM_BACKWARD_CALL", "LSTM_LAYER_OPS", "GRU_TRAIN",
           "GRU_BACKWARD_TERMS", "GRU_BACKWARD_CALL", "RECURRENT_TRAIN", "RNN_BACKWARD_OP", "GPU_BACKWARD_PER_FORWARD",
           "GPU_BACKWARD_WARNING", "recurrent_step", "train_step", "fit_lstm_backward", "gpu_records",
           "fit_gru_backward", "fit_recurrent_terms", "train_records", "costs_recurrent_training",
           "recurrent_train_cost"]

#: The calibration family of the LSTM training-step primitives (CPU only).
LSTM_TRAIN = "lstm_train"
#: The backward call's terms: a fixed cost per time step, per gate element, per FLOP and per weight element.
LSTM_BACKWARD_TERMS = ("lstm_backward_step_s", "lstm_backward_gate_element_s", "lstm_backward_flop_s",
                       "lstm_backward_weight_element_s")
#: The backward call's fixed cost beyond its steps.
LSTM_BACKWARD_CALL = "lstm_backward_call_s"
#: The ATen ops of oneDNN's LSTM layer, forward and backward.
LSTM_LAYER_OPS = ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward")
#: The calibration family of the GRU training-step primitives (CPU only), and the backward terms fitted on them.
GRU_TRAIN = "gru_train"
GRU_BACKWARD_TERMS = ("gru_backward_step_s", "gru_backward_gate_element_s", "gru_backward_flop_s",
                      "gru_backward_weight_element_s")
GRU_BACKWARD_CALL = "gru_backward_call_s"
#: A GPU's recurrent backward pass costed as this many times its forward call's kernels (no primitive times
#: cuDNN's backward; its gradients of the input and of the weights each take the forward's FLOPs), and its warning.
GPU_BACKWARD_PER_FORWARD = 2.0
GPU_BACKWARD_WARNING = ("cuDNN's recurrent backward pass is not calibrated: costed as twice its forward call's "
                        "kernels (the gradients of the input and of the weights, each the forward's FLOPs)")
#: The training-step primitive families.
RECURRENT_TRAIN = (LSTM_TRAIN, GRU_TRAIN)
#: The op of the one row that stands for a recurrent layer's whole backward pass in a training step (a CPU's
#: GRU, a GPU's every kind: :func:`train_records`).
RNN_BACKWARD_OP = "aten._rnn_backward.default"


def recurrent_step(family: str, name: str, shape: tuple, device: str = "cpu") -> Callable[[], object]:
    """The step of a recurrent primitive: family ``rnn``, one forward call of ``nn.GRU`` or ``nn.LSTM``
    (``name`` ``gru``, ``lstm``; hidden = input width) without autograd (cuDNN's fused call on a GPU, the C++
    loop or oneDNN's layer on a CPU); families :data:`RECURRENT_TRAIN`, :func:`train_step`. ``shape`` is
    (batch, time steps, hidden)."""
    import torch

    if family in RECURRENT_TRAIN:
        return train_step("lstm" if family == LSTM_TRAIN else "gru", shape, device)
    batch, steps, hidden = shape
    # in eval mode, as a forward prediction's model runs (make_module_step): in train mode cuDNN runs its
    # training forward (a reserve of activations for the backward pass), not the inference one; on a
    # CPU the mode only switches dropout between layers, none here
    layer = torch.nn.LSTM if name == "lstm" else torch.nn.GRU
    rnn = layer(hidden, hidden, batch_first=True).to(device).eval()
    x = torch.randn(batch, steps, hidden, device=device)

    def recurrent():
        with torch.no_grad():
            return rnn(x)

    return recurrent


def train_step(name: str, shape: tuple, device: str = "cpu") -> Callable[[], object]:
    """One training step of ``nn.LSTM`` (``name`` ``"lstm"``) or ``nn.GRU`` (``"gru"``) of hidden = input width,
    ``batch_first``, alone over ``shape`` = (batch, time steps, hidden): gradients set to None, the forward
    pass, ``backward`` of a fixed output gradient."""
    import torch

    batch, steps, hidden = shape
    torch.manual_seed(0)
    layer = torch.nn.LSTM if name == "lstm" else torch.nn.GRU
    rnn = layer(hidden, hidden, batch_first=True).to(device).train()
    x = torch.randn(batch, steps, hidden, device=device)
    grad = torch.randn(batch, steps, hidden, device=device)
    params = list(rnn.parameters())

    def step():
        for p in params:
            p.grad = None
        out, _ = rnn(x)
        out.backward(grad)
        return out

    return step


def fit_lstm_backward(items, overheads: Mapping) -> dict:
    """:data:`LSTM_BACKWARD_TERMS` and :data:`LSTM_BACKWARD_CALL` from the :data:`LSTM_TRAIN` primitives (pure).

    Parameters
    ----------
    items : sequence of (seconds, spread, row)
        The primitives as the calibration keeps them; ``row["shape"]`` is ``"batchxstepsxhidden"``.
    overheads : mapping
        The profile's fitted overheads, the LSTM's forward terms among them.

    Returns
    -------
    dict
        The terms (:func:`crossover.opcost.gpu_ops.fit_cpu_recurrent` on each primitive's time less its module
        call, ``backward_call_s`` and its forward call); ``{}`` without the forward terms or with too few primitives.
    """
    if not items or not all(t in overheads for t in CPU_LSTM_TERMS):
        return {}
    cells = []
    for seconds, _, row in items:
        batch, steps, hidden = (int(v) for v in str(row["shape"]).split("x"))
        forward = cpu_recurrent_seconds(overheads, batch, steps, hidden, hidden, 4, CPU_LSTM_TERMS, CPU_LSTM_CALL)
        rest = seconds - overheads.get("module_call_s", 0.0) - overheads.get("backward_call_s", 0.0) - forward
        cells.append((batch, steps, hidden, rest))
    return fit_cpu_recurrent(cells, gates=4, terms=LSTM_BACKWARD_TERMS, call=LSTM_BACKWARD_CALL)


def fit_gru_backward(items, forward_cells, overheads: Mapping) -> dict:
    """:data:`GRU_BACKWARD_TERMS` and :data:`GRU_BACKWARD_CALL` from the :data:`GRU_TRAIN` primitives (pure): each
    primitive's time less its module call, ``backward_call_s`` and the forward primitive of its shape as
    measured (``forward_cells``: (batch, steps, hidden, seconds less the module call), as the GRU's forward
    terms are fitted on them; a model's forward call is costed near them: the residual grid). ``{}`` with too
    few primitives."""
    forward = {(b, t, h): seconds for b, t, h, seconds in forward_cells}
    cells = []
    for seconds, _, row in items:
        shape = tuple(int(v) for v in str(row["shape"]).split("x"))
        if shape in forward:
            cells.append((*shape, seconds - overheads.get("module_call_s", 0.0)
                          - overheads.get("backward_call_s", 0.0) - forward[shape]))
    return fit_cpu_recurrent(cells, gates=3, terms=GRU_BACKWARD_TERMS, call=GRU_BACKWARD_CALL)


def fit_recurrent_terms(gru_cells, lstm_cells, families: Mapping, overheads: Mapping) -> dict:
    """A CPU calibration's recurrent terms (pure): the GRU loop's and the LSTM's forward ones
    (:func:`crossover.opcost.gpu_ops.fit_cpu_recurrent` on ``gru_cells`` and ``lstm_cells``) and their backward
    ones (:func:`fit_lstm_backward`, :func:`fit_gru_backward` on ``families``' training-step primitives)."""
    terms = {**fit_cpu_recurrent(gru_cells), **fit_cpu_recurrent(lstm_cells, **LSTM_FIT)}
    return {**terms, **fit_lstm_backward(families.get(LSTM_TRAIN, []), {**overheads, **terms}),
            **fit_gru_backward(families.get(GRU_TRAIN, []), gru_cells, overheads)}


def costs_recurrent_training(profile) -> bool:
    """Whether ``profile`` costs a recurrent layer's training step as calls (:func:`train_records`): a GPU's
    (cuDNN runs each layer whole, forward and backward), a CPU's with the GRU's forward and backward terms."""
    from .gpu_ops import CPU_RNN_TERMS

    return profile.device == "cuda" or (profile.device == "cpu" and all(
        t in profile.overheads for t in (*CPU_RNN_TERMS, *GRU_BACKWARD_TERMS)))


def gpu_records(records, model, batch_size: int) -> list:
    """The trace with each recurrent module's per-time-step ops (PyTorch's CPU path, which the trace
    records) replaced by one fused call (:func:`crossover.opcost.gpu_ops.fused_recurrent_row`): what a GPU
    runs (cuDNN), and how a CPU profile with a recurrent primitive costs the layer (its C++ loop, whole)."""
    from torch import nn

    return _with_recurrent_calls(records, model, batch_size, nn.RNNBase, backward=False)


def train_records(records, model, batch_size: int, device: str = "cpu") -> list:
    """A training step's trace with recurrent modules' ops (the forward pass's, and the backward ops the trace
    attributes to them) replaced by two rows each: the forward call
    (:func:`crossover.opcost.gpu_ops.fused_recurrent_row`) and :data:`RNN_BACKWARD_OP`, its backward pass
    (none where nothing of it needs a gradient). On a CPU only an ``nn.GRU``'s (an LSTM's ops stay as they
    are: oneDNN's layer is one op each way, :func:`recurrent_train_cost`); on a GPU every recurrent
    module's (cuDNN's calls)."""
    from torch import nn

    return _with_recurrent_calls(records, model, batch_size, nn.GRU if device == "cpu" else nn.RNNBase, backward=True)


def _with_recurrent_calls(records, model, batch_size: int, kind, *, backward: bool) -> list:
    out = list(records)
    for path, module in model.named_modules():
        own = [i for i, r in enumerate(out) if r.get("module") == path and r.get("phase", "forward") == "forward"]
        if not isinstance(module, kind) or not own or own[-1] - own[0] + 1 != len(own):
            continue  # called more than once (its forward rows apart, as a decoder's): its ops stay one by one
        fused = fused_recurrent_row(out, module, path, batch_size)
        # its backward call writes the gradients, not the forward's outputs (no fresh pages counted twice)
        calls = {"forward": fused, "backward": dict(fused, op=RNN_BACKWARD_OP, kind="other", phase="backward",
                                                    launches=1, output_shapes=(), bytes_written=0,
                                                    rnn=dict(fused["rnn"], backward=True))}
        replaced, placed = [], set()
        for row in out:
            phase = row.get("phase", "forward")
            if row.get("module") == path and (phase == "forward" or (backward and phase == "backward")):
                if phase not in placed:  # the call stands where the layer's first op of the phase stood
                    replaced.append(calls[phase])
                    placed.add(phase)
                continue
            replaced.append(row)
        out = replaced
    return out


def recurrent_train_cost(profile, row: Mapping, name: str) -> Optional[dict]:
    """A training step's recurrent row costed, or None (another op, or a CPU profile without the op's terms: an
    LSTM's forward row is costed on its forward terms even where a calibration from before the training
    primitives has no backward ones): on a CPU, ``mkldnn_rnn_layer`` (oneDNN's LSTM layer, forward) on the LSTM's forward terms,
    ``mkldnn_rnn_layer_backward`` on :data:`LSTM_BACKWARD_TERMS`, a GRU's :data:`RNN_BACKWARD_OP` row on
    :data:`GRU_BACKWARD_TERMS` (per layer and direction, as its forward call); on a GPU a
    :data:`RNN_BACKWARD_OP` row as :data:`GPU_BACKWARD_PER_FORWARD` times its forward call's kernels, warned.

    An LSTM row's first three inputs are the time-major input (steps, batch, width) and the input and recurrent
    weights (4 hidden × width, 4 hidden × hidden). Returns the fields of
    :class:`crossover.opcost.op_costs.OpCost` (family ``rnn``)."""
    o = profile.overheads
    if name == op_name(RNN_BACKWARD_OP) and profile.device == "cuda":  # cuDNN's, estimated from its forward call
        forward = recurrent_cost(profile, row)
        device = GPU_BACKWARD_PER_FORWARD * forward["device_s"]
        return dict(forward, device_s=device, floor_s=min(forward["floor_s"], device), warning=GPU_BACKWARD_WARNING,
                    compute_s=device - min(forward["floor_s"], device))
    if name == op_name(RNN_BACKWARD_OP):
        if profile.device != "cpu" or not all(t in o for t in GRU_BACKWARD_TERMS):
            return None
        r = row["rnn"]
        layers = [(r["input"] if layer == 0 else r["hidden"] * r["directions"]) for layer in range(r["layers"])]
        host = r["directions"] * sum(cpu_recurrent_seconds(o, r["batch"], r["steps"], width, r["hidden"], 3,
                                                           GRU_BACKWARD_TERMS, GRU_BACKWARD_CALL) for width in layers)
        floor = min(host, r["directions"] * len(layers) * (r["steps"] * o[GRU_BACKWARD_TERMS[0]]
                                                           + o.get(GRU_BACKWARD_CALL, 0.0)))
        return dict(host_s=host, device_s=0.0, floor_s=floor, launches=1, warning="", compute_s=host - floor)
    if name not in LSTM_LAYER_OPS:
        return None
    backward = name == LSTM_LAYER_OPS[1]
    terms, call = (LSTM_BACKWARD_TERMS, LSTM_BACKWARD_CALL) if backward else (CPU_LSTM_TERMS, CPU_LSTM_CALL)
    shapes = [tuple(s) for s in (row.get("input_shapes") or ())]
    if profile.device != "cpu" or not all(t in o for t in terms) or len(shapes) < 3 or len(shapes[0]) != 3:
        return None
    (steps, batch, width), hidden = shapes[0], shapes[2][1]
    host = cpu_recurrent_seconds(o, batch, steps, width, hidden, 4, terms, call)
    floor = min(host, steps * o[terms[0]] + o.get(call, 0.0))
    return dict(host_s=host, device_s=0.0, floor_s=floor, launches=int(row.get("launches", 1) or 1), warning="",
                compute_s=host - floor)

