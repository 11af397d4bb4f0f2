"""Replay reports of kept transcripts are golden: a change in what replay prints is visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_harness.testing import Golden

HERE = Path(__file__).parent
REPLAYED = [
    HERE / "fixtures" / "v1-tool-calls.jsonl",
    HERE / "goldens" / "test_transcripts" / "TestApiTranscripts.test_multi_run.jsonl",
    HERE / "goldens" / "test_transcripts" / "TestCliTranscripts.test_runs_append.jsonl",
]


class TestReplayGoldens:
    @pytest.mark.parametrize("path", REPLAYED, ids=[p.stem for p in REPLAYED])
    def test_fold_report_and_json(self, golden: Golden, path: Path) -> None:
        """The fold, its context reports and its --json document stay as recorded."""
        golden.check_cli("replay", str(path))
        golden.check_cli("replay", str(path), "--context-report", name="report")
        golden.check_cli("replay", str(path), "--json", name="json")

    def test_v1_fixture_replays_forever(self, golden: Golden) -> None:
        """The format-v1 fixture folds cleanly (exit 0) with every outcome it holds."""
        result = golden.cli("replay", str(REPLAYED[0]), "--json")
        assert result.exit_code == 0
