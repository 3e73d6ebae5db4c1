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


def test_the_usage_readers_and_scenario_loading_need_no_sdk() -> None:
    # the plain usage readers moved out of the tracker module, so a recording's truth is derived without the SDK
    code = ("import sys; from ctxsim.reference.usage import prompt_tokens; import ctxsim.scenario; "
            "assert prompt_tokens({'input_tokens': 3, 'cache_creation_input_tokens': 5, "
            "'cache_read_input_tokens': 7}) == 15; print('claude_agent_sdk' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_freezing_the_imports_is_undone_with_the_collector_s_thresholds() -> None:
    # in a fresh process: the freeze is process-wide, and this test's own worker must not be left frozen
    code = """if True:
        import gc
        from ctxsim import _lazy
        before = gc.get_threshold()
        assert gc.get_freeze_count() == 0
        assert _lazy.freeze_imports(new_modules=0)
        assert gc.get_freeze_count() > 1_000                         # the heap the imports left
        assert gc.get_threshold() == (max(before[0], _lazy.YOUNG_THRESHOLD), *before[1:])
        assert not _lazy.freeze_imports()                            # nothing new imported since
        _lazy.thaw_imports()
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == before
        print("ok")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
