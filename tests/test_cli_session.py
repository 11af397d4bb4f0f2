"""One agent session: every command that runs the agent (`run`, `resume`, `fork`,
`replay --rerun --live-model`) takes the same options and is assembled the same way: the
workspace's policy with --approve, checked against the policy of the run it continues; the
log flags; secrets redacted on the screen and in the log; the open transcript out of the
tools' reach. And `run`'s options may come before the task as well as after it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click
import orjson
import pytest
from click.testing import CliRunner

import mini_harness
from mini_harness.cli import cli
from mini_harness.cli.agent import run_command
from mini_harness.replay import fold_agent_runs
from mini_harness.transcripts import verify_transcript
from tests.agent.recorded_runs import NO_KEYS, cut_after, invoke, write_script

PATCH = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# Demo\n+# Demo, patched\n"
ALLOW_PATCH = '[[rules]]\ntool = "apply_patch"\ndecision = "allow"\n'


def normalised(text: str) -> str:
    """Output with what differs from one run to the next (ids, paths) taken out."""
    text = re.sub(r"[0-9a-f]{32}", "<run>", text)
    text = re.sub(r"\d{8}T\d{6}Z", "<started>", text)  # a transcript of the session store
    return re.sub(r"/\S+/(before|after)/", "<dir>/", text)


# Each option of `run`, with a value it takes, as given on the command line.
RUN_OPTIONS: dict[str, list[str]] = {
    "--log": ["--log", "{dir}/t.jsonl"],
    "--no-log": ["--no-log"],
    "--fsync": ["--fsync", "always"],
    "--redact-env": ["--redact-env", "MINI_HARNESS_TEST_SECRET"],
    "--redact-pattern": ["--redact-pattern", "tas."],
    "--max-event-bytes": ["--max-event-bytes", "2048"],
    "--sign-with": ["--sign-with", "{dir}/prompt.txt"],  # not a key: the same error both ways
    "--max-steps": ["--max-steps", "1"],
    "--system-prompt-file": ["--system-prompt-file", "{dir}/prompt.txt"],
    "--max-context-tokens": ["--max-context-tokens", "5"],
    "--context-report": ["--context-report"],
    "--model": ["--model", "mock"],
    "--registry": ["--registry", "no_such_module_here:registry"],
    "--workspace": ["--workspace", "{dir}"],
    "--approve": ["--approve", "never"],
    "--model-timeout": ["--model-timeout", "5"],
    "--model-retries": ["--model-retries", "0"],
    "--no-stream": ["--no-stream"],
    "--json": ["--json"],
    "--otel": ["--otel"],
    "--tool": ["--tool", "echo"],
    "--tool-input": ["--tool", "echo", "--tool-input", '{{"text": "hi"}}'],
}


class TestOptionsBeforeTheTask:
    def test_the_table_names_every_option_of_run(self) -> None:
        """Every option `run` has is tried below (a new one must be added here)."""
        ctx = click.Context(run_command)
        declared = {
            param.opts[0]
            for param in run_command.get_params(ctx)
            if isinstance(param, click.Option) and param is not run_command.get_help_option(ctx)
        }
        assert declared == set(RUN_OPTIONS)

    @pytest.mark.parametrize("option", list(RUN_OPTIONS))
    def test_before_the_task_as_after_it(
        self, option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`mini-harness OPTION "TASK"` does what `mini-harness "TASK" OPTION` does: the
        same output and exit code."""
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("MINI_HARNESS_TEST_SECRET", "task")
        results = []
        for where in ("before", "after"):
            directory = tmp_path / where
            directory.mkdir()
            (directory / "prompt.txt").write_text("Be brief.\n")
            args = [word.format(dir=directory) for word in RUN_OPTIONS[option]]
            task = "count the task's files"
            words = [*args, task] if where == "before" else [task, *args]
            results.append(invoke(words))
        before, after = results
        assert "No such option" not in before.output
        assert before.exit_code == after.exit_code
        assert normalised(before.stdout) == normalised(after.stdout)
        assert normalised(before.stderr) == normalised(after.stderr)

    def test_max_steps_before_the_task(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The example of the help: --max-steps before the task limits the run."""
        monkeypatch.chdir(tmp_path)
        model = write_script(tmp_path / "s.json", [{"toolCalls": [{"name": "echo",
                                                    "arguments": {"text": "x"}}]}])  # fmt: skip
        result = invoke(["--max-steps", "1", "--model", model, "go"])
        assert result.exit_code == 1, result.output
        assert result.stderr == (
            "[mini-harness] Error: stopped after 1 step(s) without a final answer\n"
        )

    def test_options_before_run_are_the_runs(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`mini-harness --log t.jsonl run "TASK"`: the options given before `run` are its."""
        monkeypatch.chdir(tmp_path)
        result = invoke(["--log", "t.jsonl", "--max-steps", "1", "run", "go"])
        assert result.exit_code == 0, result.output
        assert (tmp_path / "t.jsonl").exists()

    def test_help_says_so(self) -> None:
        """The root's --help says that run's options may come before the task."""
        result = invoke(["--help"])
        assert '`mini-harness --max-steps 2 "TASK"` is' in " ".join(result.stdout.split())


@pytest.fixture(name="recorded")
def _recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A workspace allowing apply_patch by its policy, a run in it cut short after its
    first step's tool (so the record stops answering at step 2), and a current directory
    elsewhere, with no policy. Returns the workspace and the cut transcript."""
    ws = tmp_path / "ws"
    (ws / ".mini-harness").mkdir(parents=True)
    (ws / "README.md").write_text("# Demo\n")
    (ws / ".mini-harness/policy.toml").write_text(ALLOW_PATCH)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    answers: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "list_files", "arguments": {}}]},
        {"text": "Done."},
    ]
    log = tmp_path / "t.jsonl"
    model = write_script(tmp_path / "s.json", answers)
    result = invoke(["run", "Task", "--model", model, "--workspace", str(ws), "--log", str(log)])
    assert result.exit_code == 0, result.output
    cut = tmp_path / "cut.jsonl"
    cut_after(log, cut, "ToolSucceeded", 1)
    return ws, cut


def live(tmp_path: Path, answers: list[dict[str, Any]], *args: str) -> list[str]:
    """The arguments of `replay CUT --rerun --live-model` with a scripted live model."""
    return ["--live-model", "--model", write_script(tmp_path / "live.json", answers), *args]


PATCH_README: list[dict[str, Any]] = [
    {"toolCalls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]},
    {"text": "Patched."},
]


class TestLiveModelSession:
    def test_the_workspace_policy_decides(
        self, recorded: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """`--workspace WS`: the live model's calls are decided by WS's policy (which
        allows the patch), not by the current directory's (which has none, so it would
        ask, and with no terminal refuse)."""
        ws, cut = recorded
        result = invoke(["replay", str(cut), "--rerun", "--workspace", str(ws),
                         *live(tmp_path, PATCH_README)])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert (ws / "README.md").read_text() == "# Demo, patched\n"

    def test_approve(self, recorded: tuple[Path, Path], tmp_path: Path) -> None:
        """--approve decides what the policy leaves to ask: never refuses the patch."""
        ws, cut = recorded
        (ws / ".mini-harness/policy.toml").write_text("")  # the policy, as it was...
        cut.write_bytes(cut.read_bytes())
        result = invoke(["replay", str(cut), "--rerun", "--workspace", str(ws), "--approve",
                         "auto", "--accept-policy", *live(tmp_path, PATCH_README)])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert (ws / "README.md").read_text() == "# Demo, patched\n"
        (ws / "README.md").write_text("# Demo\n")
        result = invoke(["replay", str(cut), "--rerun", "--workspace", str(ws), "--approve",
                         "never", "--accept-policy", *live(tmp_path, PATCH_README)])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert (ws / "README.md").read_text() == "# Demo\n"

    def test_a_changed_policy_is_refused(self, recorded: tuple[Path, Path], tmp_path: Path) -> None:
        """The policy file changed since the replayed run started: as for fork, the live
        model does not go on under it without --accept-policy, and nothing is written."""
        ws, cut = recorded
        (ws / ".mini-harness/policy.toml").write_text(ALLOW_PATCH + "# edited\n")
        before = cut.read_bytes()
        result = invoke(["replay", str(cut), "--rerun", "--workspace", str(ws),
                         *live(tmp_path, PATCH_README)])  # fmt: skip
        assert result.exit_code == 2
        assert ".mini-harness/policy.toml changed since run" in result.stderr
        assert "--accept-policy" in result.stderr
        assert cut.read_bytes() == before
        assert (ws / "README.md").read_text() == "# Demo\n"

    def test_log_options(
        self, recorded: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--redact-env and --redact-pattern keep secrets off the screen, out of --json
        and out of the log the live run writes."""
        ws, cut = recorded
        monkeypatch.setenv("LIVE_SECRET", "hunter2-live-secret")
        answers = [{"text": "The key is hunter2-live-secret and PIN=zqxv."}]
        args = ["replay", str(cut), "--rerun", "--workspace", str(ws), "--redact-env",
                "LIVE_SECRET", "--redact-pattern", r"PIN=\w+", "--fsync", "always"]  # fmt: skip
        result = invoke([*args, *live(tmp_path, answers)])
        assert result.exit_code == 0, result.output
        assert "The key is [REDACTED] and [REDACTED]." in result.stdout
        assert b"hunter2" not in cut.read_bytes()
        assert b"zqxv" not in cut.read_bytes()
        assert verify_transcript(cut).damage() == []
        result = invoke([*args, "--json", *live(tmp_path, answers)])
        assert result.exit_code == 0, result.output
        assert "hunter2" not in result.stdout
        assert (
            orjson.loads(result.stdout)["live"]["finalText"]
            == "The key is [REDACTED] and [REDACTED]."
        )

    def test_an_interrupted_continuation_says_how_to_continue_it(
        self, recorded: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """Ctrl-C while the live model is asked: exit 130 and, as for an interrupted `run`,
        the command that resumes the new run (it is recorded in the transcript)."""
        ws, cut = recorded
        slow = write_script(tmp_path / "slow.json", [{"text": "late", "delayMs": 30000}])
        before = cut.stat().st_size
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        source = str(Path(mini_harness.__file__).parents[1])
        process = subprocess.Popen(
            [sys.executable, "-m", "mini_harness", "replay", str(cut), "--rerun",
             "--workspace", str(ws), "--live-model", "--model", slow],
            env={**env, "PYTHONUNBUFFERED": "1", "PYTHONPATH": source},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and b"ModelRequested" not in cut.read_bytes()[before:]:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
        assert process.returncode == 130, stdout + stderr
        new = fold_agent_runs(cut)[-1]
        assert new.stop_reason == "cancelled"
        lines = [line for line in stdout.splitlines() if "To continue the run:" in line]
        assert lines == [
            f"[mini-harness] To continue the run: mini-harness resume {cut} --run {new.run_id}"
        ]

    def test_max_event_bytes(self, recorded: tuple[Path, Path], tmp_path: Path) -> None:
        """--max-event-bytes caps the live run's lines: an answer over it is not acted on."""
        ws, cut = recorded
        answers = [{"text": "x" * 5000}]
        result = invoke(["replay", str(cut), "--rerun", "--workspace", str(ws),
                         "--max-event-bytes", "2048", *live(tmp_path, answers)])  # fmt: skip
        assert result.exit_code == 1, result.output
        assert fold_agent_runs(cut)[-1].stop_reason == "model_error"
        assert "x" * 5000 not in cut.read_text()

    def test_the_open_transcript_is_out_of_reach(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A transcript kept in the workspace is read-only to the live model's commands,
        even with --approve auto."""
        ws = tmp_path / "ws"
        (ws / "logs").mkdir(parents=True)
        monkeypatch.chdir(ws)
        answers: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "list_files", "arguments": {}}]},
            {"text": "Done."},
        ]
        model = write_script(tmp_path / "s.json", answers)
        assert invoke(["run", "Task", "--model", model, "--log", "logs/t.jsonl"]).exit_code == 0
        cut_after(ws / "logs/t.jsonl", ws / "logs/cut.jsonl", "ToolSucceeded", 1)
        before = (ws / "logs/cut.jsonl").read_bytes()
        forge = {"argv": ["sh", "-c", "echo forged > logs/cut.jsonl"]}
        answers = [{"toolCalls": [{"name": "run_command", "arguments": forge}]}, {"text": "ok"}]
        # No width (pytest-xdist sets COLUMNS=80): the result line is printed whole.
        result = invoke(["replay", "logs/cut.jsonl", "--rerun", "--approve", "auto",
                         *live(tmp_path, answers)], env={"COLUMNS": None})  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "Read-only file system" in result.stdout
        assert (ws / "logs/cut.jsonl").read_bytes().startswith(before)
        assert verify_transcript(ws / "logs/cut.jsonl").damage() == []

    @pytest.mark.parametrize("args", [["--accept-policy"], ["--model", "mock"]])
    def test_live_options_need_live_model(
        self, recorded: tuple[Path, Path], args: list[str]
    ) -> None:
        """The live model's options without --live-model are a usage error."""
        _, cut = recorded
        result = invoke(["replay", str(cut), "--rerun", *args])
        assert result.exit_code == 2
        assert result.stderr == f"[mini-harness] Error: {args[0]} needs --live-model\n"


class TestSecretsOfContinuedRuns:
    @pytest.mark.parametrize("command", ["resume", "fork"])
    def test_redact_env_on_the_terminal(
        self, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """resume and fork print [REDACTED] for a --redact-env secret, as run does: in
        the model's text and in the new run's error line."""
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("DEMO_TOKEN", "tok-0123456789")
        log = tmp_path / "t.jsonl"
        first = write_script(tmp_path / "a.json", [{"text": "First."}])
        assert invoke(["run", "Task", "--model", first, "--log", str(log)]).exit_code == 0
        answers = [
            {
                "text": "Leaking tok-0123456789",
                "toolCalls": [{"name": "echo", "arguments": {"text": "tok-0123456789"}}],
            }
        ]
        model = write_script(tmp_path / "b.json", answers)
        where = ["--at-step", "1"] if command == "fork" else []
        result = invoke([command, str(log), "go on", *where, "--model", model, "--max-steps",
                         "1", "--redact-env", "DEMO_TOKEN"])  # fmt: skip
        assert result.exit_code == 1, result.output
        assert "Leaking [REDACTED]" in result.stdout
        assert "tok-0123456789" not in result.output
        assert b"tok-0123456789" not in log.read_bytes()


def inside_warning(shown: str) -> str:
    return (
        f"[mini-harness] Warning: transcript {shown} lies inside the workspace the agent can "
        "write: a later run could rewrite it, and it would still verify. Keep the head hash "
        f"that `mini-harness transcript verify {shown}` prints somewhere else: `transcript "
        "verify --head HASH` is what proves it was not rewritten\n"
    )


class TestTranscriptInsideTheWorkspace:
    """A transcript kept where the agent's tools can write is out of this run's reach, but
    not of a later run's: the user is told so once, and what would prove it intact."""

    @pytest.fixture(name="ws")
    def _ws(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        ws = tmp_path / "ws"
        ws.mkdir()
        monkeypatch.chdir(ws)
        return ws

    def test_a_log_inside_is_warned_about_once(self, ws: Path, tmp_path: Path) -> None:
        """`run --log logs/t.jsonl` in the workspace says so on stderr, once."""
        model = write_script(tmp_path / "s.json", [{"text": "Done."}])
        result = invoke(["run", "Task", "--model", model, "--log", "logs/t.jsonl"])
        assert result.exit_code == 0, result.output
        assert result.stderr == inside_warning("logs/t.jsonl")

    def test_a_resumed_transcript_inside_is_warned_about_once(
        self, ws: Path, tmp_path: Path
    ) -> None:
        """`resume` of a transcript kept in the workspace (read and appended to) says so
        once."""
        answers: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "list_files", "arguments": {}}]},
            {"text": "Done."},
        ]
        model = write_script(tmp_path / "s.json", answers)
        log = tmp_path / "t.jsonl"
        assert invoke(["run", "Task", "--model", model, "--log", str(log)]).exit_code == 0
        cut_after(log, ws / "cut.jsonl", "ToolSucceeded", 1)
        done = write_script(tmp_path / "done.json", [{"text": "Done."}])
        result = invoke(["resume", "cut.jsonl", "--model", done])
        assert result.exit_code == 0, result.output
        assert result.stderr == inside_warning("cut.jsonl")

    def test_a_log_outside_is_not_warned_about(self, ws: Path, tmp_path: Path) -> None:
        """A log beside the workspace, not in it, gets no warning."""
        model = write_script(tmp_path / "s.json", [{"text": "Done."}])
        result = invoke(["run", "Task", "--model", model, "--log", "../t.jsonl"])
        assert result.exit_code == 0, result.output
        assert result.stderr == ""


KEY = "sk-test-0123456789abcdefghijklmnop"  # an OpenAI-like key


class TestDispatchSecrets:
    """A one-shot `--tool` dispatch hides what a run hides: the settings' --redact-env
    names (the project's config.toml too) and every configured provider's key, on the
    screen, in --json and in its log."""

    @pytest.fixture(name="ws")
    def _ws(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        ws = tmp_path / "ws"
        (ws / ".mini-harness").mkdir(parents=True)
        (ws / ".mini-harness/config.toml").write_text('redact-env = ["DISPATCH_SECRET"]\n')
        monkeypatch.chdir(ws)
        return ws

    @pytest.mark.parametrize("as_json", [[], ["--json"]])
    def test_the_project_config_redact_env(self, ws: Path, as_json: list[str]) -> None:
        log = ws / "t.jsonl"
        text = '{"text": "the secret is hunter2-dispatch"}'
        env: dict[str, str | None] = {"DISPATCH_SECRET": "hunter2-dispatch"}
        result = invoke(["--tool", "echo", "--tool-input", text, "--log", str(log), *as_json], env)
        assert result.exit_code == 0, result.output
        assert "the secret is [REDACTED]" in result.stdout
        assert "hunter2" not in result.output
        assert b"hunter2" not in log.read_bytes()
        assert b"the secret is [REDACTED]" in log.read_bytes()

    @pytest.mark.parametrize("as_json", [[], ["--json"]])
    def test_a_provider_key(self, ws: Path, as_json: list[str]) -> None:
        log = ws / "t.jsonl"
        text = '{"text": "key: ' + KEY + '"}'
        result = invoke(
            ["--tool", "echo", "--tool-input", text, "--log", str(log), *as_json],
            {"OPENAI_API_KEY": KEY},
        )
        assert result.exit_code == 0, result.output
        assert "key: [REDACTED]" in result.stdout
        assert KEY not in result.output
        assert KEY.encode() not in log.read_bytes()

    def test_a_failed_call_says_what_failed_redacted(self, ws: Path) -> None:
        """The error line of a call that failed hides a --redact-env secret as everything
        else the command prints does (it is printed by the error path, not the session)."""
        log = ws / "t.jsonl"
        result = invoke(
            ["--tool", "read_file", "--tool-input", '{"path": "hunter2-dispatch.txt"}',
             "--log", str(log), "--redact-env", "DISPATCH_SECRET"],
            {"DISPATCH_SECRET": "hunter2-dispatch"},
        )  # fmt: skip
        assert result.exit_code == 1, result.output
        assert 'Path "[REDACTED].txt" does not exist' in result.stderr
        assert "hunter2" not in result.output
        assert b"hunter2" not in log.read_bytes()


class TestRerunSecrets:
    """A re-run (`replay --rerun`, `view --rerun`) hides what the run it re-runs hid: the
    config's --redact-env names and every configured provider's key, on the screen, in
    its log and in its page; and a call that read a secret compares with its redacted
    record as matched."""

    SECRET = "hunter2-rerun"

    @pytest.fixture(name="recorded")
    def _recorded(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        ws = tmp_path / "ws"
        (ws / ".mini-harness").mkdir(parents=True)
        (ws / ".mini-harness/config.toml").write_text('redact-env = ["RERUN_SECRET"]\n')
        (ws / "secret.txt").write_text(f"foo {self.SECRET} key {KEY}\n")
        monkeypatch.chdir(ws)
        log = tmp_path / "t.jsonl"
        result = invoke(
            ["--tool", "read_file", "--tool-input", '{"path": "secret.txt"}', "--log", str(log)],
            self.env(),
        )
        assert result.exit_code == 0, result.output
        assert self.SECRET.encode() not in log.read_bytes()
        return log

    def env(self) -> dict[str, str | None]:
        return {"RERUN_SECRET": self.SECRET, "OPENAI_API_KEY": KEY}

    @pytest.mark.parametrize("as_json", [[], ["--json"]])
    def test_a_call_that_read_them_matches(self, recorded: Path, as_json: list[str]) -> None:
        out = recorded.parent / "out.jsonl"
        args = ["replay", str(recorded), "--rerun", "--log", str(out), *as_json]
        result = invoke(args, self.env())
        assert result.exit_code == 0, result.output
        assert "matched" in result.stdout
        assert self.SECRET not in result.output
        assert KEY not in result.output
        assert self.SECRET.encode() not in out.read_bytes()
        assert KEY.encode() not in out.read_bytes()
        assert b"foo [REDACTED] key [REDACTED]" in out.read_bytes()

    def test_the_diff_of_a_call_that_diverged_hides_them(self, recorded: Path) -> None:
        Path("secret.txt").write_text(f"bar {self.SECRET} key {KEY}\n")
        result = invoke(["replay", str(recorded), "--rerun"], self.env())
        assert result.exit_code == 1, result.output
        assert "diverged" in result.stdout
        assert "bar [REDACTED] key [REDACTED]" in result.stdout
        assert self.SECRET not in result.output
        assert KEY not in result.output

    def test_view_rerun(self, recorded: Path) -> None:
        Path("secret.txt").write_text(f"bar {self.SECRET} key {KEY}\n")
        page = recorded.parent / "page.html"
        result = invoke(["view", str(recorded), "--rerun", "-o", str(page)], self.env())
        assert result.exit_code == 1, result.output
        assert self.SECRET not in page.read_text()
        assert KEY not in page.read_text()
        assert self.SECRET not in result.output

    def test_an_agent_runs_call_that_read_them_matches(self, recorded: Path) -> None:
        """The offline replay of an agent run compares a call's result redacted as its
        record was: `same result`, the secret never shown."""
        script = write_script(
            recorded.parent / "script.json",
            [
                {"toolCalls": [{"name": "read_file", "arguments": {"path": "secret.txt"}}]},
                {"text": "Done."},
            ],
        )
        log = recorded.parent / "agent.jsonl"
        ran = invoke(["run", "Read it", "--model", script, "--log", str(log)], self.env())
        assert ran.exit_code == 0, ran.output
        result = invoke(["replay", str(log), "--rerun"], self.env())
        assert result.exit_code == 0, result.output
        assert 'read_file {"path":"secret.txt"}: re-run, same result' in result.output
        assert self.SECRET not in result.output


class TestActingWorkspace:
    def test_a_piped_rerun_works_where_the_run_worked(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`replay - --rerun` reads standard input once and, given no workspace, re-runs
        the calls where the recorded run worked (said), as it does for a file."""
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "README.md").write_text("# Demo\n")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        answers: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "list_files", "arguments": {}}]},
            {"text": "Done."},
        ]
        log = tmp_path / "t.jsonl"
        model = write_script(tmp_path / "s.json", answers)
        result = invoke(
            ["run", "Task", "--model", model, "--workspace", str(ws), "--log", str(log)]
        )
        assert result.exit_code == 0, result.output
        (run,) = fold_agent_runs(log)
        piped = CliRunner().invoke(
            cli, ["replay", "-", "--rerun"], input=log.read_bytes(), env=dict(NO_KEYS)
        )
        assert piped.exit_code == 0, piped.output
        assert f"Workspace: {ws}, where run {run.run_id} worked" in piped.stdout
        assert "Step 1: list_files {}: re-run, same result" in piped.stdout
