"""The package's on-disk cache: where it lives, whether it is on, and pickles written atomically.

Two things are cached: fits (:mod:`crossover.fit.cache`, one pickle per fit in the cache directory)
and loaded results (:func:`crossover.results.store.load_results`, in its ``loaded/`` subfolder: a CLI
call that reads the shipped tree parses and combines its CSVs in about a second, a pickle loads in a
tenth of that). A key hashes everything the stored object depends on, the source of the code that made
it included, so a stale entry is never read; a missing, unreadable or stale file is simply recomputed.

The cache lives in ``$CROSSOVER_CACHE_DIR`` (default ``~/.cache/crossover/fits``). It holds only what
this package wrote there (pickle executes code when loaded: do not point the cache at a directory others
can write). ``CROSSOVER_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

__all__ = ["cache_dir", "enabled", "read_pickle", "write_pickle", "source_digest"]


def cache_dir() -> Path:
    """Where fits are stored: ``$CROSSOVER_CACHE_DIR`` or ``~/.cache/crossover/fits``."""
    configured = os.environ.get("CROSSOVER_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "crossover" / "fits"


def enabled() -> bool:
    """False when ``CROSSOVER_NO_CACHE`` is set to anything but ``""``/``0``."""
    return os.environ.get("CROSSOVER_NO_CACHE", "") in ("", "0")


def read_pickle(path: Path) -> Optional[object]:
    """The object stored at ``path``, or None (absent or unreadable)."""
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None


def write_pickle(path: Path, value: object) -> None:
    """Store ``value`` at ``path`` atomically (a cache that cannot be written is skipped)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, suffix=".tmp") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, path)
    except OSError:
        pass


@lru_cache(maxsize=None)
def source_digest(*modules: str) -> str:
    """A digest of the source of ``modules`` (paths under the package without ``.py``, e.g.
    ``"results/store"``; a folder name digests every module in it)."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for name in modules:
        path = package / name
        files = sorted(path.glob("*.py")) if path.is_dir() else [package / f"{name}.py"]
        for file in files:
            if not file.exists():
                raise FileNotFoundError(f"the cache's code digest names {file}, which does not exist")
            digest.update(file.name.encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()
