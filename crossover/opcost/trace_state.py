"""What a traced step holds from one step to the next, and the gradient copies eager autograd skips.

Helpers of :mod:`crossover.opcost.trace` that read the tensors its recorder kept alive: each row's
``state_bytes`` (the model's parameters, buffers and gradients it touches, for
:mod:`crossover.opcost.reuse`), and the ``AccumulateGrad`` clones only the trace makes.
"""

from __future__ import annotations

__all__ = ["op_name", "storage_id", "state_bytes", "drop_stolen_grad_copies", "obeys_layout_contract"]

#: Ops that allocate and launch nothing.
_ALLOCATION = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
               "empty_permuted"}


def op_name(op: str) -> str:
    """``"aten.addmm.default"`` → ``"addmm"``."""
    parts = str(op).split(".")
    return parts[1] if len(parts) >= 3 else parts[-1]

def obeys_layout_contract(grad, param) -> bool:
    """Whether autograd would keep ``grad`` as ``param``'s ``.grad`` as it is: same shape, dtype and
    device, and the same strides in every dimension longer than one (``obeys_layout_contract`` in
    PyTorch's ``grad_layout_contract.h``, for dense tensors; a broadcast gradient's zero strides differ)."""
    if (tuple(grad.shape), grad.dtype, grad.device) != (tuple(param.shape), param.dtype, param.device):
        return False
    return all(size == 1 or a == b for size, a, b in zip(grad.shape, grad.stride(), param.stride()))


def storage_id(tensor):
    """Which storage ``tensor`` views (views of one tensor share it; fake tensors have one too); None for a
    tensor without one (a sparse gradient, an opaque oneDNN tensor): it counts as no state."""
    try:
        return tensor.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def drop_stolen_grad_copies(recorder, params) -> list:
    """Take out of ``recorder`` the copies of a gradient into a parameter's ``.grad`` that eager
    PyTorch does not make, and return the gradients it keeps instead (pure but for ``recorder``).

    Autograd's ``AccumulateGrad`` steals a fresh gradient as ``.grad`` when nothing else holds it and its
    strides are the parameter's (the layout contract); otherwise it clones it (``new_empty_strided`` and
    ``copy_``). The recorder holds every tensor of the trace, so in the trace every gradient is cloned.
    Under ``torch.profiler`` an eager MLP or CNN backward pass calls neither ``new_empty_strided`` nor
    ``copy_`` (``tests/test_trace.py`` checks it), while the trace costed a copy of every weight. A copy
    whose source keeps the layout contract with the parameter (:func:`obeys_layout_contract`) and feeds
    no other op is dropped, with the allocation that made its destination."""
    grads = {id(p.grad): p.grad for p in params if p.grad is not None}
    uses = {}  # rows touching a tensor, its allocations' (new_empty_strided(source, ...)) aside
    for row, touched in zip(recorder.rows, recorder.touched):
        if op_name(row["op"]) in _ALLOCATION:
            continue
        for t in {id(t): t for t in touched}.values():
            uses[id(t)] = uses.get(id(t), 0) + 1
    drop, stolen = set(), []
    for i, (row, touched) in enumerate(zip(recorder.rows, recorder.touched)):
        if row["phase"] != "backward" or op_name(row["op"]) != "copy_" or len(touched) < 2:
            continue
        dest, source = touched[0], touched[1]
        if grads.get(id(dest)) is not dest or uses.get(id(source), 0) > 2:  # its producer and this copy only
            continue
        if not obeys_layout_contract(source, dest):
            continue
        made = next((j for j in range(i - 1, -1, -1) if op_name(recorder.rows[j]["op"]) in _ALLOCATION
                     and any(t is dest for t in recorder.touched[j])), None)
        drop.update({i} if made is None else {i, made})
        stolen.append(source)
    if drop:
        keep = [i for i in range(len(recorder.rows)) if i not in drop]
        recorder.rows = [dict(recorder.rows[i], index=n) for n, i in enumerate(keep)]
        recorder.touched = [recorder.touched[i] for i in keep]
    return stolen


def state_bytes(recorder, state) -> None:
    """Fill each row's ``state_bytes`` from the storages it touched (kept alive by the recorder, so no
    freed storage's address is taken by another) and those of ``state``: the step's parameters, buffers
    and gradients."""
    ids = {storage_id(t) for t in state if t is not None} - {None}
    for row, touched in zip(recorder.rows, recorder.touched):
        row["state_bytes"] = 0 if not row["launches"] else sum(
            {storage_id(t): t.numel() * t.element_size() for t in touched if storage_id(t) in ids}.values())
