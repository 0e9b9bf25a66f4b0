"""Where the data shipped with crossover are: the reference results, the calibration profiles and the
prices, in the repository or installed with the package. One home for every shipped path.

The wheel maps the packages ``crossover.shipped_results`` and ``crossover.shipped_profiles`` onto
``experiments/results`` and ``experiments/profiles`` (``setup.py``: ``DATA_PACKAGES``;
``pyproject.toml``: ``package-data``), so the files live once in git and an installed crossover
still finds them. The prices file is package data itself (``crossover/prices.toml``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["shipped_results_dir", "shipped_profiles_dir", "shipped_prices_file"]

_PACKAGE = Path(__file__).resolve().parent


def _repository_or_installed(folder: str, package: str) -> Path:
    repository = _PACKAGE.parent / "experiments" / folder
    installed = _PACKAGE / package
    if repository.is_dir() or not installed.is_dir():
        return repository
    return installed


def shipped_results_dir() -> Path:
    """The shipped reference results directory.

    Returns
    -------
    Path
        ``experiments/results`` beside the package when running from a checkout (or an editable
        install), else ``crossover/shipped_results`` of an installed wheel. When neither exists (a
        build without the data), the repository path, so the error names where the data belong.
    """
    return _repository_or_installed("results", "shipped_results")


def shipped_profiles_dir() -> Path:
    """The shipped calibration profiles: ``experiments/profiles`` of a checkout, else
    ``crossover/shipped_profiles`` of an installed wheel (one ``<machine>/[<device>/]profile.json`` each)."""
    return _repository_or_installed("profiles", "shipped_profiles")


def shipped_prices_file() -> Path:
    """The prices per hour of each shipped machine (``crossover/prices.toml``, package data)."""
    return _PACKAGE / "prices.toml"
