"""Lazy package faces (PEP 562): a package's public names are imported from their modules on first use.

``import ctxsim`` runs in every pytest session where the plugin is installed, and the fake agent reads the
reference's prompts, so neither may load the SDK before a name that needs it is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each public name to its module (relative).

    A name is imported once, then kept in ``namespace`` (the package's globals), so later lookups are plain.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(namespace.get("__all__", exports))

    return __getattr__, __dir__
