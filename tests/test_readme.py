"""README.md renders as written and its examples print what it shows; what README.md and
docs/ name (imports, modules, attributes, source and test files) exists."""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

import mini_harness
from mini_harness.cli import cli
from mini_harness.store import default_sessions_dir

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLE_FILES = {"calc.py"}  # a user's file, in the examples of docs/coding-tools.md


def table_blocks(text: str) -> list[list[str]]:
    """Runs of consecutive lines starting with `|`, outside code fences."""
    blocks: list[list[str]] = []
    current: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            current.append(line)
            continue
        if current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


class TestReadmeTables:
    def test_every_table_row_belongs_to_a_table(self) -> None:
        """No blank line splits a table: every run of rows starts with a header and `| --- |`."""
        blocks = table_blocks(README.read_text(encoding="utf-8"))
        assert blocks
        for rows in blocks:
            assert len(rows) >= 2, rows
            cells = rows[1].strip("|").split("|")
            assert all(set(cell.strip()) <= {"-", ":"} and cell.strip() for cell in cells), rows[:2]
            widths = {len(row.replace("\\|", "").strip("|").split("|")) for row in rows}
            assert widths == {len(cells)}, rows


def console_examples(text: str) -> list[tuple[str, list[str]]]:
    """Each `$ mini-harness ...` line in a console block with the output lines shown after it."""
    examples: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                examples.append((line[2:], []))
            elif line and examples:
                examples[-1][1].append(line)
    return examples


STORE_SHOWN = "/home/me/.local/state/mini-harness/sessions"
SESSION_SHOWN = "2026/05/04/20260504T091500Z-5f0c1e2d3b4a69788796a5b4c3d2e1f0"
RUN_SHOWN = "5f0c1e2d3b4a69788796a5b4c3d2e1f0"


def as_in_readme(printed: str) -> str:
    """Output with the session store's place, and the session's date and run id, as the
    README shows them (the tests' store is a scratch directory)."""
    store = str(default_sessions_dir(os.environ))
    printed = printed.replace(store, STORE_SHOWN)
    printed = re.sub(r"\d{4}/\d{2}/\d{2}/\d{8}T\d{6}Z-[0-9a-f]{32}", SESSION_SHOWN, printed)
    return re.sub(r"\(run [0-9a-f]{32}\)", f"(run {RUN_SHOWN})", printed)


class TestReadmeExamples:
    def test_shown_outputs_match(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Every README command shown with its output prints exactly that (durations aside)."""
        monkeypatch.chdir(README.parent)
        checked = 0
        for command, shown in console_examples(README.read_text(encoding="utf-8")):
            args = shlex.split(command, comments=True)
            if not shown or args[0] != "mini-harness":
                continue
            assert "--log" not in args, (
                f"a README example must not write into the checkout: {command}"
            )
            result = CliRunner().invoke(cli, args[1:])
            printed = re.sub(r'"durationMs":\d+', '"durationMs":0', result.stdout + result.stderr)
            assert as_in_readme(printed).splitlines() == shown, command
            checked += 1
        assert checked >= 3


def documented_imports() -> list[tuple[str, str]]:
    """Each `from mini_harness... import ...` statement in README.md and docs/*.md (a
    parenthesized one whole), with the file and line it is on."""
    found = []
    pattern = re.compile(r"^[ \t]*(from mini_harness[\w.]* import (?:\([^)]*\)|[^\n]+))", re.M)
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            where = f"{doc.name}:{text.count(chr(10), 0, match.start()) + 1}"
            found.append((where, match.group(1).split("#")[0].strip()))
    return found


def inline_code(doc: Path) -> list[str]:
    """The inline code spans of a Markdown file, outside fenced blocks."""
    text = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.S | re.M)
    return re.findall(r"`([^`\n]+)`", text)


def documented_names() -> list[tuple[str, str]]:
    """Each dotted name that starts an inline code span (`mini_harness.replay.History`,
    `mini_harness.replay.fold_corpus(paths, ...)`, `mini_harness.cli:cli`); in
    docs/otel.md, not the names of span attributes in the project's namespace
    (`mini_harness.call.id`: its first part names no module of the package)."""
    modules = {info.name for info in pkgutil.iter_modules(mini_harness.__path__)}
    found = []
    for doc in DOCS:
        for span in inline_code(doc):
            match = re.match(r"mini_harness(?:\.\w+)*(?::\w+)?", span)
            if not match or "*" in span:
                continue
            first = match.group().partition(":")[0].split(".")[1:2]
            if doc.name == "otel.md" and first and first[0] not in modules:
                continue
            found.append((doc.name, match.group()))
    return found


def documented_files() -> list[tuple[str, str]]:
    """Each source or test file named in an inline code span (`cli/session.py`,
    `tests/agent/test_loop.py::TestStops::test_retries_are_recorded`)."""
    found = []
    for doc in DOCS:
        for span in inline_code(doc):
            if span in EXAMPLE_FILES or span.startswith("."):
                continue
            if re.fullmatch(r"[\w./-]+\.py(?:::\w+)*", span):
                found.append((doc.name, span))
    return found


def resolve_file(path: str) -> list[Path]:
    """Where a file a document names is: from the root, the package or tests/; a bare test
    file name anywhere under tests/."""
    for base in (ROOT, ROOT / "src", ROOT / "src" / "mini_harness", ROOT / "tests"):
        if (base / path).is_file():
            return [base / path]
    return sorted((ROOT / "tests").rglob(path)) if "/" not in path else []


def defines(source: Path, names: list[str]) -> bool:
    """Whether `source` defines the class, method or function `names` spells out."""
    body: list[ast.stmt] = ast.parse(source.read_text(encoding="utf-8")).body
    for name in names:
        node = next(
            (
                n
                for n in body
                if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and n.name == name
            ),
            None,
        )
        if node is None:
            return False
        body = node.body
    return True


class TestDocumentedNames:
    @pytest.mark.parametrize(("where", "statement"), documented_imports())
    def test_every_import_shown_works(self, where: str, statement: str) -> None:
        """Every `from mini_harness... import ...` in README.md and docs/ imports."""
        exec(statement, {})

    @pytest.mark.parametrize(("doc", "name"), documented_names())
    def test_every_dotted_name_resolves(self, doc: str, name: str) -> None:
        """A module or attribute the docs name (`mini_harness.agent.AgentLoop`) exists."""
        module_path, _, attribute = name.partition(":")
        parts = module_path.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                target: object = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for part in [*parts[cut:], *filter(None, [attribute])]:
                assert hasattr(target, part), f"{doc}: {name} ({part} not found)"
                target = getattr(target, part)
            return
        pytest.fail(f"{doc}: {name} names no module")

    @pytest.mark.parametrize(("doc", "reference"), documented_files())
    def test_every_file_named_exists(self, doc: str, reference: str) -> None:
        """A file the docs name exists, and so does the test class or test it points at."""
        path, *names = reference.split("::")
        candidates = resolve_file(path)
        assert candidates, f"{doc}: {path} not found"
        assert any(defines(source, names) for source in candidates), f"{doc}: {reference}"

    def test_the_docs_are_read(self) -> None:
        """The collectors above find what the docs hold (a change to their form shows)."""
        assert len(documented_imports()) >= 20
        assert len(documented_names()) >= 20
        assert len(documented_files()) >= 50
