from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolCallError, ToolRuntime
from mini_harness.cli import cli
from mini_harness.replay import fold_transcript, json_equal, rerun_transcript
from mini_harness.runtime import MemorySink
from mini_harness.transcripts import JsonlTranscript
from tests.replay import registries

MODULE = "tests.replay.registries"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(name="log")
def _log(tmp_path: Path) -> Path:
    """One run: echo (read-only), write_note (no hints), flaky (idempotent, fails)."""
    path = tmp_path / "t.jsonl"
    registries.written.clear()
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registries.recording(), sink, run_id="a" * 32)
        runtime.dispatch("echo", {"text": "hello"})
        runtime.dispatch("write_note", {"note": "n"})
        with pytest.raises(ToolCallError):
            runtime.dispatch("flaky", {})
    registries.written.clear()
    return path


class TestOutcomes:
    def test_unchanged_registry_matches(self, log: Path) -> None:
        """Against the same tools, read-only calls match and the side-effecting one is skipped."""
        report = rerun_transcript(log, registries.same())
        assert [(o.call.name, o.outcome) for o in report.outcomes] == [
            ("echo", "matched"),
            ("write_note", "skipped"),
            ("flaky", "matched"),
        ]
        assert report.outcomes[1].reason == (
            "write_note is not marked readOnlyHint or idempotentHint (--allow-side-effects runs it)"
        )
        assert registries.written == []
        assert report.ok

    def test_changed_behaviour_diverges_with_a_diff(self, log: Path) -> None:
        """A swapped registry whose echo shouts shows as diverged, naming the call and values."""
        result = run(
            "replay", str(log), "--rerun", "--registry", f"{MODULE}:upper", "--approve", "auto"
        )
        assert result.exit_code == 1
        assert (
            "  aaaaaaaaaaaa-1  echo  diverged\n"
            "      --- recorded aaaaaaaaaaaa-1 (echo)\n"
            "      +++ re-run aaaaaaaaaaaa-1 (echo)\n"
            "      @@ -1,3 +1,3 @@\n"
            "       {\n"
            '      -  "text": "hello"\n'
            '      +  "text": "HELLO"\n'
            "       }\n"
        ) in result.stdout
        assert "  aaaaaaaaaaaa-3  flaky  now-succeeds\n" in result.stdout
        assert "  aaaaaaaaaaaa-2  write_note  skipped: " in result.stdout
        assert registries.written == []
        assert result.stderr == (
            "[mini-harness] Error: re-run differs from the record: 1 diverged, 1 now-succeeds\n"
        )

    def test_now_fails_and_drift(self, log: Path) -> None:
        """Tools that now raise are now-fails; changed and removed definitions are drift."""
        report = rerun_transcript(log, registries.broken(), allow_side_effects=True)
        outcomes = [(o.call.name, o.outcome) for o in report.outcomes]
        assert outcomes == [
            ("echo", "now-fails"),
            ("write_note", "now-fails"),
            ("flaky", "matched"),
        ]
        assert report.outcomes[0].reason == "handler_error: Tool echo failed: RuntimeError: down"
        assert report.outcomes[1].reason == (
            "unknown_tool: Unknown tool: write_note. Registered tools: echo, flaky"
        )
        assert [d.describe() for d in report.drift] == [
            "echo: description changed since run 1",
            "write_note: no longer in the registry (recorded in run 1)",
        ]
        assert not report.ok

    def test_side_effects_run_only_when_allowed(self, log: Path) -> None:
        """--allow-side-effects runs the tool without hints; it matches its record."""
        result = run("replay", str(log), "--rerun", "--registry", f"{MODULE}:same",
                     "--allow-side-effects", "--approve", "auto")  # fmt: skip
        assert registries.written == [{"note": "n"}]
        assert "  aaaaaaaaaaaa-2  write_note  matched\n" in result.stdout
        assert result.exit_code == 0
        assert result.stdout.splitlines()[-1] == (
            "[mini-harness] Re-run: 3 matched, 0 diverged, 0 now-fails, 0 now-succeeds, "
            "0 skipped; 0 tool definitions drifted"
        )

    def test_in_doubt_calls_are_skipped(self, log: Path) -> None:
        """A call with no recorded outcome is skipped with the reason."""
        from mini_harness.events import ToolCalled

        with JsonlTranscript(log) as sink:
            sink.append(ToolCalled("2026-01-01T00:00:00.000000Z", "a" * 32, "x", "echo", {}))
        report = rerun_transcript(log, registries.same())
        assert (report.outcomes[-1].outcome, report.outcomes[-1].reason) == (
            "skipped",
            "in doubt: no recorded outcome to compare with",
        )

    def test_rerun_is_logged_as_a_new_transcript(self, log: Path, tmp_path: Path) -> None:
        """--log OUT records the re-run itself; folding it shows the calls that ran."""
        out = tmp_path / "rerun.jsonl"
        result = run(
            "replay", str(log), "--rerun", "--registry", f"{MODULE}:same", "--log", str(out)
        )
        assert result.exit_code == 0
        assert f"[mini-harness] Re-run recorded in {out}\n" in result.stdout
        folded = fold_transcript(out)
        assert [(c.name, c.status) for c in folded.calls] == [
            ("echo", "succeeded"),
            ("flaky", "failed"),
        ]

    def test_api_sink(self, log: Path) -> None:
        """The API records a re-run into any sink, one run per recorded run."""
        sink = MemorySink()
        rerun_transcript(log, registries.same(), sink=sink)
        assert [type(e).__name__ for e in sink.events][:3] == [
            "TranscriptStarted",
            "RunStarted",
            "ToolCalled",
        ]

    def test_json_carries_outcomes(self, log: Path) -> None:
        """--json --rerun puts each call's outcome (and diff) in the document."""
        result = run("replay", str(log), "--rerun", "--json", "--registry", f"{MODULE}:upper",
                     "--approve", "auto")  # fmt: skip
        document = orjson.loads(result.stdout)
        assert [c["rerun"]["outcome"] for c in document["calls"]] == [
            "diverged",
            "skipped",
            "now-succeeds",
        ]
        assert '+  "text": "HELLO"' in document["calls"][0]["rerun"]["diff"]
        assert document["rerun"] == {
            "matched": 0,
            "diverged": 1,
            "now-fails": 0,
            "now-succeeds": 1,
            "skipped": 1,
        }
        assert document["exitCode"] == 1 == result.exit_code


