"""The house rules of the source tree: one layer per module or package, data flowing one way, explicit faces.

Read from the source with ``ast`` (deferred and ``TYPE_CHECKING`` imports included), so an import that runs back up
the layers fails here even when nothing executes it yet.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import ctxsim

SRC = Path(ctxsim.__file__).resolve().parent

LAYERS = (
    "ctxsim._version",
    "ctxsim._lazy",
    "ctxsim._sync",
    "ctxsim.processes",
    "ctxsim.corpus",
    "ctxsim.world",
    "ctxsim.wire",
    "ctxsim.faults",
    "ctxsim.surfaces",
    "ctxsim.sdk",
    "ctxsim.recordings",
    "ctxsim.reference",
    "ctxsim.agent",
    "ctxsim.trackers",
    "ctxsim.tools",
    "ctxsim.check",
    "ctxsim.loops",
    "ctxsim.testing",
    "ctxsim.scenario",
    "ctxsim.importer",
    "ctxsim.strategies",
    "ctxsim.runner",
    "ctxsim.fuzz",
    "ctxsim.score",
    "ctxsim.live",
    "ctxsim.serve",
    "ctxsim.lab",
    "ctxsim.plugin",
    "ctxsim.cli",
    "ctxsim",
)
"""The layers, lowest first: a module may import from its own layer and the layers before it, never after it.
A module belongs to the longest entry its name starts with; a package is one layer (no module of a package sits
below another layer that its siblings sit above)."""

MAX_LINES = 500
"""A module's lines at most: past it, it is split by concept inside its package."""

MAX_PACKAGE_LINES = 2_500
"""A package's lines at most, counting its own modules (a subpackage counts apart): past it, it is split by concept
into subpackages, each with a face of its own."""


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    matches = [i for i, layer in enumerate(LAYERS) if module == layer or module.startswith(layer + ".")]
    assert matches, f"{module} is in no layer: add it to LAYERS"
    return max(matches, key=lambda i: len(LAYERS[i]))


def _imports(module: str) -> set[str]:
    """Every ctxsim module ``module`` imports, anywhere in its body.

    The root package is left out: it is the lazy face every module's import runs first anyway (``__version__``).
    """
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in MODULES]
            # ``from pkg import submodule`` depends on the submodule; the package runs first in any case
            names = submodules if len(submodules) == len(node.names) else [target, *submodules]
        else:
            continue
        found.update(n for n in names if n in MODULES and n not in (module, "ctxsim"))
    return found


GRAPH = {module: _imports(module) for module in MODULES}


def test_there_is_no_project_wide_private_folder() -> None:
    assert not (SRC / "_internal").exists()
    assert not [m for m in MODULES if "._internal" in m]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_never_run_up_the_layers(module: str) -> None:
    upward = sorted(t for t in GRAPH[module] if _layer(t) > _layer(module))
    assert not upward, f"{module} ({LAYERS[_layer(module)]}) imports from higher layers: {upward}"


def test_there_is_no_import_cycle() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not cycles


def _package(module: str) -> str:
    """The package (or top-level module) ``module`` belongs to: ``ctxsim.trackers._base`` -> ``ctxsim.trackers``."""
    return ".".join(module.split(".")[:2])


def test_no_two_packages_import_each_other() -> None:
    # A package is one layer: none may import from a package that imports from it, through any of their modules
    # (the reference's restart loop once imported trackers.base while trackers.catalogue imported the reference).
    edges = {(_package(m), _package(t)) for m, targets in GRAPH.items() for t in targets}
    both_ways = sorted((a, b) for a, b in edges if a < b and (b, a) in edges)
    assert not both_ways, f"packages importing each other: {both_ways}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_passes_the_size_at_which_it_is_split(module: str) -> None:
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines: split it by concept inside its layer's package"


def _package_lines() -> dict[str, int]:
    """Every package (a directory with an ``__init__.py``), by dotted name, with the lines of its own modules."""
    return {".".join(init.parent.relative_to(SRC.parent).parts):
            sum(len(path.read_text().splitlines()) for path in init.parent.glob("*.py"))
            for init in sorted(SRC.rglob("__init__.py"))}


PACKAGE_LINES = _package_lines()


@pytest.mark.parametrize("package", sorted(PACKAGE_LINES))
def test_no_package_passes_the_size_at_which_it_is_split(package: str) -> None:
    lines = PACKAGE_LINES[package]
    assert lines <= MAX_PACKAGE_LINES, (f"{package} has {lines} lines in its own modules: split it by concept into "
                                        f"subpackages, each with a face of its own")


PUBLIC = sorted(m for m in MODULES if not any(part.startswith("_") for part in m.split(".")))


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_module_says_what_it_exports_and_has_it(module: str) -> None:
    loaded = importlib.import_module(module)
    exported = getattr(loaded, "__all__", None)
    assert exported is not None, f"{module} has no __all__"
    assert len(set(exported)) == len(exported), f"{module}.__all__ repeats a name"
    missing = [name for name in exported if not hasattr(loaded, name)]
    assert not missing, f"{module}.__all__ names what it does not have: {missing}"
    assert loaded.__doc__, f"{module} does not say what it is for"
