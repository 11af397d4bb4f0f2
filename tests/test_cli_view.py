"""`mini-harness view`: where the page goes, what it holds, and how problems end."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness.cli import cli
from mini_harness.events import JsonObject
from mini_harness.replay.views import page as view_page
from mini_harness.replay.views.page import PAYLOAD_CAP, embed_json
from mini_harness.transcripts import line_hash
from tests.replay.timeline_fixtures import TOOLS, chained, record_reads, tool_events, write
from tests.streams import read_once


def view(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["view", *args], env=env)


def page_json(html: str) -> dict[str, object]:
    """The data block of a page."""
    found = re.search(
        r'<script type="application/json" id="timeline-data">(.*?)</script>', html, re.S
    )
    assert found is not None
    data: dict[str, object] = orjson.loads(found.group(1))
    return data


class TestOutput:
    def test_default_path_beside_the_transcript(self, tmp_path: Path) -> None:
        """Without -o the page is the transcript's name with .html, beside it."""
        log = write(tmp_path / "t.jsonl", tool_events())
        result = view(str(log))
        assert result.exit_code == 1, result.output  # e3 is in doubt
        page = tmp_path / "t.html"
        assert result.stdout == f"[mini-harness] Wrote {page} (3 calls, 7 events)\n"
        assert page.read_text().startswith("<!DOCTYPE html>")

    def test_self_contained(self, tmp_path: Path) -> None:
        """The page names no other file or address: script, style and data are inline."""
        log = write(tmp_path / "t.jsonl", tool_events())
        html = tmp_path / "page.html"
        assert view(str(log), "-o", str(html)).exit_code == 1  # e3 is in doubt
        text = html.read_text()
        assert not re.search(r"""(src|href)\s*=|https?://|@import|url\(""", text)

    def test_data_holds_the_timeline(self, tmp_path: Path) -> None:
        """The embedded data has the verification, the runs and one row per call."""
        log = write(tmp_path / "t.jsonl", tool_events())
        html = tmp_path / "page.html"
        view(str(log), "-o", str(html))
        data = page_json(html.read_text())
        verify = data["verify"]
        assert isinstance(verify, dict)
        assert verify["chainIntact"] is True
        assert verify["problems"] == []
        assert verify["headHash"] == line_hash(log.read_bytes().splitlines()[-1])
        rows = data["rows"]
        assert isinstance(rows, list)
        assert [(row["k"], row.get("id"), row.get("st")) for row in rows] == [
            ("r", None, None),
            ("c", "e1", "ok"),
            ("c", "e2", "failed"),
            ("c", "e3", "in-doubt"),
        ]

    def test_refuses_to_overwrite_the_transcript(self, tmp_path: Path) -> None:
        """-o naming the transcript itself is a usage error; the transcript is untouched."""
        log = write(tmp_path / "t.jsonl", tool_events())
        before = log.read_bytes()
        result = view(str(log), "-o", str(log))
        assert result.exit_code == 2
        assert "would overwrite the transcript" in result.stderr
        assert log.read_bytes() == before

    def test_unwritable_output(self, tmp_path: Path) -> None:
        """A page that cannot be written is an error naming the file, exit 2."""
        if os.geteuid() == 0:
            target = tmp_path / "missing-dir" / "page.html"
        else:
            locked = tmp_path / "locked"
            locked.mkdir()
            locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
            target = locked / "page.html"
        log = write(tmp_path / "t.jsonl", tool_events())
        result = view(str(log), "-o", str(target))
        assert result.exit_code == 2
        assert result.stderr.startswith(f"[mini-harness] Error: cannot write {target}: ")

    def test_a_link_at_the_pages_name_is_not_followed(self, tmp_path: Path) -> None:
        """A symlink planted where the page goes (beside a transcript in a workspace a model
        can write) is refused, exit 2, and the file it leads to keeps its bytes."""
        victim = tmp_path / "victim.txt"
        victim.write_text("keep me\n")
        log = write(tmp_path / "t.jsonl", tool_events())
        (tmp_path / "t.html").symlink_to(victim)
        result = view(str(log))
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: cannot write {tmp_path / 't.html'}: it is a symbolic link, "
            "which is never followed\n"
        )
        assert victim.read_text() == "keep me\n"

    def test_an_existing_page_is_rewritten_whole(self, tmp_path: Path) -> None:
        """A page written before (longer than the new one) is replaced, not left with a tail."""
        log = write(tmp_path / "t.jsonl", tool_events())
        page = tmp_path / "t.html"
        page.write_text("x" * 1_000_000)
        assert view(str(log)).exit_code == 1  # e3 is in doubt
        assert page.read_text().startswith("<!DOCTYPE html>")
        assert "xxx" not in page.read_text()

    def test_open_starts_a_browser(self, tmp_path: Path) -> None:
        """--open hands the page's file URI to the user's browser ($BROWSER)."""
        log = write(tmp_path / "t.jsonl", tool_events())
        opened = tmp_path / "opened.txt"
        browser = tmp_path / "browser.sh"
        browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
        browser.chmod(0o755)
        result = view(str(log), "--open", env={"BROWSER": str(browser)})
        assert result.exit_code == 1, result.output  # e3 is in doubt
        assert opened.read_text().strip() == (tmp_path / "t.html").as_uri()

    def test_open_without_a_browser_exits_1(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--open where no browser can be started: the page is written, the error says
        where, and the exit code is 1 (what was asked was not done)."""
        import webbrowser

        monkeypatch.setattr(webbrowser, "open", lambda url: False)
        log = write(tmp_path / "t.jsonl", tool_events())
        result = view(str(log), "--open")
        assert result.exit_code == 1
        assert "no web browser could be started" in result.stderr
        assert (tmp_path / "t.html").is_file()

    @pytest.mark.parametrize("name", ["t.html", "t"])
    def test_default_output_never_the_input(self, tmp_path: Path, name: str) -> None:
        """A transcript already named .html (or with no suffix) gets a page of another name."""
        log = tmp_path / name
        log.write_bytes(chained(tool_events()))
        result = view(str(log))
        assert result.exit_code == 1, result.output  # e3 is in doubt
        assert log.read_bytes() == chained(tool_events())


class TestProblems:
    def test_damaged_transcript_is_shown_up_to_the_damage(self, tmp_path: Path) -> None:
        """A damaged transcript still gives a page, naming the problem; exit 2 (it cannot
        be used past the damage, as replay says)."""
        lines = chained(tool_events()).splitlines(keepends=True)
        lines[4] = b"{damaged\n"
        log = tmp_path / "t.jsonl"
        log.write_bytes(b"".join(lines))
        result = view(str(log))
        assert result.exit_code == 2
        assert "[mini-harness] Problem: [damage] line 5: " in result.stdout
        data = page_json((tmp_path / "t.html").read_text())
        verify = data["verify"]
        assert isinstance(verify, dict)
        assert verify["chainIntact"] is False
        assert [p["kind"] for p in verify["problems"]] == ["damage"]

    def test_not_a_transcript(self, tmp_path: Path) -> None:
        """A file that is not a transcript: exit 2 and no page."""
        log = tmp_path / "t.jsonl"
        log.write_text("hello\n")
        result = view(str(log))
        assert result.exit_code == 2
        assert not (tmp_path / "t.html").exists()


@pytest.fixture(name="read_log")
def _read_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return record_reads(tmp_path)


class TestRerun:
    def test_matching_rerun(self, read_log: Path) -> None:
        """--rerun shows each call's outcome; all matched: exit 0."""
        result = view(str(read_log), "--rerun")
        assert result.exit_code == 0, result.output
        data = page_json((read_log.parent / "t.html").read_text())
        rows = data["rows"]
        assert isinstance(rows, list)
        assert [row["rr"]["o"] for row in rows if row["k"] == "c"] == ["matched", "matched"]
        assert data["rerun"] == {
            "counts": {
                "matched": 2,
                "diverged": 0,
                "now-fails": 0,
                "now-succeeds": 0,
                "skipped": 0,
            },
            "drift": [],
        }

    def test_diverged_call_has_its_diff(self, read_log: Path) -> None:
        """A call whose output changed carries the diff; the page is written, exit 1."""
        (read_log.parent / "a.txt").write_text("changed\n")
        result = view(str(read_log), "--rerun")
        assert result.exit_code == 1
        assert result.stderr == (
            "[mini-harness] Error: re-run differs from the record: 1 diverged\n"
        )
        rows = page_json((read_log.parent / "t.html").read_text())["rows"]
        assert isinstance(rows, list)
        read = next(row for row in rows if row.get("n") == "read_file")
        assert read["rr"]["o"] == "diverged"
        assert '+  "text": "changed\\n",' in read["rr"]["diff"].splitlines()

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--registry", "x:y"], "--registry needs --rerun"),
            (["--allow-side-effects"], "--allow-side-effects needs --rerun"),
        ],
    )
    def test_usage(self, tmp_path: Path, args: list[str], message: str) -> None:
        """Re-run options without --rerun are usage errors."""
        log = write(tmp_path / "t.jsonl", tool_events())
        result = view(str(log), *args)
        assert result.exit_code == 2
        assert result.stderr == f"[mini-harness] Error: {message}\n"

    def test_the_tools_of_replay_rerun(self, tmp_path: Path) -> None:
        """view --rerun runs the calls again with the tools replay --rerun runs them with:
        an agent run's, the coding tools among them, so a recorded git_status matches."""
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "a.txt").write_text("a\n")
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        for args in (["init", "-q"], ["add", "a.txt"], ["commit", "-qm", "start"]):
            subprocess.run([*git, *args], cwd=workspace, check=True)
        script = tmp_path / "s.json"
        calls = [{"name": "git_status", "arguments": {}}]
        script.write_bytes(orjson.dumps([{"toolCalls": calls}, {"text": "clean"}]))
        log = tmp_path / "t.jsonl"
        args = ["--model", f"script:{script}", "--workspace", str(workspace), "--log", str(log)]
        ran = CliRunner().invoke(cli, ["run", "status?", *args])
        assert ran.exit_code == 0, ran.output
        result = view(str(log), "--rerun", "--workspace", str(workspace))
        assert result.exit_code == 0, result.output
        rows = page_json((tmp_path / "t.html").read_text())["rows"]
        assert isinstance(rows, list)
        assert [(row["n"], row["rr"]["o"]) for row in rows if row["k"] == "c"] == [
            ("git_status", "matched")
        ]

    def test_side_effects_act_only_on_a_transcript_that_verifies(self, read_log: Path) -> None:
        """--allow-side-effects runs recorded calls that change things: as for replay, the
        transcript must verify (or --allow-unverified be given)."""
        lines = read_log.read_bytes().splitlines(keepends=True)
        edited = read_log.parent / "edited.jsonl"
        lines[3] = lines[3].replace(b"hello", b"jello")  # read_file's recorded output
        edited.write_bytes(b"".join(lines))
        result = view(str(edited), "--rerun", "--allow-side-effects")
        assert result.exit_code == 2
        assert "cannot re-run with --allow-side-effects from" in result.stderr
        assert not (read_log.parent / "edited.html").exists()
        allowed = view(str(edited), "--rerun", "--allow-side-effects", "--allow-unverified")
        assert allowed.exit_code == 1, allowed.output  # the edited line breaks the chain

    def test_rerun_of_a_pipe_read_once(self, read_log: Path) -> None:
        """The transcript is read once, so --rerun works on a pipe that can be read only
        once: the page has the timeline, each step's context and each call's outcome."""
        page = read_log.parent / "page.html"
        with read_once(read_log.parent / "pipe", read_log.read_bytes()) as pipe:
            result = view(str(pipe), "--rerun", "-o", str(page))
        assert result.exit_code == 0, result.output
        rows = page_json(page.read_text())["rows"]
        assert isinstance(rows, list)
        assert [row["rr"]["o"] for row in rows if row["k"] == "c"] == ["matched", "matched"]

    def test_rerun_of_standard_input(self, read_log: Path) -> None:
        """`view - --rerun` re-runs the calls read from standard input."""
        page = read_log.parent / "page.html"
        result = CliRunner().invoke(
            cli, ["view", "-", "--rerun", "-o", str(page)], input=read_log.read_bytes()
        )
        assert result.exit_code == 0, result.output
        rows = page_json(page.read_text())["rows"]
        assert isinstance(rows, list)
        assert [row["rr"]["o"] for row in rows if row["k"] == "c"] == ["matched", "matched"]


