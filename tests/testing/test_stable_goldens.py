"""Regenerating the project's goldens elsewhere changes nothing: normalization is complete."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def golden_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted((root / "goldens").rglob("*"))
        if path.is_file() and not path.name.endswith(".obtained")
    }


class TestStableGoldens:
    def test_update_in_another_place_rewrites_nothing(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A copy of tests/golden run with --update-goldens (new tmp paths, ids, times and
        durations) reproduces every checked-in golden byte for byte."""
        monkeypatch.delenv("CI", raising=False)
        copy = pytester.path / "golden"
        shutil.copytree(
            TESTS / "golden", copy, ignore=shutil.ignore_patterns("__pycache__", "*.obtained")
        )
        shutil.copy(TESTS / "conftest.py", pytester.path / "conftest.py")
        before = golden_files(copy)
        assert len(before) >= 30
        result = pytester.runpytest("-p", "no:hypothesispytest", "--update-goldens", "golden")
        outcomes = result.parseoutcomes()
        assert outcomes.get("failed", 0) == 0
        assert outcomes.get("errors", 0) == 0
        assert "mini-harness goldens" not in result.stdout.str()
        assert golden_files(copy) == before
