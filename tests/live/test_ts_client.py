"""The TypeScript client of ``ctxsim serve`` (``clients/typescript``, npm ``ctxsim-client``): it packs with
``npm pack --ignore-scripts`` declaring its types, its ``node --test`` suite passes, and a fresh project that installs
the packed tarball runs the docs' example (``clients/typescript/example/context.test.mjs``, at most 20 lines): one
scenario played by the Agent SDK's own CLI through serve, its verdict asserted. Each test skips, saying what is
missing, without node or npm (or, for the example, without the Agent SDK that ``examples/ts-agent``'s ``npm ci``
installs: ``.ci/run`` installs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"
EXAMPLE = CLIENT / "example" / "context.test.mjs"
SDK = ROOT / "examples" / "ts-agent" / "node_modules" / "@anthropic-ai"
SNIPPET = '--8<-- "clients/typescript/example/context.test.mjs"'


def need(*commands: str) -> None:
    for command in commands:
        if shutil.which(command) is None:
            pytest.skip(f"ctxsim: {command} is not on PATH: the TypeScript client cannot be packed or run")


def ctxsim_env() -> dict[str, str]:
    ctxsim = Path(sys.executable).with_name("ctxsim")
    assert ctxsim.is_file(), f"the ctxsim command is not beside {sys.executable}"
    return {**os.environ, "CTXSIM": str(ctxsim)}


def node_test(args: list[str], cwd: Path) -> dict[str, str]:
    done = subprocess.run(["node", "--test", *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=ctxsim_env(), check=False)
    summary = dict(re.findall(r"^# (pass|fail|skipped|cancelled) (\d+)$", done.stdout, re.MULTILINE))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return summary


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("node", "npm")
    out = tmp_path_factory.mktemp("packed")
    done = subprocess.run(["npm", "pack", "--ignore-scripts", "--json", "--pack-destination", str(out)], cwd=CLIENT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    packed = json.loads(done.stdout)[0]
    return out / packed["filename"]


def test_the_client_packs_with_its_types_declared_and_its_version_is_ctxsims(tarball: Path) -> None:
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.loads(tar.extractfile("package/package.json").read())  # type: ignore[union-attr]
    assert {"package/index.mjs", "package/index.d.ts", "package/package.json"} <= names
    assert not any("/test/" in name or "/example/" in name for name in names), names
    assert manifest["types"] == "./index.d.ts" and manifest["exports"]["."]["types"] == "./index.d.ts"
    assert manifest.get("dependencies", {}) == {}
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert version is not None and manifest["version"] == version.group(1)  # the npm package is ctxsim's release


def test_the_clients_node_tests_pass() -> None:
    need("node")
    tests = sorted(str(p.relative_to(CLIENT)) for p in (CLIENT / "test").glob("*.test.mjs"))
    summary = node_test(tests, CLIENT)
    # every test ran (one finding the example's SDK skips, saying why, where `npm ci` did not install it)
    ran = int(summary["pass"]) + int(summary["skipped"])
    assert summary["fail"] == "0" and summary["cancelled"] == "0" and ran >= 15 and int(summary["pass"]) >= 14, summary


def test_the_docs_example_is_at_most_20_lines_and_the_page_includes_it_from_its_file() -> None:
    assert len(EXAMPLE.read_text().splitlines()) <= 20
    page = (ROOT / "docs" / "how-to" / "trackers-in-any-language.md").read_text()
    assert SNIPPET in page
    assert "pymdownx.snippets" in (ROOT / "mkdocs.yml").read_text()


def test_a_project_that_installs_the_packed_client_runs_the_docs_example_and_its_verdict_holds(
        tarball: Path, tmp_path: Path) -> None:
    if not (SDK / "claude-agent-sdk").is_dir():
        pytest.skip(f"ctxsim: the Agent SDK is not installed in {SDK.parent.parent} (`npm ci` there; .ci/run does it)")
    project = tmp_path / "project"
    (project / "test").mkdir(parents=True)
    (project / "package.json").write_text(json.dumps({"name": "my-agent", "private": True, "type": "module"}))
    done = subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)], cwd=project,
                          capture_output=True, text=True, timeout=300, check=False)
    installed = project / "node_modules" / "ctxsim-client"
    if done.returncode != 0:  # npm refused to install offline: the package has no dependencies, so unpack it
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp_path / "unpacked", filter="data")
        shutil.copytree(tmp_path / "unpacked" / "package", installed)
    assert (installed / "index.d.ts").is_file()
    # the project's Agent SDK: the one examples/ts-agent installed (its platform package beside it)
    (project / "node_modules" / "@anthropic-ai").mkdir()
    for package in SDK.iterdir():
        (project / "node_modules" / "@anthropic-ai" / package.name).symlink_to(package, target_is_directory=True)
    shutil.copy(EXAMPLE, project / "test" / EXAMPLE.name)
    summary = node_test(["test/"], project)
    assert summary == {"pass": "1", "fail": "0", "skipped": "0", "cancelled": "0"}, summary
