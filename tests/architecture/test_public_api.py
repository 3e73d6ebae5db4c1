"""The public surface: what ``import ctxsim`` promises, where it ends, and that it stays cheap.

The boundary is measured from the source: every face declares its names once (its ``TYPE_CHECKING`` block, read by
``ctxsim._lazy.lazy_face``), the root exports what a first test needs, everything else is ``_private``.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import ctxsim
from ctxsim._lazy import declared_exports, internal_names

SRC = Path(ctxsim.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}
PUBLIC = sorted(m for m in MODULES if not any(part.startswith("_") for part in m.split(".")))
FACES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py" and "lazy_face" in p.read_text())


def test_the_root_exports_at_most_25_names_and_each_is_what_it_says() -> None:
    assert len(ctxsim.__all__) <= 25
    assert len(set(ctxsim.__all__)) == len(ctxsim.__all__)
    for name in set(ctxsim.__all__) - {"__version__"}:
        assert getattr(ctxsim, name).__name__ == name


def test_the_root_exports_what_the_first_test_needs_and_no_internals() -> None:
    for name in ("SessionBuilder", "assert_tracks", "run_tracker", "run_tracker_parsed", "ContextTracker",
                 "patch_sdk", "FakeTransport", "load_scenario", "check_restart_loop"):
        assert name in ctxsim.__all__
    for internal in ("render", "extract_checkpoint", "build_continuation_prompt"):
        assert internal not in ctxsim.__all__


def test_at_most_35_public_modules_and_4_modules_at_the_package_root() -> None:
    assert len(PUBLIC) <= 35, PUBLIC
    root = [p.name for p in SRC.glob("*.py")]
    assert len(root) <= 4, root


@pytest.mark.parametrize("face", FACES)
def test_each_face_declares_its_names_once_and_every_one_loads(face: str) -> None:
    module = importlib.import_module(face)
    declared = declared_exports(MODULES[face].read_text(), str(MODULES[face]))
    assert module.__all__ == [name for name in declared if name not in internal_names(module)]
    assert module.__all__ and set(internal_names(module)) <= set(declared)
    for name in declared:
        assert getattr(module, name) is not None, f"{face}.{name}"
        assert name in dir(module)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = module.no_such_name


def test_a_face_name_without_its_explicit_re_export_is_refused() -> None:
    with pytest.raises(ImportError, match=r"'A' is imported without 'as A'"):
        declared_exports("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .x import A\n", "face.py")


def _private_imports_across_packages(module: str) -> list[str]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("ctxsim"):
                continue
            names = [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("ctxsim")]
        else:
            continue
        for name in names:
            parts = name.split(".")
            # the first private part, below the root (ctxsim._lazy, _sync, _version serve every package)
            private = next((i for i, part in enumerate(parts) if i > 1 and part.startswith("_")
                            and not part.startswith("__")), None)
            if private is None:
                continue
            owner = ".".join(parts[:private])
            if not (module == owner or module.startswith(owner + ".")):
                out.append(name)
    return out


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_is_imported_across_packages(module: str) -> None:
    assert _private_imports_across_packages(module) == []


def test_no_module_writes_its_own_globals() -> None:
    offenders = [m for m, p in MODULES.items() if "globals().update" in p.read_text()]
    assert offenders == []


def test_the_version_is_the_installed_distribution_s() -> None:
    assert ctxsim.__version__ == version("pytest-ctxsim")


def test_importing_the_package_and_plugin_loads_neither_the_sdk_nor_yaml() -> None:
    code = ("import sys, ctxsim, ctxsim.plugin; "
            "print(sorted(m for m in ('claude_agent_sdk', 'yaml', 'hypothesis') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_usage_readers_and_scenario_loading_need_no_sdk() -> None:
    # the plain usage readers moved out of the tracker module, so a recording's truth is derived without the SDK
    code = ("import sys; from ctxsim.reference import prompt_tokens; import ctxsim.scenario; "
            "assert prompt_tokens({'input_tokens': 3, 'cache_creation_input_tokens': 5, "
            "'cache_read_input_tokens': 7}) == 15; print('claude_agent_sdk' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_freezing_the_imports_is_opt_in_and_undone_with_the_collector_s_thresholds() -> None:
    # in a fresh process: the freeze is process-wide, and this test's own worker must not be left frozen
    code = """if True:
        import gc
        import ctxsim, ctxsim.plugin
        assert gc.get_freeze_count() == 0                             # importing freezes nothing
        from ctxsim.runner import _gc
        before = gc.get_threshold()
        assert _gc.freeze_imports(new_modules=0)
        assert gc.get_freeze_count() > 1_000                         # the heap the imports left
        assert gc.get_threshold() == (max(before[0], _gc.YOUNG_THRESHOLD), *before[1:])
        assert not _gc.freeze_imports()                              # nothing new imported since
        _gc.thaw_imports()
        assert gc.get_freeze_count() == 0
        assert gc.get_threshold() == before
        print("ok")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


