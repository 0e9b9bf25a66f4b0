"""Reading a machine's noise floor (``noise.json`` beside its results, written by
:func:`crossover.measurement.noise.write_noise`): apart from the measuring code, so that ``fit`` and
``predict``, which quote it, do not import torch (about 0.8 s)."""

from __future__ import annotations

import json

__all__ = ["NOISE_FILE", "read_noise"]

NOISE_FILE = "noise.json"


def read_noise(directories) -> list:
    """Every ``noise.json`` of the given results directories.

    Parameters
    ----------
    directories : path or iterable of paths
        Results directories (found by :func:`crossover.results.side_files.side_files`).

    Returns
    -------
    list of dict
        Each noise floor as written, with ``path`` added; unreadable files and other schemas are skipped.
    """
    from ..results.side_files import side_files

    found = []
    for path in side_files(directories, NOISE_FILE):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if data.get("schema") == "crossover-noise":
            data["path"] = str(path)
            found.append(data)
    return found
