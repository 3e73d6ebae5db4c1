"""The shipped corpus (``scenarios/``): one scenario per reported bug, and what each must say about itself.

The list of bugs is the one ``docs/explanation/bugs-in-the-wild.md`` gives ("The bug list"): the ``B<n>`` ids with
their public reports, and the seed bugs issue 4 names, each with the phrase its design uses. A bug is covered by a
scenario whose ``source`` cites it: ``B<n>`` together with one of the reports the page gives for that bug, or the
seed's number together with the quoted phrase. Whether each scenario's trackers really fail (and the reference
passes) is the job of ``pytest --ctx-scenarios``; this module checks the corpus is complete and says what it
reproduces.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from ctxsim.scenario import Scenario, SessionScenario, load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
BUGS_MD = ROOT / "docs" / "explanation" / "bugs-in-the-wild.md"

MIN_CORPUS = 25
"""Issue 4: at least 25 reported bugs in the corpus."""

SEED_BUGS = {
    "seed 000: 719% pressure": ("000", "719%"),
    "seed 000: overwrite, not accumulate": ("000", "overwritten instead of accumulated"),
    "seed 001: dedupe by uuid": ("001", "uuid"),
    "seed 002: chars/4 estimator": ("002", "CHARS_TO_TOKENS_RATIO"),
    "seed 003: cache_read already in input": ("003", "already included in input_tokens"),
    "seed 004: non-additive prompt_tokens": ("004", "non-additive prompt_tokens"),
}
"""The seed bugs issue 4 names: the seed's number and a phrase both the page's seed table and the scenario's source
quote."""

_REF = re.compile(r"(?:([A-Za-z0-9_.-]+)/)?([A-Za-z0-9_.-]*)#(\d+)")
_BUG_ROW = re.compile(r"^\| (B\d+) \| .+? \| (.+?) \|$", re.MULTILINE)
_SEED_ROW = re.compile(r"^\| (\d{3}) \| .+? \| (.+?) \|$", re.MULTILINE)


@cache
def corpus() -> dict[Path, Scenario]:
    """Every scenario file under ``scenarios/``, loaded, by path."""
    return {path: load_scenario(path) for path in sorted(SCENARIOS.glob("*.y*ml"))}


def tracker_scenarios() -> dict[Path, SessionScenario]:
    """The scenarios that check trackers on a session (not restart loops on a task)."""
    return {path: s for path, s in corpus().items() if isinstance(s, SessionScenario)}


def refs(text: str) -> set[str]:
    """The issue references in ``text``, as ``repo#N`` in lower case; a bare ``#N`` takes the repo before it."""
    found, repo = set(), ""
    for match in _REF.finditer(text):
        repo = match.group(2) or repo
        if repo:
            found.add(f"{repo.lower()}#{match.group(3)}")
    return found


def _bug_list() -> str:
    """The page's "The bug list" section."""
    text = BUGS_MD.read_text(encoding="utf-8")
    section = re.search(r"^## The bug list\n.*?(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert section, f"{BUGS_MD}: no section 'The bug list'"
    return section.group(0)


def reported_bugs() -> dict[str, set[str]]:
    """The bugs of the page's list, ``B<n>`` -> the references it gives for it."""
    return {m.group(1): refs(m.group(2)) for m in _BUG_ROW.finditer(_bug_list())}


def seed_phrases() -> set[tuple[str, str]]:
    """The seed bugs of the page's list: ``(seed number, the design's phrase)``."""
    return {(m.group(1), m.group(2)) for m in _SEED_ROW.finditer(_bug_list())}


def cites(source: str, bug: str) -> bool:
    """True when ``source`` names ``bug`` (``B7`` is not ``B17``)."""
    return re.search(rf"\b{bug}\b", source) is not None


def test_the_corpus_has_enough_scenarios_with_unique_names() -> None:
    scenarios = tracker_scenarios()
    assert len(scenarios) >= MIN_CORPUS, sorted(p.name for p in scenarios)
    names = [s.name for s in corpus().values()]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_each_scenario_says_what_it_reproduces_and_who_fails_it() -> None:
    problems = []
    for path, scenario in tracker_scenarios().items():
        if not (scenario.source.strip() and scenario.description.strip()):
            problems.append(f"{path.name}: no source or no description")
        if not scenario.must_fail:
            problems.append(f"{path.name}: no catalogued tracker under expect.fail")
        if not scenario.expect_reference:
            problems.append(f"{path.name}: the reference must pass (expect.reference: pass)")
    assert problems == []


def test_the_bug_list_is_read_from_the_docs() -> None:
    bugs = reported_bugs()
    # the list issue 4 was written against; a bug added to the page must get a scenario
    assert {"B1", "B8", "B20", "B27"} <= set(bugs) and len(bugs) >= 21
    assert {"claude-code#42338", "claude-code#94177"} <= bugs["B14"]  # a bare #N takes the repo before it


def test_every_reported_bug_has_a_scenario_citing_it() -> None:
    sources = [s.source for s in tracker_scenarios().values()]
    missing = []
    for bug, reports in reported_bugs().items():
        if not any(cites(src, bug) and refs(src) & reports for src in sources):
            missing.append(f"{bug} (cite it with one of: {', '.join(sorted(reports))})")
    assert missing == []


@pytest.mark.parametrize("bug", sorted(SEED_BUGS))
def test_every_seed_bug_has_a_scenario_citing_it(bug: str) -> None:
    number, phrase = SEED_BUGS[bug]
    assert (number, phrase) in seed_phrases(), f"{BUGS_MD.name} does not list seed {number}'s {phrase!r}"
    citing = [p.name for p, s in tracker_scenarios().items()
              if f"seed {number}" in s.source and phrase.lower() in s.source.lower()]
    assert citing, f"no scenario whose source cites seed {number} and quotes {phrase!r}"


def test_the_page_lists_the_seed_bugs_and_no_other() -> None:
    assert seed_phrases() == set(SEED_BUGS.values())
