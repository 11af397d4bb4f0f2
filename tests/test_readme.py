"""README.md renders as written and its examples print what it shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from mini_harness.cli import cli

README = Path(__file__).resolve().parents[1] / "README.md"


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
            assert printed.splitlines() == shown, command
            checked += 1
        assert checked >= 3
