"""Trace one step of any ``nn.Module`` into the ATen ops it runs, without running it at full cost.

:func:`trace_module` runs one step (a forward pass, or forward + loss + backward + optimizer update)
under :class:`torch._subclasses.fake_tensor.FakeTensorMode`: every tensor is a fake one that has a
shape, dtype and device but no storage, so a 10-billion-parameter model traces in milliseconds and
allocates nothing. A :class:`~torch.utils._python_dispatch.TorchDispatchMode` records every ATen op
call, one row per call (ops as a dispatch mode sees them: after autograd and the composite
decompositions, e.g. ``Linear(bias=False)`` is ``aten.t`` + ``aten.mm``).

The user's model is not changed: its parameters and buffers are replaced by fake ones only for the
call (:func:`torch.func.functional_call`), and the module names come from global module hooks that
are removed afterwards. Parameters on the ``meta`` device are fine (they are faked onto the input's
device, or the CPU). Nothing the size of the model is allocated, with one exception: FakeTensorMode
runs an op that has no meta kernel (rare; none of the tests' models has one) for real on zero-filled
tensors. Data-dependent ops (``nonzero``, ``.item()`` on a computed tensor) cannot be traced.

Columns of the returned table
-----------------------------
``index``, ``op`` (the overload, ``"aten.addmm.default"``), ``kind`` (one of :data:`KINDS`),
``input_shapes`` and ``output_shapes`` (tuples of the tensor arguments' and results' shapes),
``flops``, ``bytes_read``, ``bytes_written``, ``launches``, ``phase`` (one of :data:`PHASES`) and
``module`` (qualified name of the innermost module running the op in the forward pass; in the backward pass a
recurrent module's for its autograd nodes' ops; else ``""``), ``args`` (what an op's shapes do not tell about its
work: a convolution's ``stride``, ``padding``, ``dilation``, ``transposed`` and ``groups``, a fused
attention op's ``heads``, the fused encoder layer's ``gelu``, a softmax's ``dim``; None for other ops), ``state_bytes`` (bytes of
its tensor arguments and results that are the model's parameters, buffers or their gradients, each
storage once: what a step holds from one step to the next, :mod:`crossover.opcost.reuse`; 0 for views).

How each count is made (heuristics, not measurements)
-----------------------------------------------------
- ``flops``: the formulas of :data:`torch.utils.flop_counter.flop_registry`, called exactly as
  ``FlopCounterMode`` calls them, so the column sums to its total. Like it, an op reaching the mode
  that has a composite decomposition is decomposed and its parts recorded instead. Ops it does not
  count (elementwise, reductions, and on the CPU even fused attention) count 0.
- ``bytes_read``/``bytes_written``: logical sizes (elements × element size) of the tensor arguments
  and results, so a broadcast (stride-0) argument counts in full and caches are ignored; 0 for views
  and for allocations (``empty*``), which move no data.
- ``launches``: 0 for views, metadata-only ops and allocations, 1 for every other op. On a GPU an op
  can launch more (cuBLAS split-K adds a reduction kernel; a ``_foreach_*`` op launches one kernel per
  chunk of tensors) or, under ``torch.compile`` or CUDA graphs, far fewer.
- ``"sgd"`` builds ``torch.optim.SGD(lr=0.01, foreach=False)``, so the update is one ``add_`` per
  parameter. An optimizer from a callable may use ``_foreach_*``/``_fused_*`` ops (kind
  ``"optimizer"``): each is one row and counts one launch.
"""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Optional

from ..errors import TraceError
from .trace_state import _ALLOCATION, drop_stolen_grad_copies, op_name, state_bytes

__all__ = ["trace_module", "trace_batches", "KINDS", "PHASES", "COLUMNS", "op_kind", "row_args", "op_name"]

#: The coarse classes of the ``kind`` column.
KINDS = ("matmul", "conv", "attention", "elementwise", "reduction", "view", "copy", "optimizer", "other")
#: The parts of a step, in order (``"forward"`` runs only the first).
PHASES = ("forward", "loss", "backward", "optimizer")
#: The columns of :func:`trace_module`'s table, in order.
COLUMNS = ("index", "op", "kind", "input_shapes", "output_shapes", "flops", "bytes_read",
           "bytes_written", "launches", "phase", "module", "args", "state_bytes")
