"""MkDocs hooks for this site.

- Docstrings are written with Sphinx roles (:class:`X`); mkdocstrings renders them as Markdown, so the role prefix
  would show as text: keep the name as code, drop the role and a leading ``~``.
- ``<!-- ctxsim NAME --help -->`` on a page becomes the help text of ``ctxsim NAME``, built from the command's own
  argument parser at build time, so the command-line reference cannot drift from the code.
- ``<!-- ctxsim face ctxsim.world -->`` (optionally a heading level after the name) becomes the mkdocstrings
  directive that renders the face with every name of its ``__all__`` (derived at import from the face's
  ``TYPE_CHECKING`` block, which a static reading cannot see): a name added to a face is documented at once.
  ``<!-- ctxsim face ctxsim.trackers internal -->`` renders the names a stable face keeps out of its ``__all__``
  (its internal names, for the contributors' section) instead.
- ``<!-- ctxsim release rules -->`` becomes the table of the rules that differ between Claude Code releases
  (``ctxsim.world.RULES``): a rule added in the code is on the page at once.
- ``<!-- ctxsim scenario schema -->`` becomes the scenario format's key reference, the text the ``ctxsim.scenario``
  face appends to its docstring at import (``ctxsim.scenario.reference()``, which ``ctxsim scenario keys`` prints),
  as Markdown: a static reading of the face's source cannot see what is appended at run time.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const):(<code>)~?")
_HELP = re.compile(r"^<!-- ctxsim(?: (?P<name>[a-z]+))? --help -->$", re.M)
_SCHEMA = "<!-- ctxsim scenario schema -->"
_RULES = "<!-- ctxsim release rules -->"
_FACE = re.compile(r"^<!-- ctxsim face (?P<module>ctxsim(?:\.\w+)*)(?: (?P<level>[1-6]))?(?P<internal> internal)? -->$",
                   re.M)
_SECTION = re.compile(r"^(?:``(?P<key>[^`]+)``|(?P<title>[A-Z][\w ]+))$")


def _help(name: str | None) -> str:
    from ctxsim.cli import COMMANDS

    parser = argparse.ArgumentParser(prog="ctxsim", description="Check context-window trackers of Claude Agent SDK "
                                                                "agents against a simulated ground truth.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parsers = {}
    for command in COMMANDS:
        parsers[command.name] = sub.add_parser(command.name, help=command.help, description=command.help)
        command.configure(parsers[command.name])
    if name is not None and name not in parsers:
        raise ValueError(f"ctxsim: docs: no command 'ctxsim {name}' (commands: {', '.join(parsers)})")
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "110"  # argparse wraps to the terminal: a fixed width gives the same page everywhere
    try:
        return (parser if name is None else parsers[name]).format_help()
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def _schema() -> str:
    """The scenario keys as Markdown: a section a key path (``expect.loop``), its description, its keys."""
    from ctxsim.scenario import reference

    out: list[str] = []
    for line in reference().splitlines():
        section = _SECTION.match(line)
        if section:
            out += ["", f"### `{section['key']}`" if section["key"] else f"### {section['title']}", ""]
        elif line.startswith("    "):
            if line.startswith("    - ") and out and out[-1] and not out[-1].startswith(("- ", "  ")):
                out.append("")  # Markdown starts a list only after a blank line
            out.append(line[4:])
        else:
            out.append(line)
    text = "\n".join(out)
    return re.sub(r"(?<!`)``([^`]+)``(?!`)", r"`\1`", text)


def _face(module: str, level: str | None, internal: bool = False) -> str:
    """The directive rendering ``module``'s public names (or, ``internal``, the names it keeps out of ``__all__``),
    in the order its face declares them."""
    import importlib

    from ctxsim._lazy import internal_names

    face = importlib.import_module(module)
    names = internal_names(face) if internal else face.__all__
    lines = [f"::: {module}", "    options:", "      show_root_heading: false"]
    if level:
        lines.append(f"      heading_level: {level}")
    return "\n".join([*lines, "      members:", *(f"        - {name}" for name in names)])


def _rules() -> str:
    """The release rules as a Markdown table: name, the releases it holds for, what it says, what shows it."""
    from ctxsim.world import RULES

    rows = ["| rule | holds for | what Claude Code does | recorded in |", "| --- | --- | --- | --- |"]
    for rule in RULES.values():
        span = " and ".join(part for part in (f"{rule.since} on" if rule.since else "",
                                               f"before {rule.until}" if rule.until else "") if part)
        rows.append(f"| `{rule.name}` | {span} | {rule.says} | {rule.shown_by} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **_: Any) -> str:
    markdown = _FACE.sub(lambda m: _face(m["module"], m["level"], bool(m["internal"])), markdown)
    if _RULES in markdown:
        markdown = markdown.replace(_RULES, _rules())
    if _SCHEMA in markdown:
        markdown = markdown.replace(_SCHEMA, _schema())
    return _HELP.sub(lambda m: f"```text\n{_help(m['name']).rstrip()}\n```", markdown)


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(r"\1", html)
