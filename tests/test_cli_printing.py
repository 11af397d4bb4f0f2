"""What an agent run prints while it goes: lines that never run into each other."""

from __future__ import annotations

import pytest

from mini_harness.cli.printing import PrintingReporter


class TestCutStream:
    def test_a_line_after_a_cut_stream_starts_a_line_of_its_own(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Text streamed without its end (the stream was cut) is closed before the next
        `[mini-harness]` line, which does not run into it."""
        reporter = PrintingReporter("script:s.json")
        reporter.text("half a sen")
        reporter.say("Transcript: t.jsonl")
        assert capsys.readouterr().out == (
            "[mini-harness] Model response:\nhalf a sen\n[mini-harness] Transcript: t.jsonl\n"
        )
