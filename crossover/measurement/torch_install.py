"""What the installed torch is (its version, whether it was built for a GPU), read without importing it.

Importing torch takes about 0.8 s, and ``crossover predict`` from the shipped results needs only these
facts of it: the version the shipped toy traces were made with
(:func:`crossover.fit.toy_trace.shipped_templates`) and whether this machine could have a CUDA device
(:func:`crossover.measurement.environment.cuda_available`, for its label). They are the constants of
``torch/version.py``, which ``torch.__version__`` and ``torch.version`` are made from; where torch is
imported already, or its ``version.py`` cannot be read, torch itself answers.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path

__all__ = ["torch_version_field", "cpu_only_torch"]

_UNREAD = object()


@lru_cache(maxsize=None)
def _version_constants() -> dict:
    """The constants assigned in the installed ``torch/version.py`` (``{}`` where it cannot be read)."""
    try:
        spec = importlib.util.find_spec("torch")
        source = Path(next(iter(spec.submodule_search_locations)), "version.py").read_text()
        constants = {}
        for node in ast.parse(source).body:
            target = node.target if isinstance(node, ast.AnnAssign) else (
                node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
            if isinstance(target, ast.Name) and node.value is not None:
                constants[target.id] = ast.literal_eval(node.value)
        return constants
    except (AttributeError, ImportError, OSError, StopIteration, SyntaxError, TypeError, ValueError):
        return {}


def torch_version_field(name: str):
    """A field of ``torch.version`` (``"__version__"``, ``"cuda"``, ``"hip"``, ...) of the installed torch.

    Parameters
    ----------
    name : str
        The field's name in ``torch/version.py``.

    Returns
    -------
    object
        Its value (``"__version__"`` as a ``str``, as ``torch.__version__`` compares), read from the file
        while torch is not imported, else from ``torch.version``.
    """
    value = _version_constants().get(name, _UNREAD) if "torch" not in sys.modules else _UNREAD
    if value is _UNREAD:
        import torch

        value = torch.__version__ if name == "__version__" else getattr(torch.version, name)
    return str(value) if name == "__version__" else value


def cpu_only_torch() -> bool:
    """True when the installed torch was built for neither CUDA nor ROCm (``torch.version.cuda`` and
    ``torch.version.hip`` None): ``torch.cuda.is_available()`` is then False on any machine.

    Returns
    -------
    bool
    """
    return torch_version_field("cuda") is None and torch_version_field("hip") is None