#: The arguments of ``aten.convolution`` and ``aten.convolution_backward`` the ``args`` column keeps:
#: name -> position (the backward's are one further on: its first argument is the output's gradient).
_CONV_ARGS = {"stride": 3, "padding": 4, "dilation": 5, "transposed": 6, "groups": 8}
#: The position of a fused attention op's head count.
_HEADS_ARG = {"_native_multi_head_attention": 4, "_transformer_encoder_layer_fwd": 2}
#: The position of the fused encoder layer's ``use_gelu`` (its feed-forward activation: GELU, else ReLU).
_GELU_ARG = {"_transformer_encoder_layer_fwd": 7}
#: The position of a softmax's ``dim`` (forward: after the input; backward: after the gradient and output).
_SOFTMAX_DIM_ARG = {"_softmax": 1, "_log_softmax": 1, "_softmax_backward_data": 2, "_log_softmax_backward_data": 2}

_MATMUL = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "_scaled_mm", "matmul", "linear", "mv", "addmv",
           "dot", "vdot", "_addmm_activation", "_int_mm", "addr", "outer", "mkldnn_linear"}
_CONV = re.compile(r"_?(slow_|thnn_|cudnn_|mkldnn_|miopen_)?conv(olution|_depthwise|_tbc|_transpose|\d)")
#: Views whose schema does not say so, and in-place ops that change only metadata.
_VIEW_LIKE = {"_unsafe_view", "_reshape_alias", "lift_fresh", "as_strided_", "t_", "transpose_",
              "squeeze_", "unsqueeze_", "detach_", "set_", "resize_", "_resize_output_"}
_COPY = {"copy_", "copy", "_copy_from", "_copy_from_and_resize", "_to_copy", "clone", "lift_fresh_copy",
         "contiguous", "_to_dense", "to_dense"}
_REDUCTION = {"sum", "mean", "amax", "amin", "max", "min", "aminmax", "argmax", "argmin", "prod", "norm",
              "linalg_vector_norm", "var", "std", "var_mean", "std_mean", "logsumexp", "cumsum",
              "cumprod", "all", "any", "count_nonzero", "nansum", "_softmax", "_log_softmax",
              "_safe_softmax", "_softmax_backward_data", "_log_softmax_backward_data",
              "native_layer_norm", "native_layer_norm_backward", "native_batch_norm",
              "native_batch_norm_backward", "_native_batch_norm_legit",
              "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
              "native_group_norm", "native_group_norm_backward", "_fused_rms_norm",
              "_fused_rms_norm_backward", "nll_loss_forward", "nll_loss2d_forward", "mse_loss",
              "l1_loss", "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"}
_POOL = re.compile(r"_?(adaptive_)?(max|avg)_pool\d")
#: Ops that fill memory without a tensor input (they launch a fill kernel).
_FILL = {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "scalar_tensor", "fill",
         "fill_", "zero_", "new_zeros", "new_ones", "new_full"}
#: Metadata queries that reach a mode only for special tensors; run, never recorded.
_QUERIES = {"size", "sym_size", "stride", "sym_stride", "storage_offset", "sym_storage_offset", "numel",
            "sym_numel", "dim", "is_contiguous", "sym_is_contiguous", "is_strides_like_format",
            "is_non_overlapping_and_dense", "layout", "device"}


def _is_alias(func) -> bool:
    """Whether the op's schema says its results alias an input without writing to it (a view)."""
    returns = func._schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)


def op_kind(func) -> str:
    """The coarse class (one of :data:`KINDS`) of an ATen op overload such as ``torch.ops.aten.mm.default``.

    Examples
    --------
    >>> import torch
    >>> op_kind(torch.ops.aten.addmm.default), op_kind(torch.ops.aten.t.default)
    ('matmul', 'view')
    """
    import torch

    name = func._schema.name.split("::")[-1]
    if name.startswith(("_foreach_", "_fused_")) and not name.startswith("_fused_rms_norm"):
        return "optimizer"
    if name in _MATMUL:
        return "matmul"
    if _CONV.match(name):
        return "conv"
    if "attention" in name:
        return "attention"
    if name in _VIEW_LIKE or _is_alias(func):
        return "view"
    if name in _COPY:
        return "copy"
    if name in _REDUCTION or _POOL.match(name):
        return "reduction"
    if name in _FILL or torch.Tag.pointwise in func.tags:
        return "elementwise"
    return "other"


# ------------------------------------------------------------------------------------- recording
def _tensors(tree) -> list:
    import torch
    from torch.utils._pytree import tree_leaves

    return [leaf for leaf in tree_leaves(tree) if isinstance(leaf, torch.Tensor)]


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


