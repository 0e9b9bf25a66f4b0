"""Fits computed once and reused: an on-disk cache of :class:`crossover.fit.series_fit.SeriesFit` objects.

Fitting a series (grouped cross-validation of every candidate model, then a bootstrap of the chosen
one) takes seconds; ``crossover predict``, ``crossover figures``, the paper's numbers and the
notebook fit the same series of the same shipped data again and again. :func:`key_of` hashes
everything a fit depends on (the fitted rows' sizes, latencies, noise floors and raw repeats, the
series' key, every option, the seed, and the source of the fitting code itself), so a stored fit is
reused only when recomputing it would give the same object; change the data, an option or the
model code and the key changes.

The cache lives in ``$CROSSOVER_CACHE_DIR`` (default ``~/.cache/crossover/fits``), one pickle per
fit, written atomically. It holds only what this package wrote there (pickle executes code when
loaded: do not point the cache at a directory others can write). ``CROSSOVER_NO_CACHE=1`` turns it
off; a missing, unreadable or stale file is simply recomputed.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from ..results.disk_cache import cache_dir, enabled, read_pickle, write_pickle

__all__ = ["cache_dir", "enabled", "key_of", "code_digest", "load", "store", "clear"]

#: Bumped when the stored object's layout changes.
CACHE_VERSION = 1
#: Modules whose source decides a fit's result: a change to any of them invalidates every key.
_FITTING_MODULES = ("fit/series_fit", "fit/latency_models", "fit/trust_region", "fit/validation", "fit/bootstrap",
                    "fit/calibrated_model", "fit/toy_trace", "results/statistics", "measurement/toy_model",
                    "measurement/toy_counts", "axes", "opcost/module_predict", "opcost/op_costs", "opcost/gpu_ops",
                    "opcost/layer_primitives", "opcost/trace", "opcost/profiles")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of the fitting code's source (:data:`_FITTING_MODULES`, and every module of
    ``crossover/opcost``, whose op costs a calibrated fit uses): part of every key."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    opcost = sorted(f"opcost/{p.stem}" for p in (package / "opcost").glob("*.py"))
    for name in dict.fromkeys((*_FITTING_MODULES, *opcost)):
        path = package / f"{name}.py"
        if not path.exists():
            raise FileNotFoundError(f"the fit cache's code digest names {path}, which does not exist")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def key_of(frame: pd.DataFrame, series_key: dict, options: dict) -> str:
    """The cache key of fitting ``frame`` (checked rows, one per size) of the series ``series_key``
    with ``options`` (every keyword of :func:`crossover.fit.series_fit.fit_series`)."""
    digest = hashlib.sha256()
    digest.update(f"v{CACHE_VERSION}:{code_digest()}".encode())
    digest.update(json.dumps({k: str(v) for k, v in series_key.items()}, sort_keys=True).encode())
    digest.update(json.dumps({k: repr(v) for k, v in options.items()}, sort_keys=True).encode())
    columns = [c for c in ("d_model", "n_layers", "batch_size", "latency_s", "latency_deviation") if c in frame]
    digest.update(np.ascontiguousarray(frame[columns].to_numpy(dtype=float)).tobytes())
    if "raw_times_s" in frame:
        for times in frame["raw_times_s"]:
            digest.update(np.asarray(times if isinstance(times, (tuple, list)) else (), dtype=float).tobytes())
            digest.update(b"|")
    return digest.hexdigest()


def load(key: str) -> Optional[object]:
    """The fit stored under ``key``, or None (absent or unreadable)."""
    return read_pickle(cache_dir() / f"{key}.pkl")


def store(key: str, fit: object) -> None:
    """Store ``fit`` under ``key`` (atomically; a cache that cannot be written is skipped)."""
    write_pickle(cache_dir() / f"{key}.pkl", fit)


def clear() -> int:
    """Delete every stored fit; returns how many."""
    removed = 0
    for path in cache_dir().glob("*.pkl"):
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed
