"""The session store: every agent run recorded without --log, found again with `sessions`,
`--last` or a run's id, continued where it worked, and deleted only by `sessions prune`."""

from __future__ import annotations

import datetime as dt
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import Result

from mini_harness import ToolRuntime
from mini_harness.agent import AgentConfig, AgentLoop, ScriptProvider
from mini_harness.events import RunStarted
from mini_harness.replay import fold_agent_runs
from mini_harness.store import SessionStore, default_sessions_dir, user_config_path
from mini_harness.tools import default_registry
from mini_harness.transcripts import (
    JsonlTranscript,
    line_hash,
    read_transcript,
    verify_transcript,
)

from .agent.recorded_runs import LIST_READ_ANSWER, cut_after, invoke, write_script
from .test_settings import patching_script

TRANSCRIPT_LINE = re.compile(r"\[mini-harness\] Transcript: (\S+) \(run ([0-9a-f]{32})\)")


def store_root() -> Path:
    return Path(os.environ["MINI_HARNESS_HOME"]) / "sessions"


def stored_files() -> list[Path]:
    return sorted(store_root().rglob("*.jsonl")) if store_root().exists() else []


def recorded(result: Result) -> tuple[Path, str]:
    """The transcript and run id the run's last line names."""
    match = TRANSCRIPT_LINE.search(result.stdout)
    assert match is not None, result.output
    return Path(match[1]), match[2]


def started(path: Path) -> list[RunStarted]:
    return [r.event for r in read_transcript(path) if isinstance(r.event, RunStarted)]


@pytest.fixture(name="ws")
def _ws(readme_ws: Path) -> Path:
    """A workspace with a README and a note, the current directory."""
    (readme_ws / "note.txt").write_text("only in the workspace\n")
    return readme_ws


def answer(tmp_path: Path, text: str = "Done.", name: str = "answer.json") -> str:
    return write_script(tmp_path / name, [{"text": text}])


