"""The acceptance scenario end to end: a fresh project that only pip-installs mini-harness.

Builds a virtualenv, installs this checkout (not editable) and pytest into it, and drives
the user's flow with real pytest processes. Slow (a venv and an install), so thorough only;
tests/testing/test_plugin.py covers the same flow in-process in the quick run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_TEST = """
from pathlib import Path

from mini_harness import ToolRegistry


def test_greet(golden):
    greeting = Path(__file__).with_name("greeting.txt").read_text()
    registry = ToolRegistry()
    registry.add(
        "greet",
        lambda data: {"greeting": f"{greeting}, {data['name']}"},
        description="Greets someone.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
    )
    golden.runtime(registry).dispatch("greet", {"name": "Ada"})
    golden.check_transcript()
"""


def project_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: none of this run's Python paths, no CI."""
    env = {k: v for k, v in os.environ.items() if k not in {"CI", "PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(extra)
    return env


@pytest.mark.thorough
class TestInstalledPackage:
    def test_fresh_project(self, tmp_path: Path) -> None:
        """Missing golden fails; --update-goldens creates it; a change fails with a diff;
        with CI set nothing is written."""
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        python = venv / "bin" / "python"
        install = subprocess.run(
            [sys.executable, "-m", "pip", "--python", python, "install", "-q", ROOT, "pytest"],
            capture_output=True,
            text=True,
            check=False,
            env=project_env(),
        )
        assert install.returncode == 0, install.stderr
        project = tmp_path / "project"
        project.mkdir()
        (project / "test_tool.py").write_text(USER_TEST)
        (project / "greeting.txt").write_text("hello")
        golden = project / "goldens" / "test_tool" / "test_greet.jsonl"

        def pytest_run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                cwd=project,
                capture_output=True,
                text=True,
                check=False,
                env=project_env(**env),
            )

        missing = pytest_run()
        assert missing.returncode == 1
        assert "golden file goldens/test_tool/test_greet.jsonl is missing" in missing.stdout
        assert not golden.exists()

        assert pytest_run("--update-goldens").returncode == 0
        assert '"greeting":"hello, Ada"' in golden.read_text()
        assert pytest_run().returncode == 0

        (project / "greeting.txt").write_text("good day")
        changed = pytest_run()
        assert changed.returncode == 1
        assert "output differs from golden file goldens/test_tool/test_greet.jsonl" in (
            changed.stdout
        )
        assert '-{"type":"ToolSucceeded"' in changed.stdout
        assert '+{"type":"ToolSucceeded"' in changed.stdout
        assert '"greeting":"good day, Ada"' in golden.with_suffix(".jsonl.obtained").read_text()

        golden.unlink()
        in_ci = pytest_run("--update-goldens", CI="true")
        assert in_ci.returncode == 1
        assert "CI is set, so goldens are never written here (--update-goldens was ignored)" in (
            in_ci.stdout
        )
        assert not golden.exists()
