"""The toy model's traced step at any size, from a handful of real traces.

The ``calibrated`` models cost the toy model's step on a profile at every size they are asked about
(:func:`crossover.fit.calibrated_model.toy_parts`): a crossover search or a speed-up map asks about
thousands of ``(d_model, batch_size)`` pairs, and tracing one on fake tensors
(:func:`crossover.opcost.module_predict.trace_step`) takes milliseconds. Yet the trace of a
:class:`crossover.measurement.toy_model.ResidualMLP` is the same list of ops at every size: only its
shapes, FLOPs and bytes change, and each of those is a polynomial in ``d_model`` and ``batch_size``
of low degree (``2 B d²`` FLOPs for a matrix product, ``(B d + d²) × element size`` bytes read).

:func:`toy_trace` therefore traces the toy for real at :data:`D_NODES` × :data:`B_NODES` (per
number of layers, workload and dtype), interpolates every number of the trace exactly (integer
coefficients of ``d^a B^b``, ``a, b <= 2``) and checks the interpolation against real traces at
:data:`CHECK_SIZES` (and :data:`ONE_SIZES`: a width of one is traced for real where they miss); a
trace whose ops differ between sizes, whose numbers are no such polynomial or that misses a check is
traced for real at every size instead (the same rows either way:
``tests/test_toy_trace.py`` compares both over a range of sizes).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Optional

__all__ = ["toy_trace", "traced_toy", "shipped_templates", "write_templates", "D_NODES", "B_NODES", "CHECK_SIZES",
           "ONE_SIZES", "SHIPPED"]

#: The widths and batch sizes traced for real to interpolate from (three each: degree two in both).
D_NODES = (16, 17, 19)
B_NODES = (2, 3, 5)
#: Sizes the interpolation must reproduce exactly before it is trusted, away from the nodes.
CHECK_SIZES = ((53, 29), (300, 70), (2, 2), (37, 1))
#: Sizes with a width of one, which the trace may treat apart (a training step of two layers of width
#: one runs another op in its backward pass): traced for real unless the interpolation holds at all.
ONE_SIZES = ((1, 1), (1, 7))
#: Fields of a trace row that are numbers of the size; the others must be the same at every size.
_NUMBERS = ("flops", "bytes_read", "bytes_written", "state_bytes")
_TEMPLATES: dict = {}  # (n_layers, workload, dtype) -> template (see _template), or None: trace for real
#: The shipped templates: of one and two layers, each workload and dtype, for one torch version.
SHIPPED = Path(__file__).with_name("toy_traces.json")
_SHIPPED_KEYS = [(n, w, d) for n in (1, 2) for w in ("forward", "train") for d in ("float32", "float16", "bfloat16")]


def traced_toy(d_model: int, n_layers: int, batch_size: int, workload: str, dtype: str) -> tuple:
    """One step of a ResidualMLP traced for real on fake tensors: ``(rows, module calls, parameter
    tensors, parameter bytes)``, ``rows`` as :func:`crossover.opcost.trace.trace_module`'s records."""
    import torch

    from ..measurement.toy_model import ResidualMLP
    from ..opcost.module_predict import trace_step

    torch_dtype = getattr(torch, dtype)
    model = ResidualMLP(d_model, n_layers, device="meta", dtype=torch_dtype)
    table, calls = trace_step(model, (d_model,), batch_size, workload, torch_dtype)
    n_params = sum(1 for p in model.parameters() if p.requires_grad)
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return table.to_dict("records"), calls, n_params, param_bytes


def _leaves(trace: tuple) -> tuple:
    """``(skeleton, numbers)``: the trace with every size-dependent number replaced by None, and
    those numbers in order (shape dimensions, FLOPs, bytes; module calls, parameters and bytes)."""
    rows, calls, n_params, param_bytes = trace
    numbers, skeleton = [], []
    for row in rows:
        fixed = {k: v for k, v in row.items() if k not in _NUMBERS and not k.endswith("_shapes")}
        for key in ("input_shapes", "output_shapes"):
            fixed[key] = tuple(len(shape) for shape in row[key])
            numbers += [int(v) for shape in row[key] for v in shape]
        numbers += [int(row[k]) for k in _NUMBERS]
        skeleton.append(fixed)
    numbers += [int(calls), int(n_params), int(param_bytes)]
    return skeleton, numbers


def _lagrange(nodes: tuple) -> list:
    """Coefficients (lowest power first, exact) of each Lagrange basis polynomial on ``nodes``."""
    basis = []
    for i, xi in enumerate(nodes):
        poly = [Fraction(1)]
        for j, xj in enumerate(nodes):
            if j == i:
                continue
            # poly *= (x - xj) / (xi - xj)
            scaled = [Fraction(0)] * (len(poly) + 1)
            for k, c in enumerate(poly):
                scaled[k + 1] += c / (xi - xj)
                scaled[k] -= c * xj / (xi - xj)
            poly = scaled
        basis.append(poly)
    return basis