class _ModuleStack:
    """The modules running right now, from global forward hooks (left as is when a forward raises)."""

    def __init__(self, model):
        from torch import nn

        self.names = {id(module): name for name, module in model.named_modules()}
        self.recurrent = [module for module in model.modules() if isinstance(module, nn.RNNBase)]
        self.stack, self.bounds, self._handles = [], {}, []

    def __enter__(self):
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self._handles = [register_module_forward_pre_hook(self._push), register_module_forward_hook(self._pop),
                         *(m.register_forward_pre_hook(self._bound, with_kwargs=True) for m in self.recurrent)]
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()

    def _push(self, module, args):
        self.stack.append(module)

    def _bound(self, module, args, kwargs):  # where a recurrent module's autograd graph begins (see _pop)
        self.bounds[id(module)] = {t.grad_fn for t in _tensors((args, kwargs)) if t.grad_fn is not None}

    def _pop(self, module, args, output):
        # Pop down to (and including) this module: entries above it belong to forwards that raised
        # an exception the model caught itself.
        while self.stack:
            if self.stack.pop() is module:
                break
        if id(module) in self.bounds:  # a recurrent layer: its backward ops are attributed to it (backward_module)
            nodes = [t.grad_fn for t in _tensors(output) if t.grad_fn is not None]
            seen, bound = set(), self.bounds.pop(id(module))
            while nodes:
                node = nodes.pop()
                if node is None or node in seen or node in bound or BACKWARD_MODULE in node.metadata:
                    continue  # outside this call (its inputs' nodes), or an earlier call's
                seen.add(node)
                node.metadata[BACKWARD_MODULE] = self.names.get(id(module), "")
                nodes += [next_node for next_node, _ in node.next_functions]

    def describe(self, module) -> str:
        name = self.names.get(id(module))
        if name == "":
            return f"the model itself ({type(module).__name__})"
        return f"module {name or '<not a submodule>'!r} ({type(module).__name__})"

    @property
    def current(self) -> str:
        return self.names.get(id(self.stack[-1]), "") if self.stack else ""


BACKWARD_MODULE = "crossover_module"  # autograd node metadata: the recurrent module whose forward made the node


def backward_module() -> str:
    """The recurrent module whose forward created the autograd node running now (in a backward pass), or ``""``."""
    import torch

    node = torch._C._current_autograd_node()
    return node.metadata.get(BACKWARD_MODULE, "") if node is not None else ""