STABLE = {"ctxsim", "ctxsim.trackers", "ctxsim.sdk", "ctxsim.testing", "ctxsim.scenario", "ctxsim.strategies",
          "ctxsim.loops", "ctxsim.fuzz", "ctxsim.score", "ctxsim.live", "ctxsim.plugin"}
"""The faces a user imports and that keep their names' meaning: the rest are internal, documented for contributors."""
MAX_STABLE_NAMES = 100


def test_every_face_is_stated_stable_or_internal_on_the_reference_index() -> None:
    import re

    def faces(text: str) -> set[str]:
        return set(re.findall(r"^\| \[`(ctxsim(?:\.\w+)*)`\]", text, re.M))

    docs = SRC.parents[1] / "docs"
    stable_part = (docs / "reference" / "index.md").read_text().partition("## The stable surface")[2]
    stable_part = stable_part.partition("\n## ")[0]
    assert faces(stable_part) == STABLE - {"ctxsim.plugin"}
    assert "Plugin options and fixtures" in stable_part
    contributors = (docs / "contributors" / "index.md").read_text()
    assert "for people changing ctxsim" in contributors and "may change in any release" in contributors
    every = {m for m in PUBLIC if m.count(".") <= 1} - {"ctxsim.cli"}  # its page: cli.md
    internal = faces(contributors)
    assert every - STABLE <= internal, every - STABLE - internal
    assert not internal & STABLE and internal <= set(PUBLIC), internal - set(PUBLIC)  # a subpackage may have a page


def test_the_stable_faces_export_at_most_100_names_each_in_one_home() -> None:
    """What a user holds in their head: the stable faces' ``__all__`` together (a name counted once per face that
    exports it), and no name stable on two faces (the root's names are stable there only)."""
    homes: dict[str, list[str]] = {}
    for face in sorted(STABLE - {"ctxsim.plugin"}):  # the plugin's page is its options and fixtures
        for name in importlib.import_module(face).__all__:
            homes.setdefault(name, []).append(face)
    total = sum(len(faces) for faces in homes.values())
    assert total <= MAX_STABLE_NAMES, f"the stable faces export {total} names (at most {MAX_STABLE_NAMES})"
    assert total >= 50  # the faces are read, not empty
    twice = {name: faces for name, faces in homes.items() if len(faces) > 1}
    assert not twice, f"names stable on more than one face: {twice}"


def test_a_name_kept_out_of_a_stable_face_still_imports_from_it() -> None:
    import ctxsim.sdk
    import ctxsim.trackers

    assert "FakeTransport" not in ctxsim.sdk.__all__ and ctxsim.sdk.FakeTransport is ctxsim.FakeTransport
    assert "is_token_count" in internal_names(ctxsim.trackers) and callable(ctxsim.trackers.is_token_count)
    assert "CATALOGUE" not in ctxsim.trackers.__all__ and "CATALOGUE" not in internal_names(ctxsim.trackers)
    with pytest.raises(ImportError, match="stable names the face does not declare"):
        from ctxsim._lazy import lazy_face

        lazy_face({"__name__": "face", "__file__": str(MODULES["ctxsim.sdk"])}, stable=("no_such_name",))