class TestRegistrySpec:
    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            ("nocolon", "--registry must look like module:attribute (got 'nocolon')"),
            (
                "no_such_module_xyz:r",
                "--registry no_such_module_xyz:r: no module named 'no_such_module_xyz'",
            ),
            (f"{MODULE}:missing", f"--registry {MODULE}:missing: {MODULE} has no attribute"),
            (
                f"{MODULE}:not_a_registry",
                "expected a ToolRegistry or a callable returning one, got int",
            ),
            (f"{MODULE}:raises", "calling raises() failed: ValueError: cannot build"),
        ],
    )
    def test_bad_specs_are_usage_errors(self, log: Path, spec: str, message: str) -> None:
        """A --registry that names no registry is exit 2 with one line saying why."""
        result = run("replay", str(log), "--rerun", "--registry", spec)
        assert result.exit_code == 2
        assert result.stderr.startswith("[mini-harness] Error: ")
        assert message in result.stderr
        assert len(result.stderr.splitlines()) == 1
        assert result.stdout == ""

    def test_registry_object_or_factory(self, log: Path) -> None:
        """Both a ToolRegistry attribute and a zero-argument function returning one load."""
        for spec in (f"{MODULE}:same", "mini_harness.tools:default_registry"):
            result = run("replay", str(log), "--rerun", "--registry", spec)
            assert "  aaaaaaaaaaaa-1  echo  matched\n" in result.stdout

    def test_log_must_not_be_the_transcript(self, log: Path) -> None:
        """Re-running into the file being read is refused up front."""
        result = run("replay", str(log), "--rerun", "--log", str(log))
        assert result.exit_code == 2
        assert "--log must name a new file" in result.stderr


class TestJsonEqual:
    @pytest.mark.parametrize(
        ("a", "b", "equal"),
        [
            ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, True),
            (1, 1.0, True),
            (True, 1, False),
            ([False], [0], False),
            ({"a": None}, {}, False),
            ([1, 2], [2, 1], False),
        ],
    )
    def test_json_values(self, a: object, b: object, equal: bool) -> None:
        """Outputs compare as JSON values: key order never matters, true is not 1."""
        assert json_equal(a, b) is equal


# Imports every replay module and re-runs a transcript with a registry of its own, then
# names any module of the tools layer or the registry loader that came in with them.
_LAYERING_PROBE = """
import pkgutil, sys
import mini_harness.replay as replay
for module in pkgutil.walk_packages(replay.__path__, "mini_harness.replay."):
    __import__(module.name)
from mini_harness.replay import rerun_transcript
from mini_harness.runtime import ToolRegistry
rerun_transcript(sys.argv[1], ToolRegistry())
layers = ("mini_harness.tools", "mini_harness.cli")
print(sorted(name for name in sys.modules if name.startswith(layers)))
"""


class TestLayering:
    def test_replay_does_not_load_the_tools(self, log: Path) -> None:
        """Replay works with the registry it is given: it never imports the built-in tools."""
        done = subprocess.run(
            [sys.executable, "-c", _LAYERING_PROBE, str(log)],
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout == "[]\n"
