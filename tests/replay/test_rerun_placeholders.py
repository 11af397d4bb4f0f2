"""Re-run meets what the log could not hold: capped and redacted values, missing runs and
registries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolCallError, ToolRuntime
from mini_harness.cli import cli
from mini_harness.replay import rerun_transcript
from mini_harness.runtime import ToolAnnotations, ToolDefinition, ToolRegistry
from mini_harness.transcripts import JsonlTranscript, Redactor
from tests.replay import registries

CAP = 2048
SECRET = "hunter2-secret-value"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _registry(calls: list[Any], *, shout: bool = False) -> ToolRegistry:
    """`copy` returns its input (or an upper-cased one with `shout`) and counts its calls."""

    def copy(data: Any) -> Any:
        calls.append(data)
        return {"text": data["text"].upper() if shout else data["text"]}

    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            "copy",
            "Return the text.",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            annotations=ToolAnnotations(read_only_hint=True),
        ),
        copy,
    )
    return registry


def _record(path: Path, texts: list[str], **options: Any) -> None:
    with JsonlTranscript(path, max_event_bytes=CAP, **options) as sink:
        runtime = ToolRuntime(_registry([]), sink, run_id="c" * 32)
        for text in texts:
            runtime.dispatch("copy", {"text": text})


class TestUnrecordedInput:
    def test_a_capped_input_is_skipped_not_sent(self, tmp_path: Path) -> None:
        """An input recorded as a size-and-hash marker is skipped: the tool never sees it."""
        log = tmp_path / "t.jsonl"
        _record(log, ["x" * (CAP * 2), "short"])
        calls: list[Any] = []
        report = rerun_transcript(log, _registry(calls))
        assert [(o.outcome, o.reason) for o in report.outcomes] == [
            ("skipped", "input not recorded: capped"),
            ("matched", None),
        ]
        assert calls == [{"text": "short"}]
        assert report.ok

    def test_a_redacted_input_is_skipped_not_sent(self, tmp_path: Path) -> None:
        """An input holding [REDACTED] where a secret was is skipped with the reason."""
        log = tmp_path / "t.jsonl"
        _record(log, [f"key={SECRET}", "plain"], redactor=Redactor.from_config(secrets=[SECRET]))
        assert SECRET not in log.read_text()
        calls: list[Any] = []
        report = rerun_transcript(log, _registry(calls))
        assert [(o.outcome, o.reason) for o in report.outcomes] == [
            ("skipped", "input not recorded: redacted"),
            ("matched", None),
        ]
        assert calls == [{"text": "plain"}]

    def test_the_cli_shows_the_reason(self, tmp_path: Path) -> None:
        """`replay --rerun` prints the skipped call with its reason and exits 0."""
        log = tmp_path / "t.jsonl"
        _record(log, ["x" * (CAP * 2)])
        result = run("replay", str(log), "--rerun", "--registry", f"{__name__}:registry")
        assert result.exit_code == 0, result.output
        assert "  cccccccccccc-1  copy  skipped: input not recorded: capped\n" in result.stdout


class TestCappedOutput:
    @pytest.fixture(name="log")
    def _log(self, tmp_path: Path) -> Path:
        """One call whose output is over the cap, its input (a short text repeated) is not."""
        path = tmp_path / "t.jsonl"
        with JsonlTranscript(path, max_event_bytes=CAP) as sink:
            registry = ToolRegistry()
            registry.add(
                "repeat",
                lambda data: {"text": data["text"] * data["times"]},
                description="Repeat a text.",
                input_schema={"type": "object"},
                annotations=ToolAnnotations(read_only_hint=True),
            )
            ToolRuntime(registry, sink, run_id="d" * 32).dispatch(
                "repeat", {"text": "ab", "times": CAP}
            )
        return path

    def _rerun(self, log: Path, factor: int) -> Any:
        registry = ToolRegistry()
        registry.add(
            "repeat",
            lambda data: {"text": data["text"] * data["times"] * factor},
            description="Repeat a text.",
            input_schema={"type": "object"},
            annotations=ToolAnnotations(read_only_hint=True),
        )
        return rerun_transcript(log, registry)

    def test_same_size_and_hash_matches(self, log: Path) -> None:
        """A capped output is compared by its recorded size and SHA-256: equal is matched."""
        outcome = self._rerun(log, 1).outcomes[0]
        assert (outcome.outcome, outcome.diff) == ("matched", None)

    def test_a_different_output_diverges(self, log: Path) -> None:
        """A different output diverges, the diff showing the size and hash that changed."""
        outcome = self._rerun(log, 2).outcomes[0]
        assert outcome.outcome == "diverged"
        assert outcome.diff is not None
        assert f'-  "bytes": {CAP * 2 + 11},' in outcome.diff
        assert f'+  "bytes": {CAP * 4 + 11},' in outcome.diff


class TestRunSelection:
    @pytest.mark.parametrize("selector", ["", "9", "zzz"])
    def test_an_empty_or_unknown_run_names_the_runs(self, tmp_path: Path, selector: str) -> None:
        """`--run ''` or a run that is not there is exit 2, listing the runs the file has."""
        log = tmp_path / "t.jsonl"
        _record(log, ["a"])
        for args in ((), ("--rerun", "--registry", f"{__name__}:registry")):
            result = run("replay", str(log), "--run", selector, *args)
            assert result.exit_code == 2
            shown = selector or '""'
            assert result.stderr == (
                f"[mini-harness] Error: {log} has no run {shown} (it has 1 run: 1 {'c' * 32})\n"
            )
            assert "cccccccccccc-1" not in result.stdout


class TestMissingRegistry:
    def test_every_call_unknown_says_to_pass_the_registry(self, tmp_path: Path) -> None:
        """Re-running custom tools against the built-in ones says which registry is missing."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(registries.recording(), sink)
            runtime.dispatch("write_note", {"note": "n"})
            with pytest.raises(ToolCallError):
                runtime.dispatch("flaky", {})
        registries.written.clear()
        result = run("replay", str(log), "--rerun")
        assert result.exit_code == 1
        assert result.stderr == (
            "[mini-harness] Error: re-run differs from the record: 1 diverged, 1 now-fails; "
            "the built-in tools do not include the recorded ones (write_note, flaky): the "
            "transcript was probably recorded with other tools; pass their registry with "
            "--registry MODULE:ATTR\n"
        )

    def test_a_known_tool_means_no_hint(self, tmp_path: Path) -> None:
        """When some call found its tool, the difference is reported without the hint."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(registries.recording(), sink)
            runtime.dispatch("echo", {"text": "hi"})
            runtime.dispatch("write_note", {"note": "n"})
        registries.written.clear()
        result = run("replay", str(log), "--rerun")
        assert result.exit_code == 1
        assert result.stderr == (
            "[mini-harness] Error: re-run differs from the record: 1 now-fails\n"
        )


def registry() -> ToolRegistry:
    """What `--registry tests.replay.test_rerun_placeholders:registry` loads."""
    return _registry([])
