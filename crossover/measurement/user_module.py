"""The user's own model: load a factory from a file, parse a sample shape, build the model.

``crossover measure --model FILE.py:FACTORY`` and ``crossover predict --model ...`` name a callable in
a Python file that returns an ``nn.Module``; :func:`load_factory` imports the file by its path (it
need not be on ``sys.path`` nor in a package) and returns the callable. ``--input-shape 3,32,32`` is
one sample's shape (:func:`parse_input_shape`): the batch dimension is added in front. The input is
float32 unless ``--input-dtype`` says otherwise (``long`` for token ids, see :data:`INPUT_DTYPES`).

Every mistake is a :class:`crossover.errors.ConfigError` with a one-line message.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from ..errors import ConfigError

__all__ = ["load_factory", "build_model", "parse_input_shape", "input_dtype", "INPUT_DTYPES"]

#: ``--input-dtype`` names → torch dtype names.
INPUT_DTYPES = {"float32": "float32", "float": "float32", "float16": "float16", "bfloat16": "bfloat16",
                "long": "int64", "int64": "int64", "int": "int32", "int32": "int32"}


def _split_spec(spec: str) -> tuple:
    path, sep, name = str(spec).rpartition(":")
    if not sep or not path or not name:
        raise ConfigError(f"--model must be FILE.py:FACTORY (a file and a callable in it), got {spec!r}")
    return Path(path), name


def load_factory(spec: str):
    """The callable ``FACTORY`` of ``"path/file.py:FACTORY"``.

    The file is imported as a fresh module (its directory is put on ``sys.path`` while it is
    imported, so it can import files beside it).

    Raises
    ------
    ConfigError
        No ``:FACTORY`` part, the file does not exist or is not a ``.py`` file, importing it fails,
        or it has no callable of that name.
    """
    path, name = _split_spec(spec)
    if not path.exists():
        raise ConfigError(f"model file {path} does not exist")
    if not path.is_file() or path.suffix != ".py":
        raise ConfigError(f"model file {path} is not a .py file")
    module_name = f"crossover_user_model_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader_spec)
    directory = str(path.resolve().parent)
    sys.path.insert(0, directory)
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: any error, reported on one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ConfigError(f"importing {path} failed: {type(exc).__name__}: {first}") from None
    finally:
        if sys.path and sys.path[0] == directory:
            sys.path.pop(0)
    factory = getattr(module, name, None)
    if factory is None:
        available = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
                           and getattr(v, "__module__", None) == module_name)
        hint = f" (callables defined there: {', '.join(available)})" if available else ""
        raise ConfigError(f"{path} has no factory {name!r}{hint}")
    if not callable(factory):
        raise ConfigError(f"{path}:{name} is not callable (it is a {type(factory).__name__})")
    return factory


def build_model(spec: str):
    """Call the factory of ``spec`` with no arguments and check it returns an ``nn.Module``.

    Raises
    ------
    ConfigError
        As :func:`load_factory`, or the factory fails or returns something else than a module.
    """
    import torch

    factory = load_factory(spec)
    try:
        model = factory()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ConfigError(f"calling {spec} failed: {type(exc).__name__}: {first}") from None
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(f"{spec} returned {type(model).__name__}, not a torch.nn.Module")
    return model


def parse_input_shape(text: str) -> tuple:
    """``"3,32,32"`` → ``(3, 32, 32)``: one sample's shape, every dimension a positive integer.

    Raises
    ------
    ConfigError
        Empty, or a dimension that is not a positive integer.
    """
    parts = [p.strip() for p in str(text).replace("x", ",").split(",")]
    if not parts or any(not p for p in parts):
        raise ConfigError(f"--input-shape must be positive integers separated by commas, e.g. 3,32,32; got {text!r}")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise ConfigError(f"--input-shape must be positive integers separated by commas, e.g. 3,32,32; "
                          f"got {text!r}") from None
    if any(n <= 0 for n in shape):
        raise ConfigError(f"--input-shape dimensions must be positive, got {text!r}")
    return shape


def input_dtype(name: str = "float32"):
    """The torch dtype of ``--input-dtype`` (``float32`` by default; ``long`` for token ids)."""
    import torch

    if name not in INPUT_DTYPES:
        raise ConfigError(f"unknown input dtype {name!r}; expected one of {', '.join(INPUT_DTYPES)}")
    return getattr(torch, INPUT_DTYPES[name])
