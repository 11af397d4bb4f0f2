"""Replay reports of kept transcripts are golden: a change in what replay prints is visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_harness.testing import Golden

HERE = Path(__file__).parent
# Relative to HERE, so that the reports name the same path wherever the suite runs.
REPLAYED = [
    Path("fixtures") / "v1-tool-calls.jsonl",
    Path("goldens") / "test_transcripts" / "TestApiTranscripts.test_multi_run.jsonl",
    Path("goldens") / "test_transcripts" / "TestCliTranscripts.test_runs_append.jsonl",
]


@pytest.fixture(autouse=True)
def _in_golden_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)


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