class TestPlaces:
    def test_the_scratch_home_of_the_suite(self) -> None:
        """The suite's store and user config are in a scratch directory, never the home's."""
        home = Path(os.environ["MINI_HARNESS_HOME"])
        assert not home.is_relative_to(Path.home()) or "pytest" in str(home)
        assert default_sessions_dir(os.environ) == home / "sessions"
        assert user_config_path(os.environ) == home / "config.toml"

    def test_xdg_directories_without_mini_harness_home(self, tmp_path: Path) -> None:
        """Without MINI_HARNESS_HOME: the XDG state and config directories, else ~/.local/state
        and ~/.config (a relative XDG variable is ignored, as the spec says)."""
        env = {"XDG_STATE_HOME": str(tmp_path / "s"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
        assert default_sessions_dir(env) == tmp_path / "s" / "mini-harness" / "sessions"
        assert user_config_path(env) == tmp_path / "c" / "mini-harness" / "config.toml"
        relative = {"XDG_STATE_HOME": "state", "XDG_CONFIG_HOME": "config"}
        home = Path.home()
        assert default_sessions_dir(relative) == home / ".local/state/mini-harness/sessions"
        assert user_config_path({}) == home / ".config/mini-harness/config.toml"


class TestRecordedByDefault:
    def test_a_run_without_log_is_in_the_store(self, ws: Path, tmp_path: Path) -> None:
        """No --log: the run is recorded at YYYY/MM/DD/<UTC time>-<run id>.jsonl in the
        store, the last line says where, and the file verifies."""
        result = invoke(["hello", "--model", answer(tmp_path)])
        assert result.exit_code == 0, result.output
        path, run_id = recorded(result)
        assert stored_files() == [path]
        day = path.parent.relative_to(store_root())
        assert re.fullmatch(r"\d{4}/\d{2}/\d{2}", str(day))
        assert re.fullmatch(rf"{''.join(day.parts)}T\d{{6}}Z-{run_id}\.jsonl", path.name)
        assert verify_transcript(path).ok
        assert [run.run_id for run in fold_agent_runs(path)] == [run_id]
        # The user's alone: the store and each of its folders.
        for folder in (store_root(), *path.relative_to(store_root()).parents):
            assert (store_root() / folder).stat().st_mode & 0o777 == 0o700, folder

    def test_no_log_records_nothing_and_says_so_once(self, ws: Path, tmp_path: Path) -> None:
        """--no-log: nothing is written anywhere, one line says so, no Transcript line."""
        result = invoke(["hello", "--model", answer(tmp_path), "--no-log"])
        assert result.exit_code == 0, result.output
        assert stored_files() == []
        assert result.stdout.count("Not recorded (--no-log)") == 1
        assert "Transcript:" not in result.stdout

    def test_no_log_with_log_is_a_usage_error(self, ws: Path, tmp_path: Path) -> None:
        """--no-log and --log contradict each other: exit 2 before anything runs."""
        result = invoke(["hello", "--no-log", "--log", str(tmp_path / "t.jsonl")])
        assert result.exit_code == 2
        assert "--no-log cannot be combined with --log" in result.stderr
        assert not (tmp_path / "t.jsonl").exists()

    def test_log_still_writes_where_it_says(self, ws: Path, tmp_path: Path) -> None:
        """--log PATH: recorded there and only there."""
        log = tmp_path / "t.jsonl"
        result = invoke(["hello", "--model", answer(tmp_path), "--log", str(log)])
        assert result.exit_code == 0, result.output
        assert recorded(result)[0] == log
        assert stored_files() == []


def git(ws: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    done = subprocess.run(
        ["git", *identity, *args], cwd=ws, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


class TestADispatchThatAsks:
    def test_record_puts_a_dispatch_in_the_store(self, ws: Path) -> None:
        """`--tool ... --record`: the dispatch is a session of the store, named by its run,
        recorded with the workspace, so `sessions` lists it and `show --last` shows it."""
        result = invoke(["--tool", "echo", "--tool-input", '{"text":"hi"}', "--record"])
        assert result.exit_code == 0, result.output
        path, run_id = recorded(result)
        assert stored_files() == [path]
        assert path.name.endswith(f"-{run_id}.jsonl")
        assert verify_transcript(path).ok
        (run,) = started(path)
        assert run.workspace is not None
        assert run.workspace.path == os.path.realpath(ws)
        listed = invoke(["sessions", "--json"])
        assert listed.exit_code == 0, listed.output
        (row,) = orjson.loads(listed.stdout)
        assert (row["runId"], row["stopReason"], row["task"]) == (run_id, "tool run", None)
        shown = invoke(["show", "--last"])
        assert shown.exit_code == 0, shown.output
        assert '    output {"text":"hi"}' in shown.stdout

    def test_without_record_a_dispatch_is_not_recorded(self, ws: Path) -> None:
        """A dispatch records nothing unless it asks (--log or --record)."""
        result = invoke(["--tool", "echo", "--tool-input", '{"text":"hi"}'])
        assert result.exit_code == 0, result.output
        assert stored_files() == []

    def test_a_failed_dispatch_is_recorded_and_named_in_json(self, ws: Path) -> None:
        """A call that fails is recorded too; --json names the stored transcript."""
        result = invoke(["--tool", "read_file", "--tool-input", '{"path":"nope"}', "--record",
                         "--json", "--fsync", "always"])  # fmt: skip
        assert result.exit_code == 1, result.output
        document = orjson.loads(result.stdout)
        assert document["ok"] is False
        assert [Path(document["transcript"])] == stored_files()

    def test_record_with_log_is_a_usage_error(self, ws: Path, tmp_path: Path) -> None:
        """--record and --log name two places: exit 2, nothing recorded."""
        log = tmp_path / "t.jsonl"
        result = invoke(["--tool", "echo", "--record", "--log", str(log)])
        assert result.exit_code == 2
        assert "--record cannot be combined with --log" in result.stderr
        assert not log.exists()
        assert stored_files() == []


class TestWhatRunStartedRecords:
    def test_workspace_head_and_branch(self, ws: Path, tmp_path: Path) -> None:
        """In a git repository: the workspace's absolute path, HEAD and the branch."""
        git(ws, "init", "-q", "-b", "trunk")
        git(ws, "add", ".")
        git(ws, "commit", "-qm", "start")
        result = invoke(["hello", "--model", answer(tmp_path)])
        (run,) = started(recorded(result)[0])
        assert run.workspace is not None
        assert run.workspace.path == str(ws.resolve())
        assert run.workspace.head == git(ws, "rev-parse", "HEAD")
        assert run.workspace.branch == "trunk"

    def test_a_directory_that_is_no_repository(self, ws: Path, tmp_path: Path) -> None:
        """Outside a repository: the path alone."""
        result = invoke(["hello", "--model", answer(tmp_path)])
        (run,) = started(recorded(result)[0])
        assert run.workspace is not None
        assert (run.workspace.path, run.workspace.head, run.workspace.branch) == (
            str(ws.resolve()),
            None,
            None,
        )

    def test_the_settings_it_started_with(self, ws: Path, tmp_path: Path) -> None:
        """The approval mode and the context budget, beside the model and step limit."""
        args = ["hello", "--model", answer(tmp_path), "--approve", "never"]
        result = invoke([*args, "--max-context-tokens", "9000", "--max-steps", "3"])
        (run,) = started(recorded(result)[0])
        assert run.settings is not None
        assert (run.settings.approve, run.settings.max_context_tokens) == ("never", 9000)
        assert run.max_steps == 3

    def test_the_budget_goes_on_with_a_resume(self, ws: Path, tmp_path: Path) -> None:
        """A resumed run keeps the budget its run started with, trimmed or not."""
        first = invoke(["hello", "--model", answer(tmp_path), "--max-context-tokens", "9000"])
        path, run_id = recorded(first)
        again = invoke(["resume", run_id, "more", "--model", answer(tmp_path, name="b.json")])
        assert again.exit_code == 0, again.output
        resumed = started(path)[-1]
        assert resumed.settings is not None
        assert resumed.settings.max_context_tokens == 9000


class TestInterrupted:
    def test_the_message_names_the_command_that_resumes_it(self, ws: Path, tmp_path: Path) -> None:
        """Ctrl-C during a request: exit 130 and a line with the exact resume command,
        which then continues the run."""
        slow = write_script(tmp_path / "slow.json", [{"text": "late", "delayMs": 30000}])
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        process = subprocess.Popen(
            [sys.executable, "-m", "mini_harness", "count the files", "--model", slow],
            cwd=ws,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not stored_files():
            time.sleep(0.05)
        time.sleep(0.5)  # the request is on its way
        process.send_signal(signal.SIGINT)
        stdout, _ = process.communicate(timeout=30)
        assert process.returncode == 130
        (line,) = [line for line in stdout.splitlines() if "To continue the run:" in line]
        command = shlex.split(line.partition("To continue the run: ")[2])
        (path,) = stored_files()
        (run,) = fold_agent_runs(path)
        # No --model: a resume goes on with the model the run recorded.
        assert command == ["mini-harness", "resume", run.run_id]
        resumed = invoke([*command[1:], "--model", answer(tmp_path)])
        assert resumed.exit_code == 0, resumed.output
        assert [r.stop_reason for r in fold_agent_runs(path)] == ["cancelled", "final"]


def tool_session(root: Path, run_id: str, when: dt.datetime, workspace: str | None = None) -> Path:
    """A session of one echo call whose events say they happened `when`, its file last
    written then."""
    stamp = when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    path = SessionStore(root).new_transcript(run_id, when)  # its day folder made
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(default_registry(), sink, run_id=run_id, timestamp=lambda: stamp)
        runtime.dispatch("echo", {"text": "hi"})
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


class TestSessions:
    def test_the_runs_of_this_workspace_newest_first(
        self, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`sessions` lists this workspace's runs, newest first; --all every workspace's;
        --workspace another's; runs are found by what they recorded."""
        other = tmp_path / "other"
        other.mkdir()
        invoke(["first task", "--model", answer(tmp_path)])
        invoke(["second task", "--model", answer(tmp_path)])
        monkeypatch.chdir(other)
        invoke(["elsewhere", "--model", answer(tmp_path)])
        monkeypatch.chdir(ws)
        result = invoke(["sessions"])
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert (
            lines[0] == f"[mini-harness] 2 runs of {ws.resolve()} in {store_root()}, newest first"
        )
        assert lines[1].split() == [
            "RUN", "STARTED", "WORKSPACE", "TASK", "MODEL", "STEPS", "STOP", "TOKENS"
        ]  # fmt: skip
        assert "second task" in lines[2]
        assert "first task" in lines[3]
        assert len(lines) == 4
        every = invoke(["sessions", "--all"]).stdout
        assert "elsewhere" in every
        assert "first task" in every
        theirs = invoke(["sessions", "--workspace", str(other)]).stdout
        assert "elsewhere" in theirs
        assert "first task" not in theirs

    def test_json_rows(self, ws: Path, tmp_path: Path) -> None:
        """--json: one object per run with its id, start, workspace, task, model, steps,
        stop reason, tokens and transcript."""
        model = write_script(tmp_path / "s.json", LIST_READ_ANSWER)
        path, run_id = recorded(invoke(["what is it?", "--model", model]))
        (row,) = orjson.loads(invoke(["sessions", "--json"]).stdout)
        assert row["runId"] == run_id
        assert row["workspace"] == str(ws.resolve())
        assert (row["task"], row["model"], row["steps"]) == ("what is it?", model, 3)
        assert row["stopReason"] == "final"
        assert row["transcript"] == str(path)

    def test_since(self, ws: Path, tmp_path: Path) -> None:
        """--since an age or a date: only the runs started since."""
        invoke(["recent", "--model", answer(tmp_path)])
        tool_session(store_root(), "a" * 32, dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
        assert len(orjson.loads(invoke(["sessions", "--all", "--json"]).stdout)) == 2
        rows = orjson.loads(invoke(["sessions", "--all", "--since", "7d", "--json"]).stdout)
        assert [row["task"] for row in rows] == ["recent"]
        assert invoke(["sessions", "--since", "2999-01-01", "--json"]).stdout == "[]\n"
        bad = invoke(["sessions", "--since", "lately"])
        assert bad.exit_code == 2
        assert "--since takes an age (30m, 12h, 7d, 2w) or a date" in bad.stderr

    def test_none_recorded(self, ws: Path) -> None:
        """No run of this workspace: said, with the way to see the others; exit 0."""
        result = invoke(["sessions"])
        assert result.exit_code == 0
        assert result.stdout == (
            f"[mini-harness] No runs of {ws.resolve()} recorded in {store_root()}; --all "
            "lists every workspace's\n"
        )

    def test_an_unreadable_file_is_named_and_the_rest_listed(
        self, ws: Path, tmp_path: Path
    ) -> None:
        """A file of the store that is no transcript is a warning; the others are listed."""
        invoke(["still listed", "--model", answer(tmp_path)])
        junk = store_root() / "junk.jsonl"
        junk.write_text("not a transcript\n")
        result = invoke(["sessions"])
        assert result.exit_code == 0
        assert "still listed" in result.stdout
        assert f"[mini-harness] Warning: {junk} was not read:" in result.stderr

    def test_the_store_is_a_corpus(self, ws: Path, tmp_path: Path) -> None:
        """`replay DIR` and `transcript verify DIR` over the store: the corpus report."""
        invoke(["one", "--model", answer(tmp_path)])
        invoke(["two", "--model", answer(tmp_path)])
        assert invoke(["replay", str(store_root())]).exit_code == 0
        verified = invoke(["transcript", "verify", str(store_root())])
        assert verified.exit_code == 0, verified.output


def rows() -> list[dict[str, object]]:
    result = invoke(["sessions", "--json"])
    assert result.exit_code == 0, result.output
    listed: list[dict[str, object]] = orjson.loads(result.stdout)
    return listed


class TestListingReadsTheEnds:
    """`sessions` reads of a session the lines that start and finish its runs; a file it
    cannot be sure of (a run that did not finish, a torn tail, lines in another key
    order) is read whole, and listed all the same."""

    def test_a_resumed_session_lists_both_runs(self, ws: Path, tmp_path: Path) -> None:
        """A session with a run and its resume: two rows, with what each recorded."""
        model = write_script(tmp_path / "s.json", LIST_READ_ANSWER)
        path, first = recorded(invoke(["what is it?", "--model", model]))
        resumed = invoke(["resume", first, "and now?", "--model", answer(tmp_path, "More.")])
        assert resumed.exit_code == 0, resumed.output
        _, second = recorded(resumed)
        newest, oldest = rows()
        assert (newest["runId"], newest["continues"]) == (second, {"resumed": first})
        assert (newest["task"], newest["steps"], newest["stopReason"]) == ("and now?", 1, "final")
        assert (oldest["runId"], oldest["steps"], oldest["stopReason"]) == (first, 3, "final")
        assert newest["transcript"] == oldest["transcript"] == str(path)

    def test_a_run_that_did_not_finish_counts_its_requests(self, ws: Path, tmp_path: Path) -> None:
        """A session cut after its second model answer (the process died): `unfinished`,
        with the steps it made."""
        model = write_script(tmp_path / "s.json", LIST_READ_ANSWER)
        path, run_id = recorded(invoke(["what is it?", "--model", model]))
        whole = tmp_path / "whole.jsonl"
        whole.write_bytes(path.read_bytes())
        cut_after(whole, path, "ModelResponded", nth=2)
        (row,) = rows()
        assert (row["runId"], row["stopReason"], row["steps"]) == (run_id, "unfinished", 2)

    def test_a_torn_tail_is_read_whole(self, ws: Path, tmp_path: Path) -> None:
        """A session whose last line was cut mid-write lists its run as it stands."""
        path, run_id = recorded(invoke(["what is it?", "--model", answer(tmp_path)]))
        with path.open("ab") as handle:
            handle.write(b'{"type":"RunStarted","seq":9')
        (row,) = rows()
        assert (row["runId"], row["stopReason"]) == (run_id, "final")

    def test_lines_in_another_key_order_are_found(self, ws: Path, tmp_path: Path) -> None:
        """A RunStarted written with its keys in another order (by another writer) is
        still found: the file is read whole."""
        path, run_id = recorded(invoke(["what is it?", "--model", answer(tmp_path)]))
        lines, prev = [], None
        for raw in path.read_bytes().splitlines():
            data = orjson.loads(raw)
            if prev is not None:
                data["prev"] = prev
            if data["type"] == "RunStarted":
                data = {"seq": data.pop("seq"), **data}
            lines.append(orjson.dumps(data))
            prev = line_hash(lines[-1])
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        assert verify_transcript(path).ok
        (row,) = rows()
        assert (row["runId"], row["task"], row["stopReason"]) == (run_id, "what is it?", "final")

    def test_a_run_type_inside_an_event_is_no_run(self, ws: Path, tmp_path: Path) -> None:
        """Tool arguments holding {"type": "RunStarted"} are no run of the session."""
        call = {"name": "echo", "arguments": {"type": "RunStarted", "text": "x"}}
        model = write_script(tmp_path / "s.json", [{"toolCalls": [call]}, {"text": "Done."}])
        _, run_id = recorded(invoke(["echo it", "--model", model]))
        (row,) = rows()
        assert (row["runId"], row["steps"], row["stopReason"]) == (run_id, 2, "final")


class TestFindingARun:
    def test_last_takes_the_newest_run_of_the_workspace(self, ws: Path, tmp_path: Path) -> None:
        """resume --last, show --last and view --last take this workspace's newest run."""
        invoke(["older", "--model", answer(tmp_path)])
        path, run_id = recorded(invoke(["newer", "--model", answer(tmp_path)]))
        shown = invoke(["show", "--last"])
        assert shown.exit_code == 0, shown.output
        assert "newer" in shown.stdout
        assert "older" not in shown.stdout
        viewed = invoke(["view", "--last"])
        assert viewed.exit_code == 0, viewed.output
        assert path.with_suffix(".html").is_file()
        resumed = invoke(["resume", "--last", "go on", "--model", answer(tmp_path, name="b")])
        assert resumed.exit_code == 0, resumed.output
        assert f"Resuming run {run_id} " in resumed.stdout
        forked = invoke(["fork", "--last", "--at-step", "1", "--model", answer(tmp_path)])
        assert forked.exit_code == 0, forked.output
        assert [r.task for r in fold_agent_runs(path)] == ["newer", "go on", "go on"]

    def test_last_with_nothing_recorded_here(self, ws: Path) -> None:
        """--last where no run was recorded: exit 2 saying so, pointing at --all."""
        result = invoke(["resume", "--last"])
        assert result.exit_code == 2
        assert f"no agent run of {ws.resolve()} is recorded in the session store" in result.stderr
        assert "`mini-harness sessions --all`" in result.stderr

    def test_a_run_id_prefix_where_a_path_goes(self, ws: Path, tmp_path: Path) -> None:
        """The first digits of a stored run's id work for show, view, replay, verify,
        repair, fork and resume."""
        path, run_id = recorded(invoke(["hello", "--model", answer(tmp_path)]))
        prefix = run_id[:8]
        for args in (["show"], ["replay"], ["transcript", "verify"], ["transcript", "repair"]):
            result = invoke([*args, prefix])
            assert result.exit_code == 0, (args, result.output)
            assert str(path) in result.stdout or "hello" in result.stdout, args
        assert invoke(["view", prefix]).exit_code == 0
        forked = invoke(["fork", prefix, "--at-step", "1", "--model", answer(tmp_path)])
        assert forked.exit_code == 0, forked.output
        resumed = invoke(["resume", prefix, "again", "--model", answer(tmp_path)])
        assert resumed.exit_code == 0, resumed.output
        assert f"Resuming run {run_id} " in resumed.stdout

    def test_an_ambiguous_prefix_lists_the_candidates(self, ws: Path) -> None:
        """Two runs whose ids start alike: exit 2 naming both with their transcripts."""
        now = dt.datetime.now(dt.UTC)
        first = tool_session(store_root(), "abcd" + "1" * 28, now)
        second = tool_session(store_root(), "abcd" + "2" * 28, now)
        result = invoke(["show", "abcd"])
        assert result.exit_code == 2
        assert "has 2 runs whose id starts with abcd:" in result.stderr
        assert f"abcd{'1' * 28} ({first})" in result.stderr
        assert f"abcd{'2' * 28} ({second})" in result.stderr
        assert "give more of the id, or the transcript's path" in result.stderr
        assert invoke(["show", "abcd1"]).exit_code == 0

    def test_a_prefix_no_run_has(self, ws: Path) -> None:
        """Neither a file nor a stored run: exit 2 saying both."""
        result = invoke(["show", "beefcafe"])
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: cannot read transcript beefcafe: no such file, and no run "
            f"recorded in the session store ({store_root()}) has an id starting with beefcafe\n"
        )


class TestTheRecordedWorkspace:
    def test_resume_from_elsewhere_works_where_the_run_worked(
        self, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Resumed from another directory, the run's tools work in its recorded workspace,
        and a line says so."""
        path, run_id = recorded(invoke(["look", "--model", answer(tmp_path)]))
        monkeypatch.chdir(tmp_path)
        model = write_script(
            tmp_path / "read.json",
            [{"toolCalls": [{"name": "read_file", "arguments": {"path": "note.txt"}}]},
             {"text": "Read it."}],
        )  # fmt: skip
        result = invoke(["resume", run_id, "read the note", "--model", model])
        assert result.exit_code == 0, result.output
        assert (
            f"[mini-harness] Workspace: {ws.resolve()}, where run {run_id} worked (the current "
            f"directory is {tmp_path.resolve()}; --workspace DIR to work elsewhere)"
        ) in result.stdout
        assert "only in the workspace" in result.stdout
        assert started(path)[-1].workspace.path == str(ws.resolve())  # type: ignore[union-attr]

    def test_a_moved_workspace_needs_workspace(
        self, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A recorded workspace that is gone: exit 2 naming it; --workspace DIR goes on there."""
        _, run_id = recorded(invoke(["look", "--model", answer(tmp_path)]))
        monkeypatch.chdir(tmp_path)
        moved = ws.rename(tmp_path / "moved")
        result = invoke(["resume", run_id, "more", "--model", answer(tmp_path)])
        assert result.exit_code == 2
        assert f"run {run_id} worked in {ws.resolve()}, which is not a directory any more" in (
            result.stderr
        )
        assert "give the workspace with --workspace DIR" in result.stderr
        again = ["resume", run_id, "more", "--model", answer(tmp_path), "--workspace", str(moved)]
        assert invoke(again).exit_code == 0

    def test_undo_from_elsewhere(
        self, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """undo from another directory reverts the patch in the workspace its run recorded."""
        model = patching_script(tmp_path)
        _, run_id = recorded(invoke(["patch it", "--model", model, "--approve", "auto"]))
        assert (ws / "README.md").read_text() == "# Patched\nA tiny project.\n"
        monkeypatch.chdir(tmp_path)
        result = invoke(["undo", run_id[:10], "--call", f"{run_id[:12]}-1"])
        assert result.exit_code == 0, result.output
        assert f"Workspace: {ws.resolve()}, where run {run_id} worked" in result.stdout
        assert (ws / "README.md").read_text() == "# Demo\nA tiny project.\n"

    def test_replay_rerun_from_elsewhere(
        self, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """replay --rerun from another directory re-runs the calls in the recorded workspace:
        the read of a file only there matches."""
        model = write_script(
            tmp_path / "read.json",
            [{"toolCalls": [{"name": "read_file", "arguments": {"path": "note.txt"}}]},
             {"text": "Read it."}],
        )  # fmt: skip
        _, run_id = recorded(invoke(["read the note", "--model", model]))
        monkeypatch.chdir(tmp_path)
        result = invoke(["replay", run_id, "--rerun"])
        assert result.exit_code == 0, result.output
        assert "identical through step 2" in result.stdout


class TestPrune:
    def test_deletes_only_what_is_older_and_says_so(self, ws: Path, tmp_path: Path) -> None:
        """prune --older-than 90d deletes the old session (and its torn tail and emptied
        directories), keeps the new one, and names what it deleted; --dry-run deletes
        nothing."""
        old = tool_session(store_root(), "0" * 32, dt.datetime(2020, 3, 4, tzinfo=dt.UTC))
        torn = old.with_name(old.name + ".torn-100")
        torn.write_text("{")
        new_path, _ = recorded(invoke(["keep me", "--model", answer(tmp_path)]))
        dry = invoke(["sessions", "prune", "--older-than", "90d", "--dry-run"])
        assert dry.exit_code == 0, dry.output
        assert f"Would delete {old} and {torn.name} (1 run, last written " in dry.stdout
        assert old.exists()
        result = invoke(["sessions", "prune", "--older-than", "90d"])
        assert result.exit_code == 0, result.output
        assert f"[mini-harness] Deleted {old} and {torn.name} (1 run" in result.stdout
        assert result.stdout.splitlines()[-1].startswith("[mini-harness] 1 session last written")
        assert not old.exists()
        assert not torn.exists()
        assert not (store_root() / "2020").exists()
        assert stored_files() == [new_path]

    def test_nothing_to_delete(self, ws: Path, tmp_path: Path) -> None:
        """Nothing old enough: said; the store is as it was."""
        invoke(["keep me", "--model", answer(tmp_path)])
        before = stored_files()
        result = invoke(["sessions", "prune", "--older-than", "1d"])
        assert result.exit_code == 0
        assert "Nothing to delete: no session in" in result.stdout
        assert stored_files() == before

    def test_an_age_is_required(self) -> None:
        """No --older-than, or one that is no age: exit 2."""
        assert invoke(["sessions", "prune"]).exit_code == 2
        bad = invoke(["sessions", "prune", "--older-than", "ninety days"])
        assert bad.exit_code == 2
        assert "--older-than takes an age such as 30m, 12h, 90d or 2w" in bad.stderr

    def test_a_session_still_being_written_is_kept(self, tmp_path: Path) -> None:
        """An unfinished run a live writer holds is not deleted, however old it says it is."""
        when = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
        path = SessionStore(store_root()).new_transcript("f" * 32, when)
        script = tmp_path / "never.json"
        script.write_bytes(orjson.dumps([{"text": "x"}]))
        stamp = "2020-01-01T00:00:00.000000Z"
        with JsonlTranscript(path) as sink:
            runtime = ToolRuntime(
                default_registry(), sink, run_id="f" * 32, timestamp=lambda: stamp
            )
            loop = AgentLoop(runtime, ScriptProvider(script), AgentConfig(task="t"))
            loop.start()  # RunStarted: the run is held as being written until RunFinished
            os.utime(path, (when.timestamp(), when.timestamp()))
            store = SessionStore(store_root())
            assert store.prune(dt.datetime.now(dt.UTC)) == []
            assert path.exists()
        assert [p.path for p in SessionStore(store_root()).prune(dt.datetime.now(dt.UTC))] == [path]
