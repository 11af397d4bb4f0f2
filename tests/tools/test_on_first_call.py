"""Built-in handlers are made on a tool's first call, once, whichever thread calls first."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from mini_harness import ToolRuntime
from mini_harness.tools import OnFirstCall, Workspace, default_registry


class TestOnFirstCall:
    def test_concurrent_first_calls_make_one_handler(self) -> None:
        """Threads calling a tool for the first time at once share one handler."""
        made: list[int] = []
        start = threading.Barrier(8)

        def make(tag: str) -> Any:
            time.sleep(0.01)  # a slow import: the other threads arrive meanwhile
            made.append(1)
            return lambda tool_input: (tag, tool_input)

        handler = OnFirstCall(make, "t")
        results: list[object] = []

        def call(index: int) -> None:
            start.wait()
            results.append(handler(index))

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(made) == 1
        assert sorted(results) == [("t", i) for i in range(8)]  # type: ignore[type-var]

    def test_a_made_handler_shows_as_itself(self, tmp_path: Path) -> None:
        """Once called, the handler's repr is the tool's own (naming its workspace)."""
        (tmp_path / "a.txt").write_text("a\n")
        registry = default_registry(tmp_path)
        ToolRuntime(registry).dispatch("read_file", {"path": "a.txt"})
        shown = repr(registry.get("read_file").handler)  # type: ignore[union-attr]
        assert shown.startswith("ReadFile(")
        assert repr(Workspace(tmp_path)) in shown
