"""`make demo`: it installs what it needs, and its scripted model claims nothing it did
not see happen."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mini_harness.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def test_demo_installs_the_sandbox_first() -> None:
    """The demo target depends on the target that installs bubblewrap when root can."""
    makefile = (ROOT / "Makefile").read_text()
    prerequisites = re.search(r"^demo:(.*)$", makefile, re.MULTILINE)
    assert prerequisites is not None
    assert "sandbox" in prerequisites.group(1).split()


def test_a_denied_check_is_not_claimed_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coding demo with its check denied (as without the sandbox): the answer does not
    say the check passed."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "check.py").write_text("from calc import add\nassert add(2, 3) == 5\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    script = f"script:{ROOT / 'examples' / 'coding-demo.json'}"
    result = CliRunner().invoke(
        cli, ["run", "fix add", "--model", script, "--approve", "never", "--no-log"]
    )
    assert "  failed: " in result.stdout
    answer = result.stdout.split("[mini-harness] Model response:\n")[-1]
    assert "passes" not in answer
