from __future__ import annotations

from pathlib import Path

import pytest

from mini_harness import ToolRegistry
from tests.transcripts.corpus import write_corpus


@pytest.fixture(name="corpus")
def _corpus(tmp_path: Path, registry: ToolRegistry) -> list[Path]:
    """Four small transcripts of different shapes (see corpus.py), fresh per test."""
    directory = tmp_path / "corpus"
    directory.mkdir()
    return write_corpus(directory, registry)
