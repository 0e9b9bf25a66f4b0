"""Public names imported on first use: how ``crossover`` and its subpackages name their public parts
without importing torch, pandas or matplotlib until a name is used (``crossover --help`` stays fast)."""

from __future__ import annotations

import importlib

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict):
    """Module ``__getattr__`` and ``__dir__`` that import each public name from its module on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict
        Public name → the module that defines it, relative to ``package`` (``"store"``,
        ``"measurement.toy_model"``) or absolute (``"crossover.fit.series_fit"``).

    Returns
    -------
    tuple
        ``(__getattr__, __dir__)`` to assign at the package's module level.
    """
    def __getattr__(name):
        if name in exports:
            target = exports[name]
            module = importlib.import_module(target if target.startswith("crossover") else f".{target}", package)
            return getattr(module, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__
