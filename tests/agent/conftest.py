from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest


@pytest.fixture(name="workspace")
def _workspace(tmp_path: Path) -> Path:
    """A small workspace: a README, a source file and project rules."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\nA tiny project.\n")
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "AGENTS.md").write_text("Answer in one sentence.\n")
    return root


@pytest.fixture(name="write_script")
def _write_script(tmp_path: Path) -> Callable[[list[dict[str, Any]]], Path]:
    """Write a script file of the given responses; return its path."""
    counter = iter(range(1000))

    def write(responses: list[dict[str, Any]]) -> Path:
        path = tmp_path / f"script-{next(counter)}.json"
        path.write_bytes(orjson.dumps({"responses": responses}))
        return path

    return write
