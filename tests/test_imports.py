"""The package's structure: no import cycles, no command-line parsing below ``crossover/cli/``, small modules.

The import graph is read from the source with :mod:`ast` (nothing is imported): every ``import`` and
``from ... import`` of a ``crossover`` module, relative or absolute, at module level or inside a
function, is an edge. Importing ``crossover.a.b`` also runs ``crossover/a/__init__.py``, so it is an
edge to ``crossover.a`` too (unless the importer lives inside ``crossover.a``, which is then already
being imported). Imports under ``if TYPE_CHECKING:`` never run and are not edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "crossover"

#: Library modules that still build a parser, each with why and until when. The test fails when an
#: entry no longer imports argparse, so the exemption goes with the reason.
ARGPARSE_ALLOWED = {
    "crossover.paper.numbers": "main() is the Makefile's `python -m crossover.paper.numbers` and the tests' "
                               "P.main; moving it under crossover/cli/ needs those callers changed too",
}
MAX_LINES = 500


# ------------------------------------------------------------------------------- the import graph
def package_modules(package_dir: Path) -> dict:
    """Dotted module name → source path, for every ``.py`` file of the package under ``package_dir``."""
    root = package_dir.parent
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Every Import/ImportFrom node of a module, at any depth, outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _owner(name: str, modules: dict):
    """The module that ``name`` (a module, or a name inside one) belongs to, or None outside the package."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, modules: dict) -> set:
    """The package modules that module ``name`` (source at ``path``) imports."""
    is_package = path.name == "__init__.py"
    targets = []
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.extend(alias.name for alias in node.names)
            continue
        if node.level:  # relative: from the importer's package, one level up per extra dot
            base = name if is_package else name.rpartition(".")[0]
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = f"{base}.{node.module}" if node.module else base
        else:
            source = node.module
        for alias in node.names:  # `from pkg import submodule` imports the submodule
            submodule = f"{source}.{alias.name}"
            targets.append(submodule if submodule in modules else source)
    found = set()
    for target in targets:
        owner = _owner(target, modules)
        if owner is None:
            continue
        found.add(owner)
        parent = owner.rpartition(".")[0]
        while parent:  # importing a.b.c runs a/__init__ and a/b/__init__ first
            if not (name == parent or name.startswith(parent + ".")):
                found.add(parent)
            parent = parent.rpartition(".")[0]
    found.discard(name)
    return found


def import_graph(package_dir: Path = PACKAGE) -> dict:
    """Module → the set of package modules it imports."""
    modules = package_modules(package_dir)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict) -> list:
    """One cycle per strongly connected component that has one, as a path ``[a, b, ..., a]``."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def connect(node):  # Tarjan's algorithm (the package is small: recursion is fine)
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    cycles = []
    for component in components:
        start = min(component)
        if len(component) == 1 and start not in graph.get(start, ()):
            continue
        # shortest way from start back to itself inside the component (breadth first)
        previous, frontier = {}, [start]
        while start not in previous:
            following = []
            for node in frontier:
                for nxt in sorted(graph.get(node, ())):
                    if nxt in component and nxt not in previous:
                        previous[nxt] = node
                        following.append(nxt)
            frontier = following
        path, node = [start], previous[start]
        while node != start:
            path.append(node)
            node = previous[node]
        cycles.append([start] + path[1:][::-1] + [start])
    return sorted(cycles)


def _reachable(graph: dict, start: str) -> set:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _tangled_with(graph: dict, node: str) -> set:
    """The modules on some cycle through ``node`` (its strongly connected component)."""
    return {other for other in _reachable(graph, node) if node in _reachable(graph, other)}


# ----------------------------------------------------------------------------------------- tests
def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "crossover.cli" in graph and "crossover.cli.args" in graph["crossover.cli.analysis"]
    cycles = find_cycles(graph)
    report = [f"{' -> '.join(c)}   (all tangled with it: {', '.join(sorted(_tangled_with(graph, c[0])))})"
              for c in cycles]
    assert not cycles, "import cycles in crossover/:\n" + "\n".join(report)


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}) == []


def test_the_graph_sees_relative_function_level_and_parent_package_imports(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from .sub import helpers\n")  # function level, relative
    (package / "sub" / "__init__.py").write_text("from . import helpers\n")
    (package / "sub" / "helpers.py").write_text("import os\n")
    (package / "sub" / "tool.py").write_text("from ..low import f\nfrom .helpers import x\n")
    (package / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import low\n")
    graph = import_graph(package)
    assert graph["pkg.low"] == {"pkg.sub.helpers", "pkg.sub"}  # importing pkg.sub.helpers runs pkg/sub/__init__
    assert graph["pkg.sub.tool"] == {"pkg.low", "pkg.sub.helpers"}  # its own package is not an edge
    assert graph["pkg.typed"] == set()
    assert find_cycles(graph) == []
    (package / "sub" / "helpers.py").write_text("import pkg.low as low\n")  # now low -> helpers -> low
    assert find_cycles(import_graph(package)) == [["pkg.low", "pkg.sub.helpers", "pkg.low"]]


def _imports_argparse(path: Path) -> bool:
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module]
        if any(n and n.split(".")[0] == "argparse" for n in names):
            return True
    return False


def test_only_the_cli_parses_arguments():
    offenders = [name for name, path in package_modules(PACKAGE).items()
                 if not (name == "crossover.cli" or name.startswith("crossover.cli."))
                 and name not in ARGPARSE_ALLOWED and _imports_argparse(path)]
    assert not offenders, f"argparse outside crossover/cli/: {offenders}"
    modules = package_modules(PACKAGE)
    stale = [name for name in ARGPARSE_ALLOWED if name not in modules or not _imports_argparse(modules[name])]
    assert not stale, f"no longer importing argparse, drop from ARGPARSE_ALLOWED: {stale}"


def test_no_module_is_over_500_lines():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines())
             for name, path in package_modules(PACKAGE).items()}
    big = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"


#: The floors of the package, bottom first: a module may import its own floor and those below, never
#: one above. Top-level modules (errors, units, axes, ...) are the ground floor; the CLI is the roof.
LAYERS = ("results", "measurement", "opcost", "fit", "analysis", "plots", "paper", "cli")
#: What the top level may hold besides the subpackages: the package's __init__, __main__, errors and a
#: few small shared modules.
TOP_LEVEL = {"__init__", "__main__", "errors", "units", "axes", "progress", "shipped_data", "crossings",
             "lazy_exports", "jsonable"}


def layer_of(name: str) -> int:
    """The floor of module ``name``: 0 for the top level, 1 + its subpackage's index in :data:`LAYERS`."""
    parts = name.split(".")
    if len(parts) < 2 or parts[1] not in LAYERS:
        return 0
    return 1 + LAYERS.index(parts[1])