class TestBudget:
    def test_past_the_budget_payloads_are_small(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Once the page holds its budget of payloads, later ones are held in small part."""
        monkeypatch.setattr(view_page, "PAGE_BUDGET", 10_000)
        big = {"text": "z" * 9_000}
        events: list[JsonObject] = [tool_events()[0]]
        for number in range(3):
            call = {"runId": TOOLS, "callId": f"b{number}", "name": "echo"}
            events.append({"type": "ToolCalled", **call, "input": big})
            events.append({"type": "ToolSucceeded", **call, "output": big, "durationMs": 1.0})
        log = write(tmp_path / "t.jsonl", events)
        view(str(log))
        rows = page_json((tmp_path / "t.html").read_text())["rows"]
        assert isinstance(rows, list)
        held = [(len(row["i"]), len(row["o"])) for row in rows if row["k"] == "c"]
        assert held == [(9_011, 9_011), (2_048, 2_048), (2_048, 2_048)]
        assert {row["ob"] for row in rows if row["k"] == "c"} == {9_011}


class TestEmbedding:
    def test_nothing_can_end_the_script_block(self) -> None:
        """`<`, `>`, `&` and the JS line separators are escaped; the JSON means the same."""
        value = {"text": "</script><!-- & \u2028\u2029 -->", "<key>": 1}
        text = embed_json(value)
        assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
        assert orjson.loads(text) == value

    def test_large_payloads_are_capped(self, tmp_path: Path) -> None:
        """An output larger than the cap is held in part, with its full size."""
        events = [
            *tool_events()[:2],
            {
                "type": "ToolSucceeded",
                "runId": TOOLS,
                "callId": "e1",
                "name": "echo",
                "output": {"text": "y" * (2 * PAYLOAD_CAP)},
                "durationMs": 1.0,
            },
        ]
        log = write(tmp_path / "t.jsonl", events)
        view(str(log))
        rows = page_json((tmp_path / "t.html").read_text())["rows"]
        assert isinstance(rows, list)
        assert len(rows[1]["o"]) == PAYLOAD_CAP
        assert rows[1]["ob"] == 2 * PAYLOAD_CAP + len('{"text":""}')
