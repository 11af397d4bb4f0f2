from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mini_harness.cli import cli, replay_output
from mini_harness.replay import TranscriptFold
from tests.replay.generate import write_transcript


@pytest.fixture(name="log")
def _log(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    write_transcript(path, 2_000)
    return path


class TestInterrupt:
    def test_ctrl_c_prints_the_partial_report(
        self, log: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Ctrl-C mid-fold prints the report so far, says it is partial, and exits 130."""
        shown: list[Any] = []
        original = replay_output.TextOutput.call

        def call(self: Any, item: Any) -> None:
            if len(shown) == 10:
                raise KeyboardInterrupt
            shown.append(item)
            original(self, item)

        monkeypatch.setattr(replay_output.TextOutput, "call", call)
        result = CliRunner().invoke(cli, ["replay", str(log)])
        assert result.exit_code == 130
        assert (
            result.stdout.count("  echo  succeeded") + result.stdout.count("  echo  failed") == 10
        )
        assert "  Run 1 00000000000000000000000000000000: 10 succeeded, 1 failed, 0 in doubt" in (
            result.stdout
        )
        assert result.stderr == (
            "[mini-harness] Error: interrupted at line 24: the report above is partial\n"
        )

    def test_ctrl_c_in_json_mode_keeps_the_calls_folded_so_far(
        self, log: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Calls are written in batches: those folded before Ctrl-C are all in the document."""
        import orjson

        shown: list[Any] = []
        original = replay_output.JsonOutput.call

        def call(self: Any, item: Any) -> None:
            if len(shown) == 10:
                raise KeyboardInterrupt
            shown.append(item)
            original(self, item)

        monkeypatch.setattr(replay_output.JsonOutput, "call", call)
        result = CliRunner().invoke(cli, ["replay", str(log), "--json"])
        assert result.exit_code == 130
        document = orjson.loads(result.stdout)
        assert document["interrupted"] is True
        assert [c["callId"] for c in document["calls"]] == [c.call_id for c in shown]
        assert len(document["calls"]) == 10

    def test_ctrl_c_in_json_mode_still_prints_a_document(
        self, log: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The JSON document of an interrupted fold is complete JSON and says interrupted."""
        import orjson

        def call(self: Any, item: Any) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(replay_output.JsonOutput, "call", call)
        result = CliRunner().invoke(cli, ["replay", str(log), "--json"])
        assert result.exit_code == 130
        document = orjson.loads(result.stdout)
        assert (document["interrupted"], document["exitCode"], document["calls"]) == (
            True,
            130,
            [],
        )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestProgress:
    def test_progress_on_a_terminal(self, log: Path) -> None:
        """On a terminal the bar shows percentages of the file read, then erases itself."""
        fold = TranscriptFold(log)
        terminal = _Terminal()
        progress = replay_output.Progress(fold, log.stat().st_size, terminal)
        for index, _ in enumerate(fold):
            if index % 100 == 0:
                progress.update()
        progress.clear()
        text = terminal.getvalue()
        assert text.startswith("\r[mini-harness] replay: 0% of 1 MB")
        assert "% of 1 MB\r[mini-harness] replay: 9" in text
        assert text.endswith("\r\x1b[K")

    def test_no_progress_when_not_a_terminal(self, log: Path) -> None:
        """Piped stderr never gets a progress bar."""
        fold = TranscriptFold(log)
        stream = io.StringIO()
        progress = replay_output.Progress(fold, log.stat().st_size, stream)
        for _ in fold:
            progress.update()
        progress.clear()
        assert stream.getvalue() == ""
