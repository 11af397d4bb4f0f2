from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.agent.recorded_runs import LIST_READ_ANSWER, invoke, write_script


@pytest.fixture(autouse=True)
def _loopback_not_proxied(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback servers the tests start are reached directly, also on a machine whose
    environment names a proxy (the providers' SDKs honour the proxy variables)."""
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [os.environ.get(name, ""), "127.0.0.1", "localhost"]
        monkeypatch.setenv(name, ",".join(host for host in hosts if host))


@pytest.fixture(name="workspace")
def _workspace(tmp_path: Path) -> Path:
    """A small workspace: a README, a source file and project rules."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\nA tiny project.\n")
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "AGENTS.md").write_text("Answer in one sentence.\n")
    return root


@pytest.fixture(name="ws")
def _ws(tmp_path: Path) -> Path:
    """A workspace holding `notes.txt` ("old"), for the approval tests' patches."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("old\n")
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


@pytest.fixture(name="readme_run")
def _readme_run(readme_ws: Path, tmp_path: Path) -> Path:
    """A three-step run of the built-in tools in `readme_ws` (list the files, read
    the README, answer), logged outside the workspace."""
    log = tmp_path / "t.jsonl"
    model = write_script(tmp_path / "script.json", LIST_READ_ANSWER)
    assert invoke(["run", "What is it?", "--model", model, "--log", str(log)]).exit_code == 0
    return log
