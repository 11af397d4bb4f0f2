"""The console script's quick route (no click) behaves exactly like the click command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mini_harness.console import quick_arguments
from mini_harness.transcripts import TranscriptReader

HELLO = '{"text":"hello"}'
CLICK_ROUTE = "import sys; from mini_harness.cli import main; sys.argv[0] = 'mini-harness'; main()"
QUICK_ROUTE = (
    "import sys; from mini_harness.console import main, quick_arguments; "
    "assert quick_arguments(sys.argv[1:]) is not None, 'not a quick case'; main()"
)


def _run(route: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", route, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )


def _stable(text: str) -> str:
    text = re.sub(r'"durationMs":\d+', '"durationMs":0', text)
    return re.sub(r"\(run [0-9a-f]{32}\)", "(run RUN)", text)


def _events(path: Path) -> list[tuple[str, object]]:
    """What a transcript records, without ids, times and hashes."""
    if not path.exists():
        return []
    out: list[tuple[str, object]] = []
    for record in TranscriptReader(path):
        event = record.event
        kind = type(event).__name__
        payload = getattr(event, "input", getattr(event, "output", getattr(event, "error", None)))
        out.append((kind, payload))
    return out


# Each case: the arguments, with LOG standing for a transcript path in a fresh directory.
QUICK_CASES = {
    "plain": ["--tool", "echo", "--tool-input", HELLO],
    "logged": ["--tool", "echo", "--tool-input", HELLO, "--log", "LOG"],
    "equals forms": ["--tool=echo", f"--tool-input={HELLO}", "--transcript=LOG"],
    "fsync": ["--tool", "echo", "--log", "LOG", "--fsync", "never", "--tool-input", HELLO],
    "no input": ["--tool", "echo", "--log", "LOG"],
    "unknown tool": ["--tool", "nope", "--log", "LOG"],
    "invalid input": ["--tool", "echo", "--tool-input", '{"text":1}', "--log", "LOG"],
    "missing property": ["--tool", "echo", "--tool-input", "{}"],
    "not JSON": ["--tool", "echo", "--tool-input", "{bad"],
    "wide integer": ["--tool", "echo", "--tool-input", '{"text":"a","n":123456789012345678901}'],
    "non-ASCII": ["--tool", "echo", "--tool-input", '{"text":"h\u00e9llo \u2713"}'],
    "escape in a key": ["--tool", "echo", "--tool-input", '{"\\u001b[31mred":1}'],
    "log is not a transcript": ["--tool", "echo", "--log", "NOTES"],
    "log in a missing directory": ["--tool", "echo", "--log", "missing/dir/t.jsonl"],
}


@pytest.mark.parametrize("args", QUICK_CASES.values(), ids=QUICK_CASES.keys())
def test_the_quick_route_prints_and_records_what_click_does(
    tmp_path: Path, args: list[str]
) -> None:
    results = []
    for route in (QUICK_ROUTE, CLICK_ROUTE):
        cwd = tmp_path / ("quick" if route is QUICK_ROUTE else "click")
        cwd.mkdir()
        (cwd / "notes.txt").write_text("my notes\n")
        argv = [{"LOG": "t.jsonl", "NOTES": "notes.txt"}.get(arg, arg) for arg in args]
        proc = _run(route, argv, cwd)
        results.append(
            (
                proc.returncode,
                _stable(proc.stdout),
                _stable(proc.stderr),
                _events(cwd / "t.jsonl"),
                (cwd / "notes.txt").read_text(),
            )
        )
    assert results[0] == results[1]
    assert "Traceback" not in results[0][2]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["-h"],
        ["--version"],
        ["tools"],
        ["replay", "t.jsonl"],
        ["--tool", "echo", "--context-report"],
        ["--tool", "echo", "--workspace", "."],
        ["--tool", "echo", "--tool", "echo"],
        ["--tool", "echo", "--log", "a", "--transcript", "b"],
        ["--tool"],
        ["--tool", ""],
        ["--tool", "--log"],
        ["--tool", "echo", "--tool-input", "-1"],
        ["--tool", "echo", "--fsync", "always"],  # needs --log: click says so
        ["--tool", "echo", "--log", "t", "--fsync", "sometimes"],
        ["--tool", "echo", "--log", "t", "--redact-env", "HOME"],
        ["--tool", "echo", "--", "x"],
        ["--tool-input", HELLO],
    ],
)
def test_anything_else_goes_to_click(args: list[str]) -> None:
    assert quick_arguments(args) is None


def test_a_log_path_click_would_refuse_goes_to_click(tmp_path: Path) -> None:
    assert quick_arguments(["--tool", "echo", "--log", str(tmp_path)]) is None  # a directory
    existing = tmp_path / "t.jsonl"
    existing.write_text("")
    assert quick_arguments(["--tool", "echo", "--log", str(existing)]) == {
        "tool": "echo",
        "log": str(existing),
    }


def test_the_console_script_dispatches_without_importing_click(tmp_path: Path) -> None:
    code = (
        "import sys; from mini_harness.console import main\n"
        "sys.argv = ['mini-harness', '--tool', 'echo', '--tool-input', '{}', '--log', 't.jsonl']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        "print(code, 'click' in sys.modules, open('t.jsonl').read().count(chr(10)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert proc.stdout.splitlines()[-1] == "1 False 4"  # {} lacks text: exit 1, still recorded


def test_shell_completion_goes_to_click(tmp_path: Path) -> None:
    """Click prints its completion script when asked through the environment."""
    proc = subprocess.run(
        [sys.executable, "-c", "from mini_harness.console import main; main()", "--tool", "echo"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "_MINI_HARNESS_COMPLETE": "bash_source"},
        check=False,
    )
    assert proc.returncode == 0
    assert "complete" in proc.stdout
    assert "Task: Dispatch tool" not in proc.stdout
