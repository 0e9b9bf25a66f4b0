"""Python values as JSON-ready values: the one conversion every ``--json`` output and ``to_json()`` uses,
and the one style every ``--json`` output names its layout in.

Every ``crossover COMMAND --json`` prints one object whose first key is ``schema``:
``{"name": "crossover.<layout>", "version": N}`` (:func:`schema_tag`), and the package ships a JSON
Schema of each layout, ``crossover/schemas/<layout>.schema.json`` (:func:`schema_file`). The version goes
up when a key changes meaning or goes away; keys may be added within a version.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Union

__all__ = ["to_jsonable", "schema_tag", "stamped", "check_stamp", "schema_file", "SCHEMAS_DIR"]

#: Where the JSON Schemas of the ``--json`` outputs are (shipped in the package: pyproject's package-data).
SCHEMAS_DIR = Path(__file__).resolve().parent / "schemas"

_PREFIX = "crossover."


def schema_tag(layout: str, version: int = 1) -> dict:
    """The ``schema`` value of a ``--json`` layout: ``{"name": "crossover.<layout>", "version": version}``.

    Parameters
    ----------
    layout
        The layout's short name (``"compare"``, ``"fleet_status"``); its schema file is
        ``schemas/<layout>.schema.json``.
    version
        Goes up when a key changes meaning or goes away.
    """
    if not layout or "." in layout or "/" in layout:
        raise ValueError(f"a layout name is one word, got {layout!r}")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"a layout version is a positive integer, got {version!r}")
    return {"name": _PREFIX + layout, "version": version}


def check_stamp(data) -> dict:
    """``data``'s ``schema`` (a :func:`schema_tag`); ValueError where ``data`` is not an object stamped so."""
    tag = data.get("schema") if isinstance(data, dict) else None
    if (not isinstance(tag, dict) or set(tag) != {"name", "version"} or not isinstance(tag["name"], str)
            or not tag["name"].startswith(_PREFIX) or not isinstance(tag["version"], int)):
        raise ValueError(f"a --json output needs a schema of the form {{'name': 'crossover.<layout>', 'version': N}}, "
                         f"got {tag!r}")
    return tag


def stamped(tag: dict, data: dict) -> dict:
    """``data`` with ``schema`` = ``tag`` as its first key (a ``schema`` already there must be ``tag``)."""
    check_stamp({"schema": tag})
    if "schema" in data and data["schema"] != tag:
        raise ValueError(f"data stamped {data['schema']!r} cannot be stamped {tag!r}")
    return {"schema": dict(tag), **{k: v for k, v in data.items() if k != "schema"}}


def schema_file(tag: Union[dict, str]) -> Path:
    """The JSON Schema file of a layout: a :func:`schema_tag`, its name (``"crossover.fit"``) or its short
    name (``"fit"``) → ``crossover/schemas/<layout>.schema.json``."""
    name = tag["name"] if isinstance(tag, dict) else tag
    return SCHEMAS_DIR / f"{name.removeprefix(_PREFIX)}.schema.json"


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