def _recorder(modules: _ModuleStack):
    """A dispatch mode that appends one row (a dict) per ATen op call to its ``rows``."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    class Recorder(TorchDispatchMode):
        supports_higher_order_operators = False

        def __init__(self):
            super().__init__()
            self.rows = []
            self.touched = []  # each row's tensors, alive until the trace ends (see trace_state.state_bytes)
            self.phase = "forward"

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func._schema.name.split("::")[-1]
            if func.namespace != "aten" or name in _QUERIES:
                return func(*args, **kwargs)
            if func._overloadpacket not in flop_registry:  # decompose as FlopCounterMode does
                with self:
                    out = func.decompose(*args, **kwargs)
                if out is not NotImplemented:
                    return out
            out = func(*args, **kwargs)
            self._record(func, name, args, kwargs, out)
            return out

        def _record(self, func, name, args, kwargs, out):
            kind = op_kind(func)
            inputs = _tensors((args, {k: v for k, v in kwargs.items() if k != "out"}))
            outputs = _tensors(out)
            moves_nothing = kind == "view" or name in _ALLOCATION
            formula = flop_registry.get(func._overloadpacket)
            self.rows.append({
                "index": len(self.rows),
                "op": str(func),
                "kind": kind,
                "input_shapes": tuple(tuple(t.shape) for t in inputs),
                "output_shapes": tuple(tuple(t.shape) for t in outputs),
                "flops": int(formula(*args, **kwargs, out_val=out)) if formula else 0,
                "bytes_read": 0 if moves_nothing else _nbytes(inputs),
                "bytes_written": 0 if moves_nothing else _nbytes(outputs),
                "launches": 0 if moves_nothing else 1,
                "phase": self.phase,
                "module": modules.current if self.phase == "forward" else backward_module(),
                "args": _op_args(name, args),
            })
            self.touched.append(inputs + outputs)

    return Recorder()


def row_args(row) -> dict:
    """A trace row's ``args`` (see the module docstring), ``{}`` where it has none (another op, or a row
    from a trace older than the column)."""
    args = row.get("args")
    return args if isinstance(args, dict) else {}


def row_element_size(row) -> float:
    """Bytes per element of a traced row's outputs (its ``bytes_written`` over their elements; 4 when
    it wrote nothing)."""
    import math

    outputs = row.get("output_shapes") or ()
    written = float(row.get("bytes_written") or 0)
    numel = sum(math.prod(tuple(s)) for s in outputs)
    return written / numel if numel and written else 4.0


def _op_args(name: str, args) -> Optional[dict]:
    """A convolution's :data:`_CONV_ARGS` (tuples of ints, a bool, an int), a fused attention op's
    ``heads`` (and the fused encoder layer's ``gelu``), a softmax's ``dim`` (counted from the first), or None."""
    if name in _SOFTMAX_DIM_ARG and len(args) > _SOFTMAX_DIM_ARG[name] and hasattr(args[0], "dim"):
        return {"dim": int(args[_SOFTMAX_DIM_ARG[name]]) % max(args[0].dim(), 1)}
    if name in _HEADS_ARG and len(args) > _HEADS_ARG[name]:
        gelu = {"gelu": bool(args[_GELU_ARG[name]])} if name in _GELU_ARG and len(args) > _GELU_ARG[name] else {}
        return {"heads": int(args[_HEADS_ARG[name]]), **gelu}
    shift = {"convolution": 0, "convolution_backward": 1}.get(name)
    if shift is None or len(args) <= _CONV_ARGS["groups"] + shift:
        return None
    value = {key: args[i + shift] for key, i in _CONV_ARGS.items()}
    return dict(value, **{key: tuple(int(v) for v in value[key]) for key in ("stride", "padding", "dilation")},
                transposed=bool(value["transposed"]), groups=int(value["groups"]))


# ------------------------------------------------------------------------------------ the step
def _default_loss(output):
    """``loss(output)``: cross-entropy against class 0 for a ``[batch, classes]`` output, else MSE
    against zeros (the targets are made here, outside the recorder: they are data, not the step)."""
    import torch
    import torch.nn.functional as F

    if not isinstance(output, torch.Tensor):
        raise TraceError(f"the model returned {type(output).__name__}, not a tensor: "
                         "pass loss=callable(output)")
    if output.dim() == 2 and output.is_floating_point():
        classes = torch.zeros(output.shape[0], dtype=torch.long, device=output.device)
        return lambda out: F.cross_entropy(out, classes)
    zeros = torch.zeros_like(output)
    return lambda out: F.mse_loss(out, zeros)


def _optimizer(optimizer, params):
    import torch

    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=0.01, foreach=False)
    if callable(optimizer):
        return optimizer(params)
    raise ValueError(f"unknown optimizer {optimizer!r}; expected 'sgd' or a callable(params) -> optimizer")


def _fake_copy(fake_mode, tensor, device, memo):
    """A fake tensor like ``tensor`` (same one for the same tensor), on ``device`` if it is on meta."""
    import torch

    if id(tensor) not in memo:
        where = device if tensor.device.type == "meta" else tensor.device
        with fake_mode:
            fake = torch.empty_strided(tuple(tensor.shape), tuple(tensor.stride()), dtype=tensor.dtype,
                                       device=where)
        memo[id(tensor)] = fake.requires_grad_(tensor.requires_grad and tensor.is_floating_point())
    return memo[id(tensor)]


def _trace_device(inputs, model):
    import torch

    for tensor in (*inputs, *model.parameters(), *model.buffers()):
        if tensor.device.type != "meta":
            return tensor.device
    return torch.device("cpu")


@contextlib.contextmanager
def _quiet_fake_tensor_log():
    """Silence FakeTensorMode's logged traceback of a failing op: the error is raised anyway."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def trace_module(model, example_input, workload: str = "forward", loss=None, optimizer="sgd"):
    """The ATen ops of one step of ``model`` on ``example_input``, traced on fake tensors.

    Parameters
    ----------
    model : torch.nn.Module
        Any module; its parameters may live on the ``meta`` device. It is not modified (nor run).
    example_input : torch.Tensor or tuple of torch.Tensor
        The positional arguments of ``model``; only their shapes, dtypes and devices matter (meta
        tensors are fine). The trace reflects their batch size.
    workload : {"forward", "train"}
        ``"forward"``: ``model(*example_input)`` under ``torch.no_grad()``. ``"train"``: forward,
        loss, ``backward()`` and one optimizer step. The model's train/eval mode is used as is.
    loss : callable, optional
        ``loss(output) -> scalar tensor`` for ``"train"``. Default: cross-entropy against class 0
        when the output is a 2-D float tensor ``[batch, classes]``, else mean-squared error against
        zeros.
    optimizer : "sgd" or callable
        ``"sgd"``: ``torch.optim.SGD(params, lr=0.01, foreach=False)``; a callable gets the list of
        (fake) parameters and returns an optimizer.

    Returns
    -------
    pandas.DataFrame
        One row per op call with the columns :data:`COLUMNS` (see the module docstring).

    Raises
    ------
    crossover.errors.TraceError
        The step failed (e.g. a shape mismatch): the message names the innermost module that was
        running, its class and the error.
    """
    import pandas as pd
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from ..axes import WORKLOADS

    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; expected one of {WORKLOADS}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    inputs = tuple(example_input) if isinstance(example_input, (tuple, list)) else (example_input,)
    fake_mode, memo = FakeTensorMode(allow_non_fake_inputs=True), {}
    device = _trace_device([x for x in inputs if isinstance(x, torch.Tensor)], model)
    state = {name: _fake_copy(fake_mode, t, device, memo)
             for name, t in (*model.named_parameters(), *model.named_buffers())}
    args = tuple(_fake_copy(fake_mode, x, device, {}).requires_grad_(False)
                 if isinstance(x, torch.Tensor) else x for x in inputs)
    modules = _ModuleStack(model)
    recorder = _recorder(modules)
    train = workload == "train"
    try:
        with _quiet_fake_tensor_log(), fake_mode, modules, torch.set_grad_enabled(train):
            with recorder:
                output = torch.func.functional_call(model, state, args)
            stolen = []
            if train:
                params = [p for p in dict.fromkeys(state.values()) if p.requires_grad]
                _train_rest(recorder, output, loss, optimizer, params)
                stolen = drop_stolen_grad_copies(recorder, params)
            state_bytes(recorder, [*state.values(), *(t.grad for t in state.values()), *stolen])
    except TraceError:
        raise
    except Exception as error:  # the model's own errors: shapes, dtypes, data-dependent ops...
        where = (f"in {modules.describe(modules.stack[-1])}" if recorder.phase == "forward" and modules.stack
                 else f"in the {recorder.phase} phase")
        shapes = ", ".join(str(tuple(x.shape)) for x in inputs if isinstance(x, torch.Tensor))
        raise TraceError(f"tracing {type(model).__name__} on input {shapes} failed {where}: "
                         f"{_one_line(error)}") from error
    return pd.DataFrame(recorder.rows, columns=list(COLUMNS))


def _train_rest(recorder, output, loss, optimizer, params) -> None:
    """Loss, backward and the optimizer step of a training step, each recorded in its phase."""
    import torch

    loss = _default_loss(output) if loss is None else loss
    recorder.phase = "loss"
    with recorder:
        value = loss(output)
    if not (isinstance(value, torch.Tensor) and value.numel() == 1 and value.requires_grad):
        raise TraceError("the loss must be a one-element tensor that depends on the parameters")
    recorder.phase = "backward"
    with recorder:
        value.backward()
    recorder.phase = "optimizer"
    step = _optimizer(optimizer, params)
    with recorder:
        step.step()


def trace_batches(model, sample_shape, batch_sizes, workload: str = "forward", *, dtype=None, **options):
    """:func:`trace_module` at each batch size, in one table with a leading ``batch_size`` column.

    Parameters
    ----------
    model : torch.nn.Module
        The model (not modified).
    sample_shape : tuple of int
        Shape of one sample; the input at batch size ``b`` is a meta tensor of shape
        ``(b, *sample_shape)`` (nothing is allocated).
    batch_sizes : iterable of int
        The batch sizes to trace.
    workload : {"forward", "train"}
        As in :func:`trace_module`.
    dtype : torch.dtype, optional
        Dtype of the input (default: the default float dtype; ``torch.long`` for token ids).
    **options
        ``loss`` and ``optimizer``, passed to :func:`trace_module`.

    Returns
    -------
    pandas.DataFrame
        The traces one after the other, ``batch_size`` first, then :data:`COLUMNS`.
    """
    import pandas as pd
    import torch

    tables = []
    for batch_size in batch_sizes:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch sizes must be positive integers, got {batch_size!r}")
        example = torch.empty((batch_size, *sample_shape), dtype=dtype, device="meta")
        table = trace_module(model, example, workload, **options)
        table.insert(0, "batch_size", batch_size)
        tables.append(table)
    if not tables:
        return pd.DataFrame(columns=["batch_size", *COLUMNS])
    return pd.concat(tables, ignore_index=True)
