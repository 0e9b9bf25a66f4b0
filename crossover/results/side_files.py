"""The files kept beside a results directory (``peaks.json``, ``noise.json``, ``calibration/``, the zoo
table): one rule for finding them.

A side file belongs to a run when it lies in the run's directory, anywhere under it, or in the
directory just above it (a machine's folder holds its peaks and noise floor beside its runs). Every
reader of a side file asks :func:`side_files`, so the rule lives here once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Union

__all__ = ["side_files"]


def side_files(directories: Union[str, Path, Iterable[Union[str, Path]]], name: str) -> list:
    """Every file called ``name`` that belongs to the given results directories.

    Parameters
    ----------
    directories : path or iterable of paths
        Results directories (one run, a machine's runs, or the whole shipped tree).
    name : str
        The side file's name, or a relative path such as ``"calibration/profile.json"``.

    Returns
    -------
    list of Path
        For each directory in turn: its own ``name``, then those under it (sorted), then the one in the
        directory just above it; each file once, in that order (the run's own first).
    """
    if isinstance(directories, (str, Path)):
        directories = [directories]
    found = []
    for directory in map(Path, directories):
        own = directory / name
        found += [own] if own.is_file() else []
        found += sorted(p for p in directory.rglob(name) if p.is_file() and p != own) if directory.is_dir() else []
        above = directory.parent / name
        found += [above] if above.is_file() else []
    return list(dict.fromkeys(found))
