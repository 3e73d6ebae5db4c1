"""The adapters to third parties' private hooks: each is the only module that touches them, its hooks exist in the
installed version, and that version is one the adapter (and ``pyproject.toml``) admits."""

from __future__ import annotations

import ast
import importlib.metadata
import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

import ctxsim
from ctxsim.fuzz import _hypothesis
from ctxsim.sdk import _sdk_internals

SRC = Path(ctxsim.__file__).resolve().parent
PYPROJECT = (SRC.parents[1] / "pyproject.toml").read_text()

PRIVATE = {
    "claude_agent_sdk._internal": "sdk/_sdk_internals.py",
    "hypothesis.internal": "fuzz/_hypothesis.py",
}


def _private_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        found.update(prefix for prefix in PRIVATE for name in names if name.startswith(prefix))
    return found


@pytest.mark.parametrize("prefix", sorted(PRIVATE))
def test_one_module_imports_each_third_partys_private_modules(prefix: str) -> None:
    users = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if prefix in _private_imports(p))
    assert users == [PRIVATE[prefix]], users


def test_one_module_sets_hypothesis_private_attributes() -> None:
    users = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "_hypothesis_internal" in p.read_text())
    assert users == [PRIVATE["hypothesis.internal"]], users


def test_the_sdk_adapter_admits_the_installed_sdk_and_its_hooks_exist() -> None:
    installed = importlib.metadata.version("claude-agent-sdk")
    assert installed in SpecifierSet(",".join(_sdk_internals.SUPPORTED)), installed
    declared = re.search(r'"claude-agent-sdk(>=[^"]+)"', PYPROJECT)
    assert declared and SpecifierSet(declared.group(1)) == SpecifierSet(",".join(_sdk_internals.SUPPORTED))
    for module in _sdk_internals.transport_modules():
        assert isinstance(getattr(module, _sdk_internals.TRANSPORT_ATTRIBUTE), type), module.__name__
    message = _sdk_internals.parse_message({"type": "system", "subtype": "init", "session_id": "s"})
    assert type(message).__name__ == "SystemMessage"


def test_the_hypothesis_adapter_admits_the_installed_hypothesis_and_its_hooks_exist() -> None:
    installed = importlib.metadata.version("hypothesis")
    assert installed in SpecifierSet(_hypothesis.SUPPORTED), installed
    declared = re.search(r'"hypothesis(>=[^"]+)"', PYPROJECT)
    assert declared and SpecifierSet(declared.group(1)) == SpecifierSet(_hypothesis.SUPPORTED)
    assert _hypothesis.AVAILABLE_PROVIDERS is not None and "hypothesis" in _hypothesis.AVAILABLE_PROVIDERS
    assert _hypothesis.HypothesisProvider is not object

    def test() -> None: ...

    _hypothesis.key_database_entries(test, "tracker|tolerance=0")
    assert test._hypothesis_internal_add_digest == b"tracker|tolerance=0"  # type: ignore[attr-defined]
