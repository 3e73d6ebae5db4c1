"""MkDocs hooks for this site.

- Docstrings are written with Sphinx roles (:class:`X`); mkdocstrings renders them as Markdown, so the role prefix
  would show as text: keep the name as code, drop the role and a leading ``~``.
- ``<!-- ctxsim NAME --help -->`` on a page becomes the help text of ``ctxsim NAME``, built from the command's own
  argument parser at build time, so the command-line reference cannot drift from the code.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const):(<code>)~?")
_HELP = re.compile(r"^<!-- ctxsim(?: (?P<name>[a-z]+))? --help -->$", re.M)


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


def on_page_markdown(markdown: str, **_: Any) -> str:
    return _HELP.sub(lambda m: f"```text\n{_help(m['name']).rstrip()}\n```", markdown)


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(r"\1", html)
