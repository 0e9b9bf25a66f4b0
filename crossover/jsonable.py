"""Python values as JSON-ready values: the one conversion every ``--json`` output and ``to_json()`` uses."""

from __future__ import annotations

import math

__all__ = ["to_jsonable"]


def to_jsonable(data):
    """``data`` with only JSON types left: NaN and infinities as None, numpy scalars and arrays as
    numbers and lists, tuples as lists, paths and anything else as their ``str``.

    Parameters
    ----------
    data
        Nested dicts, lists, tuples and scalars.

    Returns
    -------
    The same structure, ready for :func:`json.dumps` with no ``default``.
    """
    if isinstance(data, dict):
        return {str(k): to_jsonable(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [to_jsonable(v) for v in data]
    if hasattr(data, "tolist") and not isinstance(data, (str, bytes)):  # numpy scalars and arrays
        return to_jsonable(data.tolist())
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if data is None or isinstance(data, (bool, int, str)):
        return data
    return str(data)