def upward_imports(graph: dict) -> list:
    """Every edge ``(importer, imported)`` that points up a floor."""
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if layer_of(b) > layer_of(a) and a != "crossover.__main__")  # the entry point: python -m


def test_imports_point_down_the_floors():
    graph = import_graph()
    assert {layer_of(n) for n in graph} == set(range(len(LAYERS) + 1)), "every floor holds modules"
    upward = upward_imports(graph)
    assert not upward, "imports pointing up a floor:\n" + "\n".join(f"{a} -> {b}" for a, b in upward)


def test_the_floor_check_finds_an_upward_import():
    graph = {"crossover.results.store": {"crossover.plots.checks"}, "crossover.plots.checks": {"crossover.errors"}}
    assert upward_imports(graph) == [("crossover.results.store", "crossover.plots.checks")]


def test_the_top_level_holds_only_small_shared_modules():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top <= TOP_LEVEL, f"modules at the top level that belong in a subpackage: {sorted(top - TOP_LEVEL)}"
    small = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py") if p.stem not in ("__init__",)}
    assert all(n <= 250 for n in small.values()), small


def test_no_public_name_is_shadowed_by_a_submodule():
    """A package's lazily imported public name must not be a submodule's name too: importing the
    submodule would replace the name on the package (``crossover.plots.style`` the function, not a module)."""
    import importlib

    clashes = []
    for init in PACKAGE.rglob("__init__.py"):
        name = ".".join(init.parent.relative_to(PACKAGE.parent).parts)
        exports = getattr(importlib.import_module(name), "_EXPORTS", {})
        submodules = {p.stem for p in init.parent.glob("*.py")} | {p.parent.name for p in init.parent.glob("*/__init__.py")}
        clashes += [f"{name}.{n}" for n in exports if n in submodules]
    assert not clashes, f"public names that are also submodules: {clashes}"


def test_predicting_the_toy_needs_no_torch():
    """``crossover predict`` of the toy imports no torch (~0.8 s): the FLOP counts, the shipped toy traces'
    torch version, this machine's label (on a CPU-only build of torch), the noise floors and a calibrated
    model's features come without it; and what it reads of the installed torch instead is what torch says."""
    import json
    import os
    import subprocess
    import sys

    import torch

    code = """
import json, sys
from crossover.analysis import decision
from crossover.fit import toy_trace
from crossover.fit.latency_models import features
from crossover.measurement import torch_install
from crossover.opcost.profiles import load_profile, shipped_profile_files
from crossover.shipped_data import shipped_results_dir
assert toy_trace.shipped_templates(), "the shipped toy traces are of another torch"
decision.this_machine()
decision.noise_floors([str(shipped_results_dir())])
cpu = [load_profile(p) for p in shipped_profile_files()]
features(128, [1, 8], [1, 64], calibration=next(p for p in cpu if p.device == "cpu"))
print(json.dumps({"torch": "torch" in sys.modules, "version": torch_install.torch_version_field("__version__"),
                  "cpu_only": torch_install.cpu_only_torch()}))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    cpu_only = torch.version.cuda is None and torch.version.hip is None
    # a GPU build asks torch whether a GPU is there (the machine's label names it)
    assert found == {"torch": not cpu_only, "version": str(torch.__version__), "cpu_only": cpu_only}
