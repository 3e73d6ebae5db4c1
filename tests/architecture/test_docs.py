"""The manual holds: the site builds strictly, every Python block of the docs and the README runs, every ctxsim name
they use is public, every public name is documented, and nothing points outside the repository.

A block whose fence names a file (```` ```yaml title="scenarios/gauge-stuck.yaml" ````, as mkdocs-material shows a
file's name) is written to that path before the blocks after it run; a Python one is a module to import, not run.
A Python block that cannot run here (it needs a real model, a Redis server, your own agent) is marked just before
its fence with ``<!-- docs: skip REASON -->``; a mark without a reason is an error. The blocks of one page run in
order in one namespace (a later block may use what an earlier one defined), in a temporary directory; a block
that defines a ``test_*`` function without parameters has it called, so an example test is run, not only defined.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

import ctxsim
from ctxsim._lazy import internal_names

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
REFERENCE = DOCS / "reference"
CONTRIBUTORS = DOCS / "contributors"
"""The contributors' section: the internal packages' pages, the one place of the site that may import from them."""

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)$")
SKIP = re.compile(r"^\s*<!--\s*docs:\s*skip\b(?P<reason>.*?)-->\s*$")
FROM_IMPORT = re.compile(r"\bfrom\s+(ctxsim(?:\.\w+)*)\s+import\s+(\([^)]*\)|[\w ,]+)")
DOTTED = re.compile(r"(?<![\w./-])ctxsim(?:\.\w+)+")
FACE_MARK = re.compile(r"^<!-- ctxsim face (ctxsim(?:\.\w+)*)(?: [1-6])?( internal)? -->$", re.M)
FILE_SUFFIXES = {"md", "py", "yaml", "yml", "json", "jsonl", "toml", "html", "txt"}
DIRECTIVE = re.compile(r"^::: (?P<path>ctxsim[\w.]*)\n(?P<options>(?:[ \t]+.*\n|\n(?=[ \t]))*)", re.M)
OUTSIDE = re.compile(r"(?:(?<![\w/.-])(?:\.\./)*shared/(?!memory)|captures/README|research/[\w-]+\.md|"
                     r"real-recordings|DESIGN\.md|(?<![\w/-])(?:shipped-)?trackers\.md(?![)\w]))")
"""A pointer at the research notes outside the repository (``../shared/...``, its captures' README, its research
pages, its recordings, its design notes); ``/mnt/shared/db`` (a shared file system in an example) is not one."""


TITLE = re.compile(r'title="(?P<path>[^"]+)"')


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    source: str
    skip: str | None  # the reason it does not run here, as written before its fence
    file: str | None = None  # the path the block is written to (its fence's title), or None for code to run


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def python_blocks(page: Path) -> list[Block]:
    """Every fenced ```python block of ``page`` and every block that names a file, dedented to its fence, with its
    skip mark if any."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        indent, fence, info = match["indent"], match["fence"], match["info"].strip()
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and not (lines[index].strip().startswith(fence)
                                          and lines[index].strip().strip(fence[0]) == ""):
            body.append(lines[index][len(indent):] if lines[index].startswith(indent) else lines[index].lstrip())
            index += 1
        index += 1
        title = TITLE.search(info)
        if info.split()[:1] != ["python"] and not title:
            continue
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        mark = SKIP.match(lines[before]) if before >= 0 else None
        reason = mark["reason"].strip() if mark else None
        if mark and not reason:
            raise AssertionError(f"{_rel(page)}:{before + 1}: a docs skip mark without a reason")
        blocks.append(Block(page, start + 1, "\n".join(body) + "\n", reason, title["path"] if title else None))
    return blocks


def _pages_with_python() -> list[Path]:
    return [page for page in PAGES if python_blocks(page)]


@pytest.mark.parametrize("page", _pages_with_python(), ids=lambda page: _rel(page))
def test_every_python_block_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    ran = 0
    for block in python_blocks(page):
        if block.skip is not None:
            continue
        if block.file is not None:
            target = tmp_path / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.source, encoding="utf-8")
            if target.suffix == ".py":  # a module of this page's, not one another page wrote under the same name
                monkeypatch.delitem(sys.modules, target.stem, raising=False)
            continue
        where = f"{_rel(page)}:{block.line}"
        before = set(namespace)
        try:
            exec(compile(block.source, where, "exec"), namespace)
            for name in sorted(set(namespace) - before):
                function = namespace[name]
                if name.startswith("test_") and callable(function) and not inspect.signature(function).parameters:
                    function()
        except Exception as error:
            raise AssertionError(f"the python block at {where} fails: {type(error).__name__}: {error}") from error
        ran += 1
    assert ran, f"{_rel(page)}: every python block is skipped"


def test_skip_marks_are_few_and_explained() -> None:
    blocks = [block for page in PAGES for block in python_blocks(page) if block.file is None]
    skipped = [block for block in blocks if block.skip is not None]
    assert len(blocks) >= 20
    assert len(skipped) * 3 <= len(blocks), [f"{_rel(b.page)}:{b.line}: {b.skip}" for b in skipped]


def _public_modules() -> dict[str, ModuleType]:
    """ctxsim and every module under it with no private part in its dotted name."""
    modules = {"ctxsim": ctxsim}
    for info in pkgutil.walk_packages(ctxsim.__path__, "ctxsim."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            modules[info.name] = importlib.import_module(info.name)
    return modules


PUBLIC = _public_modules()
FACES = {name: module for name, module in PUBLIC.items() if hasattr(module, "__path__")}


def _public_names(module: ModuleType) -> list[str]:
    """Every name ``module`` exports: its ``__all__`` and, on a stable face, the internal names it keeps out of it
    (documented for contributors)."""
    declared = getattr(module, "__all__", None)
    assert declared is not None, f"{module.__name__} has no __all__"
    return [*declared, *(internal_names(module) if hasattr(module, "__path__") else ())]


def _resolve(dotted: str) -> str | None:
    """Why ``dotted`` (``ctxsim.check.Report``) is not public, or None when it is."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in PUBLIC:
            rest = parts[cut:]
            if rest and rest[0] not in _public_names(PUBLIC[module]) and not (
                    rest[0].startswith("__") and hasattr(PUBLIC[module], rest[0])):
                return f"{rest[0]!r} is not in {module}.__all__"
            return None
    return f"no public module {'.'.join(parts[:2])}"


def _texts() -> list[tuple[Path, str]]:
    return [(page, page.read_text(encoding="utf-8")) for page in PAGES]


def _module_docstrings() -> list[tuple[Path, str]]:
    """The docstring of every public module: the reference pages render them."""
    return [(Path(module.__file__ or name), module.__doc__ or "") for name, module in PUBLIC.items()]


def test_every_ctxsim_name_the_docs_use_is_public() -> None:
    """In the docs, the README and the docstrings the reference renders (each public module's)."""
    wrong: list[str] = []
    for page, text in [*_texts(), *_module_docstrings()]:
        for match in FROM_IMPORT.finditer(text):
            module = match[1]
            line = text.count("\n", 0, match.start()) + 1
            names = [n.strip().split(" as ")[0] for n in match[2].strip("()").replace("\n", " ").split(",")]
            for name in filter(None, names):
                why = _resolve(f"{module}.{name}")
                if why:
                    wrong.append(f"{_rel(page)}:{line}: from {module} import {name}: {why}")
        for match in DOTTED.finditer(text):
            if match[0].rsplit(".", 1)[-1] in FILE_SUFFIXES:
                continue  # a file name (reference/ctxsim.md), not a name
            why = _resolve(match[0].rstrip("."))
            if why:
                line = text.count("\n", 0, match.start()) + 1
                wrong.append(f"{_rel(page)}:{line}: {match[0]}: {why}")
    assert not wrong, "\n".join(wrong)


def test_public_docstrings_name_no_private_module() -> None:
    """A public module's docstring names public things: a private module (``:mod:`.load```) may move, and a reader
    of the reference cannot import it."""
    named = [f"{_rel(path)}: {role}" for path, text in _module_docstrings()
             for role in re.findall(r":mod:`~?\.[\w.]+`", text)]
    assert not named, named


PRIVATE_MODULE = re.compile(r"(?<![\w.])ctxsim(?:\.[a-z]\w*)*\._[a-z]\w*")
"""A dotted path through a private module (``ctxsim.check._quantity``): readers can neither import nor rely on it."""
DIARY = re.compile(r"\b[Ii]ssues? \d+\b|\b[Ss]tops? \d+\b|\b(?:this|last|next|an earlier|a later) stop\b")
"""The project's own history (``issue 13``, ``the last stop``): docs and docstrings speak to users, not of the
work that made them."""


def _all_docstrings() -> list[tuple[str, str]]:
    """Every docstring in src/ (modules, classes, functions, and the string after an assignment), with its place."""
    found = []
    for path in sorted((ROOT / "src" / "ctxsim").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if not isinstance(body, list):
                continue
            for i, stmt in enumerate(body):
                if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                        and isinstance(stmt.value.value, str)
                        and (i == 0 or isinstance(body[i - 1], (ast.Assign, ast.AnnAssign)))):
                    found.append((f"{_rel(path)}:{stmt.lineno}", stmt.value.value))
    return found


def test_docs_and_docstrings_name_no_private_module_no_issue_and_no_stop() -> None:
    wrong = []
    texts = [(_rel(page), text) for page, text in _texts()] + _all_docstrings()
    for place, text in texts:
        for pattern, what in ((PRIVATE_MODULE, "a private module"), (DIARY, "the project's history")):
            for match in pattern.finditer(text):
                wrong.append(f"{place}: {what}: {match[0]!r}")
    assert len(texts) > 1000
    assert not wrong, "\n".join(wrong)
    assert PRIVATE_MODULE.search("(:mod:`ctxsim.check._quantity`)") and not PRIVATE_MODULE.search("ctxsim.check")
    assert DIARY.search("as issue 13 named it") and DIARY.search("at the last stop")
    assert not DIARY.search("the SDK stream stops part-way") and not DIARY.search("the loop stops at 3")


def _documented() -> tuple[dict[str, set[str]], str]:
    """The names each reference page renders (``<!-- ctxsim face X -->``, which the site's hook turns into a
    directive rendering every name of ``X.__all__``; ``::: X`` with its ``members``; ``::: X.Name``), and the text of
    every page (for names mentioned as code)."""
    rendered: dict[str, set[str]] = {}
    for page in [*REFERENCE.glob("*.md"), *CONTRIBUTORS.glob("*.md")]:
        text = page.read_text(encoding="utf-8")
        for module, internal in FACE_MARK.findall(text):
            names = ((internal_names(PUBLIC[module]) if internal else PUBLIC[module].__all__) if module in PUBLIC
                     else {"?"})
            rendered.setdefault(module, set()).update(names)
        for match in DIRECTIVE.finditer(text):
            path = match["path"]
            if path in PUBLIC:
                members = re.findall(r"^\s+- (\w+)\s*$", match["options"], re.M)
                rendered.setdefault(path, set()).update(members)
            else:
                module, _, name = path.rpartition(".")
                rendered.setdefault(module, set()).add(name)
    return rendered, "\n".join(text for _, text in _texts())


def test_every_public_name_of_every_face_is_documented() -> None:
    rendered, text = _documented()
    missing = []
    for module_name, module in PUBLIC.items():
        for name in _public_names(module):
            if name == "__version__" or name in rendered.get(module_name, set()):
                continue
            if not re.search(rf"`(?:{re.escape(module_name)}\.)?{re.escape(name)}(?:\(\))?`", text):
                missing.append(f"{module_name}.{name}")
    assert not missing, "public names that no reference page renders and no page mentions: " + ", ".join(missing)


def test_the_reference_renders_only_public_names() -> None:
    rendered, _ = _documented()
    stale = [f"{module}.{name}" for module, names in rendered.items() for name in names
             if module not in PUBLIC or name not in _public_names(PUBLIC[module])]
    assert not stale, stale
    assert set(FACES) - {"ctxsim"} <= set(rendered), sorted(set(FACES) - set(rendered))


def test_the_plugin_and_cli_pages_cover_every_option_and_command() -> None:
    from ctxsim.cli import COMMANDS

    plugin_source = (ROOT / "src" / "ctxsim" / "plugin" / "__init__.py").read_text(encoding="utf-8")
    tree = ast.parse(plugin_source)
    options = {node.value for node in ast.walk(tree)
               if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("--ctx-")}
    inis = {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "addini"
            and isinstance(node.args[0], ast.Constant)}
    assert len(options) >= 5 and len(inis) >= 5
    plugin_page = (REFERENCE / "plugin.md").read_text(encoding="utf-8")
    assert not {o for o in options if f"`{o}" not in plugin_page}, "options missing from reference/plugin.md"
    assert not {i for i in inis if f"`{i}" not in plugin_page}, "ini keys missing from reference/plugin.md"
    cli_page = (REFERENCE / "cli.md").read_text(encoding="utf-8")
    missing = [c.name for c in COMMANDS if f"## `ctxsim {c.name}`" not in cli_page]
    assert not missing, f"commands without a section in reference/cli.md: {missing}"