def _template(n_layers: int, workload: str, dtype: str) -> Optional[tuple]:
    """``(skeleton, coefficients, ones)`` of the toy's trace, each number ``sum c[a][b] d^a B^b`` with
    integer ``c``, ``ones`` whether it holds at a width of one (:data:`ONE_SIZES`); None where the
    trace is no such polynomial (then every size is traced for real)."""
    traces = {(d, b): _leaves(traced_toy(d, n_layers, b, workload, dtype)) for d in D_NODES for b in B_NODES}
    skeleton, first = traces[D_NODES[0], B_NODES[0]]
    if any(s != skeleton or len(n) != len(first) for s, n in traces.values()):
        return None
    basis_d, basis_b = _lagrange(D_NODES), _lagrange(B_NODES)
    coefficients = []
    for index in range(len(first)):
        terms = []
        for a in range(len(D_NODES)):
            for b in range(len(B_NODES)):
                c = sum(traces[d, bn][1][index] * basis_d[i][a] * basis_b[j][b]
                        for i, d in enumerate(D_NODES) for j, bn in enumerate(B_NODES))
                if c.denominator != 1:
                    return None
                if c:
                    terms.append((a, b, int(c)))
        coefficients.append(tuple(terms))
    template = (skeleton, tuple(coefficients))
    if any(_from_template(template, d, b) != traced_toy(d, n_layers, b, workload, dtype) for d, b in CHECK_SIZES):
        return None
    ones = all(_from_template(template, d, b) == traced_toy(d, n_layers, b, workload, dtype) for d, b in ONE_SIZES)
    return template + (ones,)


def _from_template(template: tuple, d_model: int, batch_size: int) -> tuple:
    """The trace at one size, from :func:`_template`'s skeleton and coefficients."""
    skeleton, coefficients = template[:2]
    powers = [[d_model**a * batch_size**b for b in range(len(B_NODES))] for a in range(len(D_NODES))]
    numbers = iter([sum(c * powers[a][b] for a, b, c in terms) for terms in coefficients])
    rows = []
    for fixed in skeleton:
        row = dict(fixed)
        for key in ("input_shapes", "output_shapes"):
            row[key] = tuple(tuple(next(numbers) for _ in range(rank)) for rank in fixed[key])
        for key in _NUMBERS:
            row[key] = next(numbers)
        rows.append({k: row[k] for k in _order(fixed)})
    calls, n_params, param_bytes = numbers
    return rows, calls, n_params, param_bytes


def _order(fixed: dict) -> list:
    """The keys of a trace row in the trace's order (``rows`` compare equal either way; their
    order is kept so a row prints as the trace prints it)."""
    from ..opcost.trace import COLUMNS

    return [k for k in COLUMNS if k in fixed or k in _NUMBERS]


def toy_trace(d_model: int, n_layers: int, batch_size: int, workload: str = "forward",
              dtype: str = "float32") -> tuple:
    """One step of a ResidualMLP, as :func:`traced_toy` traces it, at the cost of a few additions.

    Parameters
    ----------
    d_model, n_layers, batch_size : int
        The sizes (positive).
    workload : {"forward", "train"}
    dtype : str
        The weights' and input's dtype (``"float32"``, ``"float16"``, ``"bfloat16"``).

    Returns
    -------
    tuple
        ``(rows, module calls, parameter tensors, parameter bytes)``: the trace's rows (dicts with
        :data:`crossover.opcost.trace.COLUMNS`), interpolated from the real traces of the same
        ``n_layers``, ``workload`` and ``dtype`` (see the module docstring), else traced for real.
    """
    key = (n_layers, workload, dtype)
    if key not in _TEMPLATES:
        shipped = shipped_templates()
        _TEMPLATES[key] = shipped[key] if key in shipped else _template(n_layers, workload, dtype)
    template = _TEMPLATES[key]
    if template is None or (d_model == 1 and not template[2]):
        return traced_toy(d_model, n_layers, batch_size, workload, dtype)
    return _from_template(template, int(d_model), int(batch_size))


def shipped_templates(path: Path = SHIPPED) -> dict:
    """The templates in ``path`` (``(n_layers, workload, dtype)`` -> template) when they were built with
    the installed torch; ``{}`` otherwise (missing, unreadable, or another torch)."""
    from ..measurement.torch_install import torch_version_field

    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    if data.get("torch") != torch_version_field("__version__"):  # read, not imported
        return {}
    out = {}
    for item in data.get("templates", []):
        skeleton = tuple({**row, "input_shapes": tuple(row["input_shapes"]), "output_shapes": tuple(row["output_shapes"])}
                         for row in item["skeleton"])
        coefficients = tuple(tuple(tuple(term) for term in terms) for terms in item["coefficients"])
        out[item["n_layers"], item["workload"], item["dtype"]] = (skeleton, coefficients, bool(item["ones"]))
    return out


def write_templates(path: Path = SHIPPED) -> Path:
    """Build the templates of :data:`_SHIPPED_KEYS` with the installed torch and write them to ``path``.

    Raises
    ------
    RuntimeError
        Where a template cannot be built (the toy's trace is no polynomial of its size).
    """
    import torch

    templates = []
    for n_layers, workload, dtype in _SHIPPED_KEYS:
        template = _template(n_layers, workload, dtype)
        if template is None:
            raise RuntimeError(f"no template of the toy's trace ({n_layers} layers, {workload}, {dtype})")
        skeleton, coefficients, ones = template
        templates.append(dict(n_layers=n_layers, workload=workload, dtype=dtype, ones=ones,
                              skeleton=list(skeleton), coefficients=[list(map(list, terms)) for terms in coefficients]))
    Path(path).write_text(json.dumps(dict(torch=torch.__version__, templates=templates), separators=(",", ":")) + "\n")
    return Path(path)


if __name__ == "__main__":
    print(f"wrote {write_templates(Path(sys.argv[1]) if len(sys.argv) > 1 else SHIPPED)}")
