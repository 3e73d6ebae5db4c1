"""The public surface: what ``import ctxsim`` promises, and that it stays cheap."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import ctxsim


def test_all_lists_exactly_the_lazy_exports() -> None:
    assert set(ctxsim.__all__) == set(ctxsim._EXPORTS)
    for name in set(ctxsim._EXPORTS) - {"__version__"}:
        assert getattr(ctxsim, name).__name__ == name


def test_the_version_is_the_installed_distribution_s() -> None:
    assert ctxsim.__version__ == version("pytest-ctxsim")


def test_importing_the_package_and_plugin_loads_neither_the_sdk_nor_yaml() -> None:
    code = ("import sys, ctxsim, ctxsim.plugin; "
            "print(sorted(m for m in ('claude_agent_sdk', 'yaml', 'hypothesis') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
