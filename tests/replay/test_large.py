from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mini_harness.replay import Call, TranscriptFold
from tests.replay.generate import write_transcript

# Peak memory allowed for folding 1,000,000 events (the bound).
MAX_RSS_MB = 150
# ... and for fold_transcript, which holds every call of them (about 500,000).
MAX_HELD_RSS_MB = 200

_MEASURE = textwrap.dedent(
    """
    import resource, sys
    from mini_harness.cli import cli
    code = cli.main(["replay", sys.argv[1], "--json"], standalone_mode=False)
    # VmHWM is this interpreter's own peak. ru_maxrss is not: Linux carries the peak of
    # the process that started it across exec (pytest's, which may be far larger).
    try:
        with open("/proc/self/status") as status:
            peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) // 1024
    except (OSError, StopIteration):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"exit={code} peak_mb={peak}", file=sys.stderr)
    """
)


_HOLD = textwrap.dedent(
    """
    import sys
    from mini_harness.replay import fold_transcript
    result = fold_transcript(sys.argv[1])
    with open("/proc/self/status") as status:
        peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) // 1024
    print(len(result.calls), peak)
    """
)


def _hold_in_subprocess(path: Path) -> tuple[int, int]:
    """Run fold_transcript in a fresh interpreter; the number of calls it holds, peak RSS (MB)."""
    proc = subprocess.run(
        [sys.executable, "-c", _HOLD, str(path)], capture_output=True, check=True, text=True
    )
    calls, peak = proc.stdout.split()
    return int(calls), int(peak)


def _fold_in_subprocess(path: Path) -> tuple[int, int, bytes]:
    """Run `replay --json` in a fresh interpreter; return its exit code, peak RSS (MB), output."""
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, check=False
    )
    last = proc.stderr.decode().strip().splitlines()[-1]
    fields = dict(part.split("=") for part in last.split())
    return int(fields["exit"]), int(fields["peak_mb"]), proc.stdout


class TestLargeTranscripts:
    def test_fold_streams_a_large_transcript(self, tmp_path: Path) -> None:
        """100k events fold in one pass, every call accounted for, in bounded memory."""
        path = tmp_path / "large.jsonl"
        write_transcript(path, 100_000)
        fold = TranscriptFold(path)
        calls = sum(1 for item in fold if isinstance(item, Call))
        totals = fold.history.totals
        assert calls == totals.calls == 49_998
        assert (totals.failed, totals.in_doubt, fold.history.problems) == (4_998, 0, [])
        code, peak_mb, output = _fold_in_subprocess(path)
        assert code == 0
        assert output.endswith(b'"interrupted":false,"exitCode":0}\n')
        assert peak_mb < MAX_RSS_MB

    @pytest.mark.thorough
    def test_million_events_under_the_memory_bound(self, tmp_path: Path) -> None:
        """Folding 1,000,000 events through the CLI peaks under 150 MB of RSS."""
        path = tmp_path / "million.jsonl"
        write_transcript(path, 1_000_000)
        code, peak_mb, _ = _fold_in_subprocess(path)
        assert code == 0
        assert peak_mb < MAX_RSS_MB, f"peak RSS {peak_mb} MB"

    @pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
    def test_the_in_memory_fold_holds_calls_compactly(self, tmp_path: Path) -> None:
        """fold_transcript of 100k events holds its 50k calls in a few megabytes."""
        path = tmp_path / "large.jsonl"
        write_transcript(path, 100_000)
        calls, peak_mb = _hold_in_subprocess(path)
        assert calls == 49_998
        assert peak_mb < 60

    @pytest.mark.thorough
    @pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
    def test_million_events_held_under_the_memory_bound(self, tmp_path: Path) -> None:
        """fold_transcript of 1,000,000 events peaks under 200 MB of RSS."""
        path = tmp_path / "million.jsonl"
        write_transcript(path, 1_000_000)
        calls, peak_mb = _hold_in_subprocess(path)
        assert calls == 499_998
        assert peak_mb < MAX_HELD_RSS_MB, f"peak RSS {peak_mb} MB"