def _repository_texts() -> list[Path]:
    package = ROOT / "src" / "ctxsim"
    texts = [README, ROOT / "mkdocs.yml", *sorted(DOCS.rglob("*.md")), *sorted(DOCS.rglob("*.py"))]
    texts += sorted(p for p in package.rglob("*") if p.suffix in {".py", ".md", ".txt", ".toml"})
    texts += sorted((ROOT / "scenarios").glob("*.y*ml"))
    texts += [ROOT / "conftest.py", *sorted(p for p in (ROOT / "tests").rglob("*.py") if p != Path(__file__))]
    return texts


def test_nothing_points_outside_the_repository() -> None:
    """The repository stands alone: no text in src/, the corpus, docs/, the tests or the README points at the research
    notes kept beside it; the facts live in docs/explanation/ with their public sources, the captures the tests read
    in tests/captures."""
    found = []
    for path in _repository_texts():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{_rel(path)}:{number}: {line.strip()[:120]}")
    assert len(_repository_texts()) > 100
    assert not found, "\n".join(found)
    assert OUTSIDE.search("see ../shared/captures") and OUTSIDE.search("(``shared/research/trackers.md``)")
    assert not OUTSIDE.search("CTXSIM_FUZZ_DATABASE=/mnt/shared/ctx-fuzz-db")
    assert OUTSIDE.search("(trackers.md 1.3, B19)") and OUTSIDE.search("shipped-trackers.md §3 d")
    assert not OUTSIDE.search("[the catalogue](trackers.md)") and not OUTSIDE.search("docs/reference/trackers.md")


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install -e '.[docs]' to build the site")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-4000:]
    pages = list(tmp_path.rglob("index.html"))
    assert len(pages) >= 40, len(pages)
    # every public name of every face is on a reference page, rendered from its docstring (its anchor is there)
    reference = "\n".join(page.read_text(encoding="utf-8") for page in (tmp_path / "reference").rglob("*.html"))
    anchors = set(re.findall(r'id="(ctxsim(?:\.\w+)+)"', reference))
    anchors |= set(re.findall(r'id="(ctxsim(?:\.\w+)+)"', "\n".join(
        page.read_text(encoding="utf-8") for page in (tmp_path / "contributors").rglob("*.html"))))
    missing = [f"{module}.{name}" for module, face in PUBLIC.items()
               for name in _public_names(face) if f"{module}.{name}" not in anchors]
    assert not missing, f"public names the built reference does not render: {missing}"


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    """At most 200 lines; its first two code blocks are the main job and the test suite, the commands `.ci/run`
    runs (the benchmark figures live in docs/benchmarks.md, not here)."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    assert [block.strip() for block in blocks[:2]] == ["pip install pytest-ctxsim && pytest --ctx-scenarios",
                                                       "pip install -e '.[test]' && pytest -n auto"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pytest\" --ctx-scenarios" in ci and "pytest -n auto" in ci and "mkdocs build --strict" in ci
    assert "| figure | measured | target |" not in text


def _stable_faces() -> set[str]:
    """The faces the reference index states as stable (the rows of its stable table), and the plugin."""
    index = (REFERENCE / "index.md").read_text(encoding="utf-8")
    stable = index.partition("## The stable surface")[2].partition("\n## ")[0]
    return set(re.findall(r"^\| \[`(ctxsim(?:\.\w+)*)`\]", stable, re.M)) | {"ctxsim.plugin"}


IMPORT = re.compile(r"(?<![\w.])import\s+(ctxsim(?:\.\w+)*)")


def _imports(page: Path) -> list[tuple[int, str, list[str]]]:
    """Every import from ctxsim on ``page``, as (line, module, names imported from it): in its Python blocks
    (parsed, so ``import ctxsim.fuzz`` and an import inside a function count), and anywhere in its text, code spans
    and shell lines included (``from ctxsim.x import y``, ``import ctxsim.x``)."""
    text = page.read_text(encoding="utf-8")
    found = [(text.count("\n", 0, m.start()) + 1, m[1],
              [n.strip().split(" as ")[0] for n in m[2].strip("()").replace("\n", " ").split(",") if n.strip()])
             for m in FROM_IMPORT.finditer(text)]
    found += [(text.count("\n", 0, m.start()) + 1, m[1], []) for m in IMPORT.finditer(text)]
    for block in python_blocks(page):
        if block.file is not None and not block.file.endswith(".py"):
            continue
        try:
            tree = ast.parse(block.source)
        except SyntaxError:
            continue  # not Python as a whole (a session transcript): its imports are found in the text above
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("ctxsim"):
                found.append((block.line + node.lineno, node.module or "", [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found += [(block.line + node.lineno, a.name, []) for a in node.names
                          if a.name == "ctxsim" or a.name.startswith("ctxsim.")]
    return found


def test_the_pages_users_read_import_from_the_stable_faces_only() -> None:
    """The README, the tutorial, the how-to guides, the explanations and the reference teach the stable faces, and
    each name from its stable home (its face's ``__all__``): an example importing from a layer inside, or a name a
    face keeps for ctxsim's own use, would teach users what may change in any release."""
    stable = _stable_faces()
    assert {"ctxsim", "ctxsim.trackers", "ctxsim.plugin"} <= stable and "ctxsim.check" not in stable
    pages = [page for page in PAGES if not page.is_relative_to(CONTRIBUTORS)]
    wrong = []
    for page in pages:
        for line, module, names in _imports(page):
            if module not in stable:
                wrong.append(f"{_rel(page)}:{line}: imports from {module}, not a stable face")
            else:
                home = PUBLIC[module].__all__
                wrong += [f"{_rel(page)}:{line}: {module}.{name} is not stable there" for name in names
                          if name not in home and name != "*"]
    assert len(pages) > 40 and sum(len(_imports(page)) for page in pages) > 40
    assert not wrong, "\n".join(sorted(set(wrong)))
