"""The test tiers: the README's test command runs the default tier, and every tier it leaves out is a CI step.

pyproject's ``addopts`` deselects the slow tiers by marker; ``.ci/run`` runs each of them as a step of its own, then
the default tier. A marker added to the deselection and not to CI would be a tier nothing runs: this fails then.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="ctxsim: tomllib is Python 3.11's; the tiers are read with it")

ROOT = Path(__file__).resolve().parents[2]


def _deselected() -> list[str]:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    addopts = options["addopts"]
    expression = addopts[addopts.index("-m") + 1]
    tiers = re.findall(r"not (\w+)", expression)
    assert expression == " and ".join(f"not {t}" for t in tiers), expression  # nothing but "not X and not Y"
    return tiers


def test_the_default_run_leaves_out_the_slow_tiers_and_each_is_a_registered_marker() -> None:
    tiers = _deselected()
    assert set(tiers) == {"tools", "live", "slow"}
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    registered = {m.split(":", 1)[0] for m in markers}
    assert set(tiers) <= registered


def test_ci_runs_every_tier_the_default_run_leaves_out_then_the_default_tier() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    loop = re.search(r"^for tier in ([\w ]+); do$", script, re.MULTILINE)
    assert loop is not None, "ctxsim: .ci/run has no 'for tier in ...; do' loop over the tiers"
    assert sorted(loop.group(1).split()) == sorted(_deselected())
    assert 'pytest -n auto -m "$tier"' in script[loop.end():]
    assert re.search(r"^pytest -n auto \|\|", script[loop.end():], re.MULTILINE)  # the README's command, last


def test_the_readme_says_how_to_run_each_tier() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pytest -n auto\n" in readme
    for tier in _deselected():
        assert f"`pytest -n auto -m {tier}`" in readme, tier
