from __future__ import annotations

from pathlib import Path

import pytest

from mini_harness import ToolRegistry, ToolRuntime
from mini_harness.transcripts import JsonlTranscript
from tests.transcripts.corpus import write_corpus


@pytest.fixture(name="corpus")
def _corpus(tmp_path: Path, registry: ToolRegistry) -> list[Path]:
    """Four small transcripts of different shapes (see corpus.py), fresh per test."""
    directory = tmp_path / "corpus"
    directory.mkdir()
    return write_corpus(directory, registry)


@pytest.fixture(name="log")
def _log(tmp_path: Path, registry: ToolRegistry) -> Path:
    """A clean transcript: header, one run of three echo calls (8 lines)."""
    path = tmp_path / "t.jsonl"
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registry, sink)
        for text in ("a", "b", "c"):
            runtime.dispatch("echo", {"text": text})
    return path
