"""History that does not verify is never acted on: `resume`, `fork` and `undo` refuse a
transcript that `transcript verify` finds edited, reordered or damaged (exit 2, saying
what verify found), unless `--allow-unverified` is given, which the new run records."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mini_harness import ToolRuntime
from mini_harness.cli import cli
from mini_harness.events import JsonObject, RunStarted
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import register_coding_tools
from mini_harness.transcripts import JsonlTranscript, read_transcript, verify_transcript
from tests.agent.recorded_runs import cut_after, invoke, write_script

Tamper = Callable[[list[bytes]], list[bytes]]


def lines_of(log: Path) -> list[bytes]:
    return log.read_bytes().splitlines(keepends=True)


def edit(log: Path, number: int, change: Callable[[JsonObject], None]) -> None:
    """Rewrite line `number` (from 1) as valid JSON with `change` made to it."""
    lines = lines_of(log)
    data = orjson.loads(lines[number - 1])
    change(data)
    lines[number - 1] = orjson.dumps(data) + b"\n"
    log.write_bytes(b"".join(lines))


def duplicated(lines: list[bytes]) -> list[bytes]:
    return [*lines[:3], lines[2], *lines[3:]]


def swapped(lines: list[bytes]) -> list[bytes]:
    return [*lines[:3], lines[4], lines[3], *lines[5:]]


def flipped(lines: list[bytes]) -> list[bytes]:
    """One byte of the task changed: still JSON, still an event."""
    assert b"What is it?" in lines[1]
    return [lines[0], lines[1].replace(b"What is it?", b"What iS it?"), *lines[2:]]


TAMPERING: dict[str, tuple[Tamper, str]] = {
    "duplicated line": (duplicated, "seq 2, expected 3"),
    "swapped lines": (swapped, "does not match the hash of the line before"),
    "byte flip": (flipped, "does not match the hash of the line before"),
}


def last_run_started(log: Path) -> RunStarted:
    return [r.event for r in read_transcript(log) if isinstance(r.event, RunStarted)][-1]


@pytest.fixture(name="tampering", params=sorted(TAMPERING))
def _tampering(request: pytest.FixtureRequest) -> tuple[Tamper, str]:
    return TAMPERING[request.param]


class TestResume:
    def test_an_edited_answer_is_not_dispatched(self, readme_ws: Path, tmp_path: Path) -> None:
        """An answer edited to ask for `rm data.txt`, under --approve auto: refused with
        what verify says; the file stays and the transcript is not written."""
        (readme_ws / "data.txt").write_text("keep me\n")
        full, log = tmp_path / "full.jsonl", tmp_path / "t.jsonl"
        answers: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "list_files", "arguments": {}},
                           {"name": "list_files", "arguments": {}}]},
            {"text": "Two listings."},
        ]  # fmt: skip
        model = write_script(tmp_path / "script.json", answers)
        ran = invoke(["run", "List twice", "--model", model, "--log", str(full)])
        assert ran.exit_code == 0, ran.output
        kept = cut_after(full, log, "ToolCalled", 1)  # killed during the first listing

        def rm_data(data: JsonObject) -> None:
            assert data["type"] == "ModelResponded"
            calls = data["message"]["toolCalls"]
            calls[1] = {"id": calls[1]["id"], "name": "run_command",
                        "arguments": '{"argv": ["rm", "data.txt"]}'}  # fmt: skip

        edit(log, kept - 1, rm_data)
        before = log.read_bytes()
        rest = write_script(tmp_path / "rest.json", [{"text": "Done."}])
        result = invoke(["resume", str(log), "--model", rest, "--approve", "auto"])
        assert result.exit_code == 2, result.output
        assert f"cannot resume from {log}: it does not verify" in result.output
        assert f"line {kept} (seq {kept - 1}" in result.output
        assert "does not match the hash of the line before" in result.output
        assert (readme_ws / "data.txt").read_text() == "keep me\n"
        assert log.read_bytes() == before

    def test_tampered_lines_are_refused(
        self, readme_run: Path, tampering: tuple[Tamper, str]
    ) -> None:
        """Duplicated lines, swapped lines and a JSON-valid byte flip: exit 2, nothing
        written."""
        change, said = tampering
        readme_run.write_bytes(b"".join(change(lines_of(readme_run))))
        before = readme_run.read_bytes()
        model = write_script(readme_run.parent / "more.json", [{"text": "More."}])
        result = invoke(["resume", str(readme_run), "Go on", "--model", model])
        assert result.exit_code == 2, result.output
        assert "it does not verify" in result.output
        assert said in result.output
        assert readme_run.read_bytes() == before

    def test_a_refusal_leaves_the_torn_tail_where_it_is(self, readme_run: Path) -> None:
        """A transcript that does not verify and ends in a torn line: the refusal (the
        same words) comes before the log is opened, so the torn tail is not set aside:
        the file, and the directory it is in, are as they were."""
        readme_run.write_bytes(b"".join(flipped(lines_of(readme_run))) + b'{"type":"ToolCal')
        before = readme_run.read_bytes()
        model = write_script(readme_run.parent / "more.json", [{"text": "More."}])
        beside = sorted(readme_run.parent.iterdir())
        result = invoke(["resume", str(readme_run), "Go on", "--model", model])
        assert result.exit_code == 2, result.output
        assert f"cannot resume from {readme_run}: it does not verify" in result.output
        assert "does not match the hash of the line before" in result.output
        assert "torn tail" not in result.output
        assert readme_run.read_bytes() == before
        assert sorted(readme_run.parent.iterdir()) == beside

    def test_allow_unverified_goes_on_and_records_it(self, readme_run: Path) -> None:
        """--allow-unverified resumes anyway, says so, and the new run lists the problems."""
        readme_run.write_bytes(b"".join(flipped(lines_of(readme_run))))
        problems = verify_transcript(readme_run).damage()
        model = write_script(readme_run.parent / "more.json", [{"text": "More."}])
        result = invoke(["resume", str(readme_run), "Go on", "--model", model,
                         "--allow-unverified"])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "does not verify" in result.stderr
        assert "going on because of --allow-unverified" in result.stderr
        started = last_run_started(readme_run)
        assert started.resumed_from is not None
        assert started.unverified == tuple(problems)

    def test_a_run_that_verifies_records_nothing(self, readme_run: Path) -> None:
        """A history that verifies leaves `unverified` out of the new run."""
        model = write_script(readme_run.parent / "more.json", [{"text": "More."}])
        assert invoke(["resume", str(readme_run), "Go on", "--model", model]).exit_code == 0
        assert last_run_started(readme_run).unverified is None
        assert b'"unverified"' not in readme_run.read_bytes()


class TestFork:
    def fork(self, log: Path, *args: str) -> object:
        model = write_script(log.parent / "fork.json", [{"text": "Forked."}])
        return invoke(["fork", str(log), "--at-step", "2", "--model", model, *args])

    def test_tampered_lines_are_refused(
        self, readme_run: Path, tampering: tuple[Tamper, str], tmp_path: Path
    ) -> None:
        """A fork of a tampered transcript exits 2, writing neither PATH nor --log OUT."""
        change, said = tampering
        readme_run.write_bytes(b"".join(change(lines_of(readme_run))))
        before = readme_run.read_bytes()
        out = tmp_path / "fork.jsonl"
        for extra in ((), ("--log", str(out))):
            result = self.fork(readme_run, *extra)
            assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
            assert said in result.output  # type: ignore[attr-defined]
        assert readme_run.read_bytes() == before
        assert not out.exists()

    def test_allow_unverified_is_recorded_in_the_fork(
        self, readme_run: Path, tmp_path: Path
    ) -> None:
        """With --allow-unverified the fork is made and its RunStarted lists the problems."""
        readme_run.write_bytes(b"".join(swapped(lines_of(readme_run))))
        out = tmp_path / "fork.jsonl"
        result = self.fork(readme_run, "--log", str(out), "--allow-unverified")
        assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
        started = last_run_started(out)
        assert started.forked_from is not None
        assert started.unverified == tuple(verify_transcript(readme_run).damage())

    def test_a_torn_tail_is_fine(self, readme_run: Path) -> None:
        """What a crash leaves (a torn last line) does not stop a fork."""
        with readme_run.open("ab") as handle:
            handle.write(b'{"type":"ToolCal')
        result = self.fork(readme_run)
        assert result.exit_code == 0, result.output  # type: ignore[attr-defined]


class TestReplayThatActs:
    """A re-run that may change things (a live model, side effects) acts on the record too."""

    def replay(self, log: Path, *args: str) -> Any:
        if "--live-model" in args:
            model = write_script(log.parent / "live.json", [{"text": "Live answer."}])
            args = (*args, "--model", model)
        return invoke(["replay", str(log), "--rerun", *args])

    @pytest.mark.parametrize("flag", ["--live-model", "--allow-side-effects"])
    def test_tampered_lines_are_refused(
        self, readme_run: Path, tampering: tuple[Tamper, str], flag: str
    ) -> None:
        """--rerun with --live-model or --allow-side-effects of a tampered transcript exits 2
        saying what verify found, and adds nothing to it."""
        change, said = tampering
        readme_run.write_bytes(b"".join(change(lines_of(readme_run))))
        before = readme_run.read_bytes()
        result = self.replay(readme_run, flag)
        assert result.exit_code == 2, result.output
        assert said in result.output
        assert f"cannot re-run with {flag}" in result.output
        assert readme_run.read_bytes() == before

    def test_a_read_only_rerun_needs_no_verified_file(self, readme_run: Path) -> None:
        """A re-run that only runs read-only tools again reports a tampered file's problems
        as any replay does (exit 1); it is not refused before it starts."""
        readme_run.write_bytes(b"".join(flipped(lines_of(readme_run))))
        result = invoke(["replay", str(readme_run), "--rerun"])
        assert result.exit_code == 1, result.output
        assert "identical through step 3" in result.output
        assert "Problems with the log:" in result.output
        assert "does not match the hash of the line before" in result.output
        assert "cannot re-run" not in result.output

    def test_a_pipe_is_refused(self, readme_run: Path) -> None:
        """A pipe cannot be verified before it is acted on: save it to a file."""
        model = write_script(readme_run.parent / "live.json", [{"text": "Live answer."}])
        result = CliRunner().invoke(
            cli,
            ["replay", "-", "--rerun", "--live-model", "--model", model, "--log", "out.jsonl"],
            input=readme_run.read_bytes(),
        )
        assert result.exit_code == 2, result.output
        assert "save it to a file" in result.output

    def test_allow_unverified_is_recorded_in_the_live_run(
        self, readme_run: Path, readme_ws: Path, tmp_path: Path
    ) -> None:
        """With --allow-unverified the live model goes on, and its run lists the problems."""
        (readme_ws / "README.md").write_text("# Demo\nChanged since the run.\n")
        readme_run.write_bytes(b"".join(flipped(lines_of(readme_run))))
        out = tmp_path / "live.jsonl"
        result = self.replay(
            readme_run, "--live-model", "--approve", "auto", "--log", str(out),
            "--allow-unverified",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "Live answer." in result.output
        started = last_run_started(out)
        assert started.forked_from is not None
        assert started.unverified == tuple(verify_transcript(readme_run).damage())


class TestUndo:
    @pytest.fixture(name="patched")
    def _patched(self, tmp_path: Path) -> tuple[Path, Path, str]:
        """Two recorded apply_patch calls; a file `keep.txt` neither of them touched."""
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "a.txt").write_text("one\n")
        (ws / "b.txt").write_text("two\n")
        (ws / "keep.txt").write_text("precious\n")
        registry = ToolRegistry()
        register_coding_tools(registry, ws, sandbox=False)
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(registry, sink)
            first = runtime.dispatch("apply_patch", {"patch": patch("a.txt", "one", "uno")})
            runtime.dispatch("apply_patch", {"patch": patch("b.txt", "two", "dos")})
        return ws, log, first.call_id

    def forge(self, log: Path) -> None:
        """Edit the first call's record to say it added keep.txt."""
        added = "--- /dev/null\n+++ b/keep.txt\n@@ -0,0 +1 @@\n+precious\n"
        digest = hashlib.sha256(b"precious\n").hexdigest()

        def called(data: JsonObject) -> None:
            data["input"] = {"patch": added}

        def succeeded(data: JsonObject) -> None:
            data["effects"] = [{"path": "keep.txt", "before": None, "after": digest}]

        edit(log, 3, called)
        edit(log, 4, succeeded)

    def test_a_forged_record_deletes_nothing(self, patched: tuple[Path, Path, str]) -> None:
        """A record edited to claim the call added keep.txt: undo refuses (exit 2) and
        keep.txt stays."""
        ws, log, call_id = patched
        self.forge(log)
        result = invoke(["undo", str(log), "--call", call_id, "--workspace", str(ws)])
        assert result.exit_code == 2, result.output
        assert f"cannot undo from {log}: it does not verify" in result.output
        assert (ws / "keep.txt").read_text() == "precious\n"
        assert (ws / "a.txt").read_text() == "uno\n"

    def test_allow_unverified_is_recorded(self, patched: tuple[Path, Path, str]) -> None:
        """With --allow-unverified undo acts on the record as it is, and its run says so."""
        ws, log, call_id = patched
        self.forge(log)
        problems = verify_transcript(log).damage()
        result = invoke(["undo", str(log), "--call", call_id, "--workspace", str(ws),
                         "--allow-unverified"])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert last_run_started(log).unverified == tuple(problems)

    def test_a_record_that_verifies_is_undone(self, patched: tuple[Path, Path, str]) -> None:
        """Untouched, the same record is undone as before."""
        ws, log, call_id = patched
        result = invoke(["undo", str(log), "--call", call_id, "--workspace", str(ws)])
        assert result.exit_code == 0, result.output
        assert (ws / "a.txt").read_text() == "one\n"
        assert (ws / "keep.txt").read_text() == "precious\n"


def patch(path: str, old: str, new: str) -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n"
