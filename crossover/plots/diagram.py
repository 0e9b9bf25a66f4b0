"""The model diagram: the toy residual MLP drawn by torchview (``crossover diagram``, whose parser is in
:mod:`crossover.cli.figures`).

torchview and the graphviz ``dot`` program are optional (``pip install 'crossover[diagram]'`` and
the system package ``graphviz``); they are imported and looked up only when a diagram is drawn.
When either is missing, :func:`draw_diagram` raises :class:`DiagramUnavailable` with one line
saying what to install; ``crossover diagram`` turns it into exit status 2 and ``crossover figures``
leaves the diagram out with a note.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence, Union

from ..errors import CrossoverError

__all__ = ["DiagramUnavailable", "draw_diagram", "diagram_available", "FORMATS"]

#: Formats written by default (graphviz renders both; PDF for the paper, PNG for a quick look).
FORMATS = ("png", "pdf")
NAME = "diagram"


class DiagramUnavailable(CrossoverError):
    """torchview or graphviz's ``dot`` is missing; the message says what to install."""


def _check():
    """The torchview module, or :class:`DiagramUnavailable` naming what to install."""
    try:
        import torchview
    except ImportError:
        raise DiagramUnavailable("the model diagram needs torchview: pip install 'crossover[diagram]' "
                                 "(or pip install torchview)") from None
    if shutil.which("dot") is None:
        raise DiagramUnavailable("the model diagram needs graphviz's 'dot' program: install graphviz "
                                 "(apt-get install graphviz, brew install graphviz or conda install graphviz)")
    return torchview


def diagram_available() -> bool:
    """Whether :func:`draw_diagram` can run here (torchview importable and ``dot`` on the PATH)."""
    try:
        _check()
    except DiagramUnavailable:
        return False
    return True


def draw_diagram(out_dir: Union[str, Path], *, d_model: int = 16, n_layers: int = 2, batch_size: int = 1,
                 formats: Sequence[str] = FORMATS, name: str = NAME) -> list:
    """Draw the residual MLP (``n_layers`` blocks of width ``d_model``) with torchview.

    Parameters
    ----------
    out_dir : path
        Where ``<name>.<format>`` go (created if missing).
    d_model, n_layers, batch_size : int
        Sizes of the drawn model and its input (small: the graph has a few nodes per block).
    formats : sequence of str
        Graphviz output formats (``png``, ``pdf``, ``svg``...).
    name : str
        File stem.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Raises
    ------
    DiagramUnavailable
        torchview or graphviz's ``dot`` is missing.
    ValueError
        A size is not a positive integer.
    """
    torchview = _check()
    from ..measurement.toy_model import ResidualMLP

    for label, value in (("d_model", d_model), ("n_layers", n_layers), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{label} must be a positive integer, got {value!r}")
    model = ResidualMLP(d_model, n_layers)
    graph = torchview.draw_graph(model, input_size=(batch_size, d_model), expand_nested=True,
                                 graph_name=f"ResidualMLP(d_model={d_model}, n_layers={n_layers})",
                                 device="cpu", save_graph=False)
    visual = graph.visual_graph
    visual.graph_attr.update(dpi="200")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out_dir / f"{name}.{fmt}"
        try:
            rendered = visual.pipe(format=fmt)
        except Exception as exc:  # graphviz's render errors (ExecutableNotFound, CalledProcessError, ...)
            raise DiagramUnavailable(f"graphviz could not render the diagram as {fmt}: {exc}") from exc
        path.write_bytes(rendered)
        paths.append(path)
    return paths
