"""MkDocs hook: docstrings are written with Sphinx roles (:class:`X`); mkdocstrings renders them as Markdown, so
the role prefix would show as text. Keep the name as code, drop the role and a leading ``~``."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const):(<code>)~?")


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(r"\1", html)
