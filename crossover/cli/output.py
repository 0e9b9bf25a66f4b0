"""``--format text|json|md|csv``: how a command that prints a table prints it.

``text`` is the command's own report; ``json`` its one JSON object (:func:`crossover.cli.args.print_json`,
``--json`` is the short form); ``md`` and ``csv`` print its table or tables alone: a Markdown (GitHub)
pipe table, or CSV with a header row. A command with several tables prints each under a ``###``
heading in Markdown, and one CSV table whose first column, ``table``, names the table of each row.
Cells that hold lists or objects are written as compact JSON. No ``tabulate`` needed.
"""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING, Mapping, Sequence, Union

if TYPE_CHECKING:  # pandas loads on use: --help stays fast
    import pandas

__all__ = ["FORMATS", "add_format", "resolve_format", "wants_table", "print_tables", "markdown_table", "csv_table"]

#: What ``--format`` takes.
FORMATS = ("text", "json", "md", "csv")

#: A table: a list of dicts (one per row) or a DataFrame.
Rows = Union[Sequence[Mapping], "pandas.DataFrame"]


def add_format(parser, json_help: str = "print one JSON object (the short form of --format json)") -> None:
    """``--format text|json|md|csv`` and ``--json`` (its short form), both into ``args.format``;
    :func:`resolve_format` then sets ``args.json``."""
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (the report, default), json (one object), md or csv (the table alone)")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help=json_help)


def resolve_format(args) -> None:
    """``args.json`` from ``args.format`` where the command has :func:`add_format`'s options (``export``
    and ``diagram`` have a ``--format`` of their own, kept apart by its ``dest``)."""
    if getattr(args, "format", None) in FORMATS:
        args.json = args.format == "json"


def wants_table(args) -> bool:
    """Whether ``--format`` asks for the table alone (md or csv)."""
    return getattr(args, "format", None) in ("md", "csv")


def _records(rows: Rows) -> tuple:
    """``(columns, rows as dicts)`` of a list of dicts or a DataFrame."""
    if hasattr(rows, "to_dict"):
        return [str(c) for c in rows.columns], rows.to_dict("records")
    rows = [dict(r) for r in rows]
    columns = list(dict.fromkeys(c for r in rows for c in r))
    return columns, rows


def _cell(value, *, precise: bool) -> str:
    if value is None:
        return ""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict)):
        try:
            value = value.item()  # numpy scalars
        except (AttributeError, ValueError):
            pass
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return repr(value) if precise else f"{value:.4g}"
    if isinstance(value, (list, tuple, dict)):
        from ..jsonable import to_jsonable

        return json.dumps(to_jsonable(value), separators=(",", ":"))
    return str(value)


def markdown_table(rows: Rows) -> str:
    """A Markdown pipe table of ``rows`` (a list of dicts or a DataFrame): a header, numbers to four
    significant figures and right-aligned, ``|`` escaped, an empty cell for a missing value.

    Parameters
    ----------
    rows : list of dict or DataFrame
        The table; its columns are the keys in order of first appearance.

    Returns
    -------
    str
        The table, one line per row, without a trailing newline.
    """
    columns, records = _records(rows)
    if not columns:
        return ""
    cells = [[_cell(r.get(c), precise=False).replace("|", "\\|").replace("\n", " ") for c in columns]
             for r in records]
    numeric = [all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool)
                   for r in records if r.get(c) is not None) and any(r.get(c) is not None for r in records)
               for c in columns]
    width = [max(3, len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    pad = lambda i, text: text.rjust(width[i]) if numeric[i] else text.ljust(width[i])  # noqa: E731
    lines = ["| " + " | ".join(pad(i, c) for i, c in enumerate(columns)) + " |",
             "|" + "|".join(("-" * (width[i] + 1) + ":") if numeric[i] else ("-" * (width[i] + 2))
                            for i in range(len(columns))) + "|"]
    lines += ["| " + " | ".join(pad(i, text) for i, text in enumerate(row)) + " |" for row in cells]
    return "\n".join(lines)


def csv_table(rows: Rows) -> str:
    """``rows`` as CSV with a header row (numbers at full precision, a missing value empty)."""
    import csv
    import io

    columns, records = _records(rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in records:
        writer.writerow([_cell(r.get(c), precise=True) for c in columns])
    return out.getvalue().rstrip("\n")


def print_tables(tables: Mapping[str, Rows], fmt: str, stream=None) -> None:
    """Print ``tables`` (name -> rows) as ``fmt`` (``md`` or ``csv``, see the module docstring).

    Parameters
    ----------
    tables : mapping of str to list of dict or DataFrame
        The command's tables in order; one table prints without a heading or ``table`` column.
    fmt : {"md", "csv"}
        The format.
    stream : text stream, optional
        Default ``sys.stdout``.
    """
    stream = stream or sys.stdout
    if fmt not in ("md", "csv"):
        raise ValueError(f"print_tables prints md or csv, not {fmt!r}")
    if fmt == "md":
        parts = [markdown_table(rows) if len(tables) == 1 else f"### {name}\n\n{markdown_table(rows) or '(none)'}"
                 for name, rows in tables.items()]
        print("\n\n".join(parts), file=stream)
        return
    if len(tables) == 1:
        [rows] = tables.values()
        print(csv_table(rows), file=stream)
        return
    merged = []
    for name, rows in tables.items():
        merged += [{"table": name, **r} for r in _records(rows)[1]]
    print(csv_table(merged), file=stream)
