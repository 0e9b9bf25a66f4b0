"""Where the reference measurements shipped with crossover are: ``experiments/results`` of the
repository, or the same files installed with the package (``crossover/shipped_results``).

The wheel maps the package ``crossover.shipped_results`` onto ``experiments/results``
(``pyproject.toml``: ``package-dir`` and ``package-data``), so the files live once in git and an
installed crossover still finds them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["shipped_results_dir"]

_PACKAGE = Path(__file__).resolve().parent


def shipped_results_dir() -> Path:
    """The shipped reference results directory.

    Returns
    -------
    Path
        ``experiments/results`` beside the package when running from a checkout (or an editable
        install), else ``crossover/shipped_results`` of an installed wheel. When neither exists (a
        build without the data), the repository path, so the error names where the data belong.
    """
    repository = _PACKAGE.parent / "experiments" / "results"
    installed = _PACKAGE / "shipped_results"
    if repository.is_dir() or not installed.is_dir():
        return repository
    return installed
