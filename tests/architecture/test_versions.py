"""Which Claude Code ctxsim stands for: the pytest header names it, and no text names a version without a capture.

Expected values are read here from the installed files themselves (the SDK's metadata, its bundled
``claude.version``, the capture directories), not from :mod:`ctxsim.wire._versions`, which these tests judge.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import claude_agent_sdk
import pytest

import ctxsim
from ctxsim.tools import TOOLS
from ctxsim.wire._versions import captured_versions, installed_cli_version, sdk_bundled_file, version_key

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(ctxsim.__file__).resolve().parent
SHIPPED = sorted((p.name.removeprefix("claude-code-") for p in (PACKAGE / "wire" / "captures").iterdir()),
                 key=lambda v: tuple(map(int, v.split("."))))

CLI_VERSION = re.compile(r"(?<![\d.])2\.\d+\.\d+(?![\d.])")
"""A Claude Code version (2.x.y; the SDK's are 0.x.y, Python's 3.x)."""
TOOL_VERSION = re.compile("(?:" + "|".join(sorted({re.escape(name) for tool in TOOLS.values() for name in (
    tool.name, re.split(r"@|==", tool.package.rsplit("/", 1)[-1])[0])}, key=len, reverse=True))
    + r")(?:@|==| )\d+\.\d+\.\d+")
"""A shipped statusline tool's pinned version (``ccstatusline 2.x.y``, ``ccstatusline@2.x.y``), not Claude Code's."""


def _texts() -> list[Path]:
    """README, the documentation site's pages, the benchmarks' README, and every source file (its docstrings,
    comments and error messages)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "benchmarks").glob("*.md")),
            *sorted(PACKAGE.rglob("*.py"))]


def test_the_captured_versions_are_the_capture_directories() -> None:
    assert captured_versions() == SHIPPED and len(SHIPPED) >= 3


def test_the_installed_cli_is_read_from_the_sdk() -> None:
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude.version"
    assert installed_cli_version() == bundled.read_text().split()[0]
    assert version_key("2.1.332") > version_key("2.1.40") > version_key("2.1.4")
    assert sdk_bundled_file("claude.version") == bundled and sdk_bundled_file("claude") == bundled.with_suffix("")


def test_one_module_names_the_sdks_private_bundled_directory() -> None:
    naming = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                    if re.search(r"""["']_bundled["']""", p.read_text(encoding="utf-8")))
    assert naming == ["wire/_versions.py"], naming


def test_every_claude_code_version_named_in_the_docs_has_a_capture() -> None:
    """A version named in README, the docs, the benchmarks' notes or any docstring, comment or error message, from
    the oldest captured release on, has its capture: what is said of it was recorded, and a newer release is read,
    not claimed."""
    named: dict[str, list[str]] = {}
    for path in _texts():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for version in CLI_VERSION.findall(TOOL_VERSION.sub("", line)):
                named.setdefault(version, []).append(f"{path.relative_to(ROOT)}:{number}")
    # A version older than every capture is history (a changelog's fix, a reported bug's release): it cannot go
    # stale. One within or past the captured range is a claim about what a CLI does: it needs its capture.
    oldest = version_key(SHIPPED[0])
    missing = {v: places for v, places in named.items() if v not in SHIPPED and version_key(v) >= oldest}
    assert any(version_key(v) < oldest for v in named)  # the rule above is exercised: citations exist
    assert not missing, ("Claude Code versions named without a capture in ctxsim/wire/captures (say what holds "
                         "without the version, or record it with `ctxsim fidelity --record`): "
                         + "; ".join(f"{v} at {', '.join(p[:3])}" for v, p in sorted(missing.items())))


def test_the_pytest_header_names_the_installed_and_the_captured_versions(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # the suite's pytest-asyncio
    pytester.makepyfile("def test_nothing():\n    assert True\n")
    result = pytester.runpytest("-p", "no:randomly")
    cli = (Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude.version").read_text().split()[0]
    sdk = importlib.metadata.version("claude-agent-sdk")
    result.stdout.fnmatch_lines([f"ctxsim: Claude Code {cli} (claude-agent-sdk {sdk}); wire checked against "
                                 f"Claude Code {', '.join(SHIPPED)}"])


def test_ci_pins_the_sdk_that_bundles_the_newest_recorded_release() -> None:
    """CI's blocking tiers run on the SDK pinned in .ci/constraints-recorded.txt (and on the floor): it must bundle
    the newest release ctxsim recorded, read from the captures' own ``sdk_version`` (no install needed). A release
    recorded without moving the pin fails here: bump the constraints file to the new captures' SDK."""
    pins = [line.split("#")[0].strip() for line in (ROOT / ".ci" / "constraints-recorded.txt").read_text().splitlines()]
    pins = [pin for pin in pins if pin]
    assert len(pins) == 1 and pins[0].startswith("claude-agent-sdk=="), pins  # the SDK, and nothing else
    pinned = pins[0].removeprefix("claude-agent-sdk==")
    bundles: dict[str, set[str]] = {}  # SDK version -> the CLI versions recorded with it
    for version in SHIPPED:
        for capture in sorted((PACKAGE / "wire" / "captures" / f"claude-code-{version}").glob("*.json")):
            recorded = json.loads(capture.read_text())
            assert recorded["cli_version"] == version, capture
            bundles.setdefault(recorded["sdk_version"], set()).add(version)
    assert all(len(clis) == 1 for clis in bundles.values()), bundles  # one SDK, one bundled CLI
    assert bundles.get(pinned) == {SHIPPED[-1]}, (
        f"ctxsim: .ci/constraints-recorded.txt pins claude-agent-sdk {pinned}, which bundles "
        f"{sorted(bundles.get(pinned, {'a CLI with no capture'}))}, not the newest recorded release {SHIPPED[-1]} "
        f"(recorded with claude-agent-sdk {sorted(v for v, c in bundles.items() if SHIPPED[-1] in c)})")
