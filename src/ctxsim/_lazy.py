"""Lazy package faces (PEP 562): a package's public names are imported from their modules on first use.

``import ctxsim`` runs in every pytest session where the plugin is installed, and the fake agent reads the
reference's prompts, so no face may load the SDK before a name that needs it is used.

A face declares its public names once, as the explicit re-exports of its ``if TYPE_CHECKING:`` block::

    if TYPE_CHECKING:
        from ._fake import FakeAgent as FakeAgent

    __getattr__, __dir__ = lazy_face(globals())

Type checkers read that block; :func:`lazy_face` reads the same block from the face's source, so the names, the
modules they load from and ``__all__`` (in the order declared) come from one list.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["declared_exports", "internal_names", "lazy_face"]


def declared_exports(source: str, filename: str = "<face>") -> dict[str, str]:
    """Every name ``source`` re-exports in its top-level ``if TYPE_CHECKING:`` block, mapped to the relative
    module it comes from (``".world"``); a ``from X import A`` without ``as A`` there is an error, since a type
    checker in strict mode would not take it as an export."""
    exports: dict[str, str] = {}
    for node in ast.parse(source, filename).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom):
                continue
            module = "." * statement.level + (statement.module or "")
            for alias in statement.names:
                if alias.asname != alias.name:
                    raise ImportError(f"ctxsim: {filename}:{statement.lineno}: '{alias.name}' is imported without "
                                      f"'as {alias.name}': a face's TYPE_CHECKING block re-exports each name")
                exports[alias.name] = module
    return exports


def lazy_face(namespace: dict[str, Any], stable: Iterable[str] | None = None
              ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package whose globals are ``namespace``, and its ``__all__`` set: the
    names its ``TYPE_CHECKING`` block re-exports (:func:`declared_exports`).

    ``stable``: on a face the reference states as stable, the names it keeps stable for users; ``__all__`` is then
    those alone, in the order declared. The face's other names stay importable from it, for ctxsim's own packages
    and tests (:func:`internal_names`): they are documented for contributors and may change in any release.

    A name is looked up in its module at every access (a dictionary look-up once the module is imported), never
    copied into the face.
    """
    package = namespace["__name__"]
    exports = declared_exports(Path(namespace["__file__"]).read_text(encoding="utf-8"), namespace["__file__"])
    kept = set(exports) if stable is None else set(stable)
    unknown = sorted(kept - set(exports))
    if unknown:
        raise ImportError(f"ctxsim: {namespace['__file__']}: stable names the face does not declare: {unknown}")
    namespace["__all__"] = [name for name in exports if name in kept]

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # Not kept in the face: the name is always the one its module holds now, so a module imported afresh (as
        # pytest's in-process runs do when they restore sys.modules) never leaves the face with a stale class.
        return getattr(importlib.import_module(module, package), name)

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


def internal_names(module: ModuleType) -> list[str]:
    """The names ``module`` (a face) declares but keeps out of its ``__all__``: importable for ctxsim's own packages
    and tests, not stable (empty for a face without a ``stable`` list)."""
    file = module.__file__ or ""
    source = Path(file).read_text(encoding="utf-8") if file.endswith("__init__.py") else ""
    if "lazy_face(" not in source:
        return []
    stable = set(getattr(module, "__all__", ()))
    return [name for name in declared_exports(source, file) if name not in stable]
