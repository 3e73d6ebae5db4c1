"""The release-day recipe a user copies into CI (``examples/ci/ctxsim-release-day.yml``) holds: it parses as YAML,
runs on a schedule, installs the newest claude-agent-sdk, runs a ``ctxsim fidelity`` command line that ctxsim's own
parser accepts, fails with it (not with the ``tee`` after it), and is the very workflow docs/how-to/ci-recipes.md
shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from ctxsim.cli import _parser

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "ctxsim-release-day.yml"
RECIPES = ROOT / "docs" / "how-to" / "ci-recipes.md"


def _steps() -> list[dict[str, Any]]:
    data = yaml.safe_load(WORKFLOW.read_text())
    (job,) = data["jobs"].values()
    return list(job["steps"])


def test_the_workflow_runs_daily() -> None:
    data = yaml.safe_load(WORKFLOW.read_text())
    on = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert [entry["cron"] for entry in on["schedule"]]


def test_it_installs_the_newest_sdk_then_runs_ctxsim_fidelity() -> None:
    runs = [str(step.get("run", "")) for step in _steps()]
    install = next(i for i, run in enumerate(runs) if run.startswith("pip install"))
    assert {"--upgrade", "claude-agent-sdk", "pytest-ctxsim"} <= set(shlex.split(runs[install]))
    fidelity = next(i for i, run in enumerate(runs) if run.startswith("ctxsim fidelity"))
    assert install < fidelity
    step = _steps()[fidelity]
    command, _, after = step["run"].partition("|")
    args = _parser().parse_args(shlex.split(command)[1:])
    assert args.command == "fidelity" and args.record == Path("captures")
    if after:  # a pipe: only bash as `shell: bash` runs it with -o pipefail, so ctxsim's exit status is the step's
        assert step.get("shell") == "bash"


def test_the_docs_show_the_very_workflow() -> None:
    text = RECIPES.read_text()
    assert WORKFLOW.read_text() in re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M), (
        "ci-recipes.md shows no yaml block that is examples/ci/ctxsim-release-day.yml whole")
    assert "examples/ci/ctxsim-release-day.yml" in text
