from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolCallError, ToolRuntime, __version__
from mini_harness.cli import cli
from mini_harness.cli.registry_spec import agent_registry
from mini_harness.events import NullSink, to_wire
from mini_harness.events.measure import estimate_tokens
from mini_harness.runtime.context_report import pretty_json
from mini_harness.tools import default_registry
from mini_harness.transcripts import JsonlTranscript, TranscriptReader

HELLO = '{"text":"hello"}'
AGENT_TOOLS = (
    "echo, list_files, read_file, search_text, git_status, git_diff, apply_patch, run_command"
)
PATCH = '{"patch":"--- a/a.py\\n+++ b/a.py\\n@@ -1 +1 @@\\n-x\\n+y\\n"}'


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def stable(text: str) -> str:
    """Durations are the only volatile part of the plain output."""
    return re.sub(r'"durationMs":\d+', '"durationMs":0', text)


class TestSeedBehaviour:
    def test_dispatch_echo(self) -> None:
        """The seed command prints the reference's four lines and exits 0."""
        result = run("--tool", "echo", "--tool-input", HELLO)
        assert result.exit_code == 0
        assert stable(result.stdout) == (
            "[mini-harness] Task: Dispatch tool: echo\n"
            "[mini-harness] Model provider: none\n"
            "[mini-harness] Manual tool dispatch completed.\n"
            '[mini-harness] Tool result: {"name":"echo","input":{"text":"hello"},'
            '"output":{"text":"hello"},"durationMs":0}\n'
        )
        assert result.stderr == ""

    def test_context_report(self) -> None:
        """--context-report adds a blank line and the Context Explorer table."""
        result = run("--context-report", "--tool", "echo", "--tool-input", HELLO)
        assert result.exit_code == 0
        # The definitions part is the default registry's tool list as the model sees it.
        defs = estimate_tokens(pretty_json(to_wire(default_registry().list())))
        assert stable(result.stdout).splitlines()[4:] == [
            "",
            "Context Explorer",
            "",
            f"Tool definitions       ~{defs:,} tokens",
            "Tool result            ~29 tokens",
            f"Total                  ~{defs + 29:,} tokens",
        ]

    @pytest.mark.parametrize(
        ("args", "message", "code"),
        [
            (["--tool-input", '{"text":123}'], "Invalid input for echo.text: expected string", 1),
            (["--tool-input", "[1]"], "Invalid input for echo: expected object", 1),
            ([], 'Invalid input for echo: missing required property "text"', 1),
            (["--tool-input", '{"text"'], "--tool-input must be valid JSON", 2),
        ],
    )
    def test_errors(self, args: list[str], message: str, code: int) -> None:
        """Bad input prints one error line on stderr, nothing on stdout, and the exit code."""
        result = run("--tool", "echo", *args)
        assert result.exit_code == code
        assert result.stderr == f"[mini-harness] Error: {message}\n"
        assert result.stdout == ""

    def test_unknown_tool(self) -> None:
        """An unknown tool is exit 1 with the reference's message and the registered tools."""
        result = run("--tool", "nope", "--tool-input", "{}")
        assert result.exit_code == 1
        assert result.stderr == (
            f"[mini-harness] Error: Unknown tool: nope. Registered tools: {AGENT_TOOLS}\n"
        )

    def test_a_misspelt_tool_gets_a_suggestion(self, tmp_path: Path) -> None:
        """`--tool ehco` suggests echo; the transcript records the message the screen shows."""
        log = tmp_path / "t.jsonl"
        result = run("--tool", "ehco", "--tool-input", HELLO, "--log", str(log))
        assert result.exit_code == 1
        told = f"Unknown tool: ehco. Did you mean 'echo'? Registered tools: {AGENT_TOOLS}"
        assert result.stderr == f"[mini-harness] Error: {told}\n"
        last = orjson.loads(log.read_bytes().splitlines()[-1])
        assert last["error"] == {"kind": "unknown_tool", "message": told}


class TestLog:
    def test_success_transcript(self, tmp_path: Path) -> None:
        """--log records header, RunStarted, ToolCalled, ToolSucceeded."""
        log = tmp_path / "t.jsonl"
        result = run("--tool", "echo", "--tool-input", HELLO, "--log", str(log))
        assert result.exit_code == 0
        assert f"[mini-harness] Transcript: {log} (run " in result.stdout
        types = [orjson.loads(line)["type"] for line in log.read_bytes().splitlines()]
        assert types == ["TranscriptStarted", "RunStarted", "ToolCalled", "ToolSucceeded"]

    @pytest.mark.parametrize(
        ("tool", "tool_input", "kind"),
        [
            ("echo", '{"text":1}', "invalid_input"),
            ("nope", "{}", "unknown_tool"),
        ],
    )
    def test_failures_are_logged(
        self, tmp_path: Path, tool: str, tool_input: str, kind: str
    ) -> None:
        """A failed dispatch is still logged, with the right error.kind."""
        log = tmp_path / "t.jsonl"
        result = run("--tool", tool, "--tool-input", tool_input, "--transcript", str(log))
        assert result.exit_code == 1
        lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
        assert [line["type"] for line in lines[2:]] == ["ToolCalled", "ToolFailed"]
        assert lines[-1]["error"]["kind"] == kind

    @pytest.mark.parametrize("spelling", ["--log", "--transcript"])
    def test_missing_parent_directories_are_created(self, tmp_path: Path, spelling: str) -> None:
        """`--log logs/runs/day-04.jsonl` creates logs/runs/, as the reference does."""
        log = tmp_path / "logs" / "runs" / "day-04.jsonl"
        result = run("--tool", "echo", "--tool-input", HELLO, spelling, str(log))
        assert result.exit_code == 0, result.output
        assert log.read_bytes().count(b"\n") == 4

    def test_mcp_log_creates_parent_directories_too(self, tmp_path: Path) -> None:
        """`mcp --log` creates missing parent directories as the root dispatch does."""
        log = tmp_path / "logs" / "mcp" / "session.jsonl"
        proc = subprocess.run(
            [sys.executable, "-m", "mini_harness", "mcp", "--log", str(log)],
            input=b"",
            capture_output=True,
            check=False,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert b'"type":"RunStarted"' in log.read_bytes()

    def test_second_run_appends(self, tmp_path: Path) -> None:
        """A second CLI run with the same --log adds a new run to the same file."""
        log = tmp_path / "t.jsonl"
        for _ in range(2):
            assert run("--tool", "echo", "--tool-input", HELLO, "--log", str(log)).exit_code == 0
        reader = TranscriptReader(log)
        records = list(reader)
        assert [r.seq for r in records] == list(range(7))
        assert reader.problems == []

    def test_unusable_log_path_is_a_usage_error(self, tmp_path: Path) -> None:
        """A log that cannot be opened is exit 2 with one line, no traceback."""
        (tmp_path / "file").write_text("")
        log = tmp_path / "file" / "t.jsonl"
        result = run("--tool", "echo", "--tool-input", HELLO, "--log", str(log))
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: cannot open transcript {log}: Not a directory\n"
        )
        assert "Traceback" not in result.output


class TestUsage:
    def test_version(self) -> None:
        """--version prints the version."""
        result = run("--version")
        assert result.exit_code == 0
        assert __version__ in result.stdout

    def test_help_explains_exit_codes(self) -> None:
        """--help names the options and the exit codes."""
        result = run("--help")
        assert result.exit_code == 0
        for text in ("--tool", "--tool-input", "--context-report", "--log", "Exit codes"):
            assert text in result.stdout

    def test_unknown_option(self) -> None:
        """An unknown flag is a usage error (exit 2) in our error format."""
        result = run("--bogus")
        assert result.exit_code == 2
        assert result.stderr.startswith("[mini-harness] Error: No such option")

    def test_tool_input_without_tool(self) -> None:
        """--tool-input alone says what is missing."""
        result = run("--tool-input", "{}")
        assert result.exit_code == 2
        assert "--tool-input needs --tool NAME" in result.stderr

    def test_dispatch_flags_with_a_subcommand(self) -> None:
        """Dispatch flags do not mix with a subcommand."""
        result = run("--tool", "echo", "tools")
        assert result.exit_code == 2

    def test_misspelt_subcommand_suggests_the_right_one(self) -> None:
        """Subcommands load on demand, yet a misspelt one still gets a suggestion.

        In a fresh process, so that no earlier test has loaded the subcommands already.
        """
        proc = subprocess.run(
            [sys.executable, "-m", "mini_harness", "tool"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 2
        assert proc.stderr == (
            "[mini-harness] Error: No such command 'tool'. Did you mean 'tools'? "
            "To give it to the agent as a task: mini-harness run tool\n"
            "[mini-harness] Try 'mini-harness --help' for help.\n"
        )


class TestToolsCommand:
    @pytest.mark.parametrize(
        ("fmt", "key"),
        [("json", "inputSchema"), ("openai", "function"), ("anthropic", "input_schema")],
    )
    def test_formats(self, fmt: str, key: str) -> None:
        """Each format prints a JSON list whose entries carry that ecosystem's keys."""
        result = run("tools", "--format", fmt)
        assert result.exit_code == 0
        entries = orjson.loads(result.stdout)
        assert key in entries[0]
        assert "handler" not in result.stdout

    def test_mcp_format(self) -> None:
        """--format mcp prints a tools/list result."""
        entries = orjson.loads(run("tools", "--format", "mcp").stdout)
        assert entries["tools"][0]["name"] == "echo"

    def test_bad_format(self) -> None:
        """An unknown format is a usage error."""
        assert run("tools", "--format", "yaml").exit_code == 2

    def test_lists_the_tools_an_agent_run_gets(self) -> None:
        """`tools` lists every tool an agent run gets, the coding tools too."""
        names = [entry["name"] for entry in orjson.loads(run("tools").stdout)]
        assert ", ".join(names) == AGENT_TOOLS

    def test_table(self) -> None:
        """--format table (the default on a terminal) prints one line per tool, saying
        which are read-only."""
        lines = run("tools", "--format", "table").stdout.splitlines()
        assert lines[0].split() == ["TOOL", "READ-ONLY", "DESCRIPTION"]
        rows = {line.split()[0]: line.split()[1] for line in lines[1:]}
        assert ", ".join(rows) == AGENT_TOOLS
        assert (rows["read_file"], rows["apply_patch"]) == ("yes", "no")


class TestDispatchReachesEveryTool:
    def test_git_status_without_a_task(self, tmp_path: Path, monkeypatch: Any) -> None:
        """`--tool git_status` alone dispatches it, as it does with a task."""
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        monkeypatch.chdir(tmp_path)
        result = run("--tool", "git_status")
        assert result.exit_code == 0, result.output
        assert '"clean":true' in result.stdout

    def test_a_change_asks_for_approval(self, tmp_path: Path, monkeypatch: Any) -> None:
        """apply_patch by --tool is behind the approval policy: denied without a terminal
        to ask on (the file is unchanged), applied with --approve auto."""
        (tmp_path / "a.py").write_text("x\n")
        monkeypatch.chdir(tmp_path)
        denied = run("--tool", "apply_patch", "--tool-input", PATCH)
        assert denied.exit_code == 1
        assert "needs approval" in denied.stderr
        assert (tmp_path / "a.py").read_text() == "x\n"
        applied = run("--tool", "apply_patch", "--tool-input", PATCH, "--approve", "auto")
        assert applied.exit_code == 0, applied.output
        assert (tmp_path / "a.py").read_text() == "y\n"

    def test_an_unknown_tool_with_a_task_stops_before_the_model(
        self, tmp_path: Path, monkeypatch: Any
    ) -> None:
        """`--tool git_stat "task"` exits 2 with the suggestions; no model is asked and
        nothing is recorded."""
        monkeypatch.chdir(tmp_path)
        log = tmp_path / "t.jsonl"
        result = run("--tool", "git_stat", "task", "--log", str(log))
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: Unknown tool: git_stat. Did you mean 'git_status'? "
            f"Registered tools: {AGENT_TOOLS}\n"
        )
        assert result.stdout == ""
        assert not log.exists()


class TestWorkspaceOption:
    def test_read_file_in_the_workspace(self, tmp_path: Path) -> None:
        """--workspace DIR binds the file tools to DIR."""
        (tmp_path / "a.txt").write_text("hi\n")
        result = run(
            "--workspace", str(tmp_path), "--tool", "read_file", "--tool-input", '{"path":"a.txt"}'
        )
        assert result.exit_code == 0
        assert stable(result.stdout).splitlines()[3] == (
            '[mini-harness] Tool result: {"name":"read_file","input":{"path":"a.txt"},'
            '"output":{"path":"a.txt","text":"hi\\n","startLine":1,"endLine":1,'
            '"totalLines":1,"truncated":false},"durationMs":0}'
        )

    def test_default_is_the_current_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without --workspace the file tools see the current directory."""
        (tmp_path / "here.md").write_text("x")
        monkeypatch.chdir(tmp_path)
        result = run("--tool", "list_files")
        assert '"files":[{"path":"here.md","size":1}]' in result.stdout

    def test_escape_is_refused_and_logged(self, tmp_path: Path) -> None:
        """A path leaving the workspace is exit 1 with one error line, and is logged."""
        log = tmp_path / "t.jsonl"
        (tmp_path / "ws").mkdir()
        result = run(
            "--workspace",
            str(tmp_path / "ws"),
            "--tool",
            "read_file",
            "--tool-input",
            '{"path":"../t.jsonl"}',
            "--log",
            str(log),
        )
        message = (
            'Tool read_file failed: WorkspaceError: Path "../t.jsonl" leads outside the workspace'
        )
        assert result.exit_code == 1
        assert result.stderr == f"[mini-harness] Error: {message}\n"
        last = orjson.loads(log.read_bytes().splitlines()[-1])
        assert last["type"] == "ToolFailed"
        assert last["error"] == {
            "kind": "handler_error",
            "message": message,
            "type": "WorkspaceError",
        }

    def test_missing_workspace_is_a_usage_error(self, tmp_path: Path) -> None:
        """A --workspace that is not a directory is exit 2."""
        result = run("--workspace", str(tmp_path / "nope"), "--tool", "list_files")
        assert result.exit_code == 2
        assert result.stderr.startswith("[mini-harness] Error: Invalid value for '--workspace'")

    def test_workspace_combines_with_subcommands(self, tmp_path: Path) -> None:
        """--workspace may precede a subcommand (it picks the root its registry uses)."""
        assert run("--workspace", str(tmp_path), "tools").exit_code == 0

    def test_tools_reads_the_root_workspace(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`--workspace DIR tools` builds its registry in DIR, so a deleted cwd does not matter."""
        gone = tmp_path / "gone"
        gone.mkdir()
        monkeypatch.chdir(gone)
        gone.rmdir()
        assert run("tools").exit_code == 2
        result = run("--workspace", str(tmp_path), "tools")
        assert result.exit_code == 0, result.output
        assert [entry["name"] for entry in orjson.loads(result.stdout)] == [
            d.name for d in agent_registry(tmp_path).list()
        ]


class TestFileToolDefinitions:
    def test_tools_lists_the_file_tools(self) -> None:
        """`tools` shows echo and the three read-only file tools with strict schemas."""
        entries = orjson.loads(run("tools").stdout)[:4]
        assert [e["name"] for e in entries] == ["echo", "list_files", "read_file", "search_text"]
        for entry in entries[1:]:
            assert entry["annotations"]["readOnlyHint"] is True
            assert entry["inputSchema"]["additionalProperties"] is False
            assert entry["description"]
            for name, prop in entry["inputSchema"]["properties"].items():
                assert prop.get("description"), f"{entry['name']}.{name} has no description"


def test_python_dash_m(tmp_path: Path) -> None:
    """`python -m mini_harness` runs the same CLI in a real process."""
    proc = subprocess.run(
        [sys.executable, "-m", "mini_harness", "--tool", "echo", "--tool-input", HELLO],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0
    assert "Manual tool dispatch completed." in proc.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "mini_harness", "--tool", "echo", "--tool-input", "{"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr == "[mini-harness] Error: --tool-input must be valid JSON\n"


class TestToolInputNumbers:
    def test_integer_wider_than_64_bits_is_a_usage_error(self) -> None:
        """A huge integer is refused instead of silently becoming a float."""
        big = "123456789012345678901234567890"
        result = run("--tool", "echo", "--tool-input", f'{{"text":"a","n":{big}}}')
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: --tool-input: integer {big} does not fit in 64 bits\n"
        )

    @pytest.mark.parametrize(
        ("number", "shown"),
        [
            ("-9223372036854775809", "-9223372036854775809"),
            ("9" * 5000, "of 5000 digits"),
        ],
    )
    def test_every_integer_outside_64_bits_is_a_usage_error(self, number: str, shown: str) -> None:
        """Below the smallest signed 64-bit integer (19 digits), or longer than Python reads
        (thousands of digits): refused with the same message, never a float or a traceback."""
        result = run("--tool", "echo", "--tool-input", f'{{"text":"a","n":{number}}}')
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: --tool-input: integer {shown} does not fit in 64 bits\n"
        )

    def test_long_digit_runs_inside_strings_are_fine(self) -> None:
        """Digits inside a string or a 64-bit integer pass untouched."""
        text = "12345678901234567890123"
        result = run("--tool", "echo", "--tool-input", f'{{"text":"{text}"}}')
        assert result.exit_code == 0
        assert f'"output":{{"text":"{text}"}}' in result.stdout
        wide = run("--tool", "echo", "--tool-input", '{"text":"a","n":18446744073709551615}')
        assert wide.exit_code == 0
        assert '"n":18446744073709551615' in wide.stdout
        large = run("--tool", "echo", "--tool-input", '{"text":"a","n":1e19,"m":-9.3e18}')
        assert large.exit_code == 0  # floats that large are floats, not wide integers


def _console(
    args: list[str], cwd: Path, *, encoding: str = "utf-8", **streams: Any
) -> subprocess.CompletedProcess[bytes]:
    """The console script in a fresh process, its stdout block-buffered as a client's or a
    shell redirect's is (no PYTHONUNBUFFERED), with `encoding` for its streams."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONIOENCODING"] = encoding
    return subprocess.run(
        [sys.executable, "-m", "mini_harness", *args],
        check=False,
        cwd=cwd,
        env=env,
        timeout=60,
        **streams,
    )


FULL_DISK = b"[mini-harness] Error: cannot write the output: No space left on device\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
class TestOutputThatCannotBeWritten:
    @pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
    @pytest.mark.parametrize(
        "args",
        [
            ["--tool", "echo", "--tool-input", HELLO],  # the quick route
            ["--tool", "echo", "--tool-input", HELLO, "--log", "t.jsonl", "--fsync", "never"],
            ["--tool", "echo", "--tool-input", '{"text":"h\u00e9"}'],  # printed by click
            ["tools"],
            ["--help"],
            ["replay", "log.jsonl"],
            ["replay", "log.jsonl", "--json"],  # written at the end, in one piece
            ["transcript", "verify", "log.jsonl", "--json"],
        ],
    )
    def test_a_full_disk_is_an_error_line_not_a_traceback(
        self, tmp_path: Path, args: list[str], encoding: str
    ) -> None:
        """Standard output on a full device: one error line on stderr, exit 1, whatever
        the command and whether or not the streams' encoding holds all it prints."""
        log = tmp_path / "log.jsonl"
        assert run("--tool", "echo", "--tool-input", HELLO, "--log", str(log)).exit_code == 0
        with open("/dev/full", "wb") as full:
            proc = _console(args, tmp_path, encoding=encoding, stdout=full, stderr=PIPE)
        assert proc.stderr == FULL_DISK
        assert proc.returncode == 1

    @pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
    @pytest.mark.parametrize(
        ("args", "code"),
        [
            (["--tool", "echo", "--tool-input", HELLO], 0),
            (["--tool", "nope"], 1),
            (["--tool", "echo", "--tool-input", "{"], 2),
            (["--bogus"], 2),
            (["replay", "missing.jsonl"], 2),
            (["replay", "miss\u00e9.jsonl"], 2),  # an error line click must encode
        ],
    )
    def test_standard_error_on_a_full_disk_changes_no_exit_code(
        self, tmp_path: Path, args: list[str], code: int, encoding: str
    ) -> None:
        """What cannot be shown on standard error is dropped: the command does what it
        would have done, and exits as it would have."""
        with open("/dev/full", "wb") as full:
            proc = _console(args, tmp_path, encoding=encoding, stdout=PIPE, stderr=full)
        assert proc.returncode == code
        if code == 0:
            assert b"Manual tool dispatch completed." in proc.stdout

    def test_the_mcp_wire_on_a_full_disk(self, tmp_path: Path) -> None:
        """`mini-harness mcp` whose answers cannot be written ends with an error, exit 1."""
        hello = orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            }
        )
        with open("/dev/full", "w") as full:
            proc = subprocess.run(
                [sys.executable, "-m", "mini_harness", "mcp"],
                input=hello + b"\n",
                stdout=full,
                stderr=subprocess.PIPE,
                check=False,
                cwd=tmp_path,
                timeout=60,
            )
        assert proc.returncode == 1
        assert proc.stderr.decode().endswith(
            "[mini-harness] Error: MCP session failed: No space left on device\n"
        )
        assert b"Traceback" not in proc.stderr

    def test_a_closed_pipe_is_quiet(self, tmp_path: Path) -> None:
        """A reader that stops early (`| head -1`) gets no error line and no traceback."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log, fsync="never") as sink:
            runtime = ToolRuntime(default_registry(), sink)
            for _ in range(3000):  # a report far larger than a pipe's buffer
                runtime.dispatch("echo", {"text": "hello"})
        proc = subprocess.Popen(
            [sys.executable, "-m", "mini_harness", "replay", str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()
        stderr = proc.stderr.read()
        assert proc.wait() == 1
        assert stderr == b""


MYTOOLS = """
from mini_harness import ToolRegistry

registry = ToolRegistry()
registry.add(
    "add",
    lambda data: {"sum": data["a"] + data["b"]},
    description="Add two integers.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
"""


@pytest.fixture(name="mytools")
def _mytools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of the user's own tools in the current directory; its registry spec."""
    name = f"mytools_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MYTOOLS)
    (tmp_path / "broken_tools.py").write_text("import nothing_of_that_name\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:registry"


class TestRegistryOption:
    def test_dispatch_a_users_tool(self, mytools: str) -> None:
        """`--registry MODULE:ATTR --tool add` dispatches the user's own tool."""
        result = run("--registry", mytools, "--tool", "add", "--tool-input", '{"a":2,"b":3}')
        assert result.exit_code == 0, result.output
        assert '"output":{"sum":5}' in result.stdout

    def test_tools_lists_a_users_registry(self, mytools: str) -> None:
        """`tools --registry ... --format openai` lists the user's tools in OpenAI's shape."""
        result = run("tools", "--registry", mytools, "--format", "openai")
        assert result.exit_code == 0
        assert [t["function"]["name"] for t in orjson.loads(result.stdout)] == ["add"]

    @pytest.mark.parametrize("fmt", ["json", "mcp", "table"])
    def test_a_description_is_shown_escaped(self, mytools: str, tmp_path: Path, fmt: str) -> None:
        """A registry's description reaches the terminal escaped: a bidi override and a
        C1 control are written as escapes (the same JSON value), never as themselves."""
        name = mytools.partition(":")[0]
        module = tmp_path / f"{name}.py"
        module.write_text(
            module.read_text().replace(
                'description="Add two integers."',
                'description="Add \\u202etwo\\u009b2J integers."',
            )
        )
        result = run("tools", "--registry", mytools, "--format", fmt)
        assert result.exit_code == 0, result.output
        assert "\u202e" not in result.stdout
        assert "\u009b" not in result.stdout
        if fmt != "table":
            document = orjson.loads(result.stdout)
            (tool,) = document["tools"] if fmt == "mcp" else document
            assert tool["description"] == "Add \u202etwo\u009b2J integers."

    def test_a_module_that_fails_to_import_is_one_line(self, mytools: str) -> None:
        """Without --debug a registry module that cannot be imported is one error line."""
        result = run("--registry", "broken_tools:registry", "--tool", "add")
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: --registry broken_tools:registry: importing broken_tools "
            "failed: ModuleNotFoundError: No module named 'nothing_of_that_name'\n"
        )

    def test_debug_shows_the_traceback(self, mytools: str) -> None:
        """With --debug the import's traceback comes before the error line."""
        result = run("--debug", "--registry", "broken_tools:registry", "--tool", "add")
        assert result.exit_code == 2
        assert result.stderr.startswith("Traceback (most recent call last):\n")
        assert 'broken_tools.py", line 1' in result.stderr
        assert result.stderr.endswith(
            "[mini-harness] Error: --registry broken_tools:registry: importing broken_tools "
            "failed: ModuleNotFoundError: No module named 'nothing_of_that_name'\n"
        )

    def test_workspace_does_not_combine_with_registry(self, mytools: str) -> None:
        """--workspace configures the built-in tools, so it is refused with --registry."""
        result = run("--workspace", ".", "--registry", mytools, "--tool", "add")
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: --workspace applies to the built-in tools; it cannot be "
            "used with --registry\n"
        )


class TestOptionValues:
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--tool", "--tool-input", "{}"], "--tool requires a value"),
            (
                ["--tool", "echo", "--tool-input", "--context-report"],
                "--tool-input requires a value",
            ),
            (["--tool", ""], "--tool requires a value"),
            (["--tool=", "--tool-input", "{}"], "--tool requires a value"),
            (["--tool", "echo", "--log", "--fsync", "never"], "--log requires a value"),
        ],
    )
    def test_a_missing_value_is_named(self, args: list[str], message: str) -> None:
        """An option whose value was forgotten says so, instead of taking the next option."""
        result = run(*args)
        assert result.exit_code == 2
        assert result.stderr == f"[mini-harness] Error: {message}\n"
        assert result.stdout == ""

    @pytest.mark.parametrize("spelling", ["--log", "--transcript"])
    def test_the_option_typed_is_named(self, tmp_path: Path, spelling: str) -> None:
        """A log option without --tool is named as the user typed it."""
        result = run(spelling, str(tmp_path / "t.jsonl"))
        assert result.exit_code == 2
        assert (
            result.stderr.splitlines()[0] == f"[mini-harness] Error: {spelling} needs --tool NAME"
        )

    def test_repeated_tool_input_is_refused(self) -> None:
        """A second --tool-input is refused, not silently preferred to the first."""
        result = run("--tool", "echo", "--tool-input", HELLO, "--tool-input", '{"text":"x"}')
        assert result.exit_code == 2
        assert result.stderr == "[mini-harness] Error: --tool-input may be given only once\n"

    def test_log_and_its_alias_together_are_refused(self, tmp_path: Path) -> None:
        """--log and --transcript name one option: both at once is a repetition."""
        a, b = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
        result = run("--tool", "echo", "--tool-input", HELLO, "--log", a, "--transcript", b)
        assert result.exit_code == 2
        assert result.stderr == "[mini-harness] Error: --log may be given only once\n"
        assert not Path(a).exists()

    def test_repeated_replay_run_is_refused(self, tmp_path: Path) -> None:
        """`replay --run 1 --run 2` is refused rather than showing run 2 only."""
        log = tmp_path / "t.jsonl"
        assert run("--tool", "echo", "--tool-input", HELLO, "--log", str(log)).exit_code == 0
        result = run("replay", str(log), "--run", "1", "--run", "2")
        assert result.exit_code == 2
        assert result.stderr == "[mini-harness] Error: --run may be given only once\n"
        assert result.stdout == ""


def deep(levels: int) -> str:
    """`{"text":"x","n":[[...]]}`: nested `levels` deep counting the outer object."""
    return '{"text":"x","n":' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


class TestDeepInput:
    @pytest.mark.parametrize("levels", [101, 253, 254, 990, 1000, 1024, 1025, 5000])
    def test_input_nested_past_the_limit_is_one_clear_error(self, levels: int) -> None:
        """Valid JSON deeper than MAX_JSON_DEPTH is refused by the one documented limit,
        never as invalid JSON and never with a traceback."""
        result = run("--tool", "echo", "--tool-input", deep(levels))
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: --tool-input is nested deeper than 100 levels\n"
        )
        assert result.stdout == ""

    def test_input_at_the_limit_is_dispatched_logged_and_printed(self, tmp_path: Path) -> None:
        """100 levels (the limit) runs, is recorded, printed, and replays."""
        log = tmp_path / "t.jsonl"
        result = run("--tool", "echo", "--tool-input", deep(100), "--log", str(log))
        assert result.exit_code == 0, result.output
        assert "[" * 99 + "]" * 99 in result.stdout
        assert run("replay", str(log)).exit_code == 0

    def test_brackets_inside_strings_do_not_count(self) -> None:
        """Nesting counts arrays and objects, not brackets inside strings."""
        text = "[" * 500
        result = run("--tool", "echo", "--tool-input", orjson.dumps({"text": text}).decode())
        assert result.exit_code == 0
        assert text in result.stdout


class TestScriptOutput:
    def test_json_prints_one_document(self, tmp_path: Path) -> None:
        """--json prints the result (and where it was logged) as one JSON document."""
        log = tmp_path / "t.jsonl"
        result = run("--tool", "echo", "--tool-input", HELLO, "--json", "--log", str(log))
        assert result.exit_code == 0
        document = orjson.loads(result.stdout)
        run_id = orjson.loads(log.read_bytes().splitlines()[1])["runId"]
        assert document == {
            "ok": True,
            "name": "echo",
            "input": {"text": "hello"},
            "output": {"text": "hello"},
            "durationMs": document["durationMs"],
            "transcript": str(log),
            "runId": run_id,
        }

    def test_json_prints_the_failure(self, tmp_path: Path) -> None:
        """A failed call under --json is a document on stdout (nothing on stderr), exit 1;
        its error is the one ToolFailed records, the refused path and violations too."""
        log = tmp_path / "t.jsonl"
        result = run("--tool", "echo", "--tool-input", '{"text":1}', "--json", "--log", str(log))
        assert result.exit_code == 1
        assert result.stderr == ""
        (failed,) = [e for e in map(orjson.loads, log.read_bytes().splitlines()) if "error" in e]
        assert orjson.loads(result.stdout) == {
            "ok": False,
            "name": "echo",
            "error": {
                "kind": "invalid_input",
                "message": "Invalid input for echo.text: expected string",
                "path": "echo.text",
                "violations": [
                    {"path": "echo.text", "keyword": "type", "message": "expected string"}
                ],
            },
            "transcript": str(log),
            "runId": failed["runId"],
        }
        assert orjson.loads(result.stdout)["error"] == failed["error"]

    def test_json_does_not_combine_with_the_report(self) -> None:
        """--json and --context-report are two outputs: asking for both is a usage error."""
        result = run("--tool", "echo", "--json", "--context-report")
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: --json cannot be combined with --context-report\n"
        )

    def test_input_from_a_file(self, tmp_path: Path) -> None:
        """--tool-input @FILE reads the input from FILE."""
        (tmp_path / "in.json").write_text('{"text":"from a file"}')
        result = run("--tool", "echo", "--tool-input", f"@{tmp_path / 'in.json'}", "--json")
        assert orjson.loads(result.stdout)["output"] == {"text": "from a file"}

    def test_input_from_a_missing_file(self, tmp_path: Path) -> None:
        """A --tool-input @FILE that cannot be read is a usage error naming it."""
        missing = tmp_path / "no.json"
        result = run("--tool", "echo", "--tool-input", f"@{missing}")
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: --tool-input @{missing}: cannot read {missing}: "
            "No such file or directory\n"
        )

    def test_input_from_standard_input(self) -> None:
        """--tool-input - reads the input from standard input."""
        result = CliRunner().invoke(
            cli, ["--tool", "echo", "--tool-input", "-", "--json"], input='{"text":"piped"}'
        )
        assert result.exit_code == 0
        assert orjson.loads(result.stdout)["output"] == {"text": "piped"}


class TestRedactedOutput:
    def test_the_printed_result_is_redacted_too(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--redact-env and --redact-pattern keep secrets out of the printed result line."""
        monkeypatch.setenv("MY_TOKEN", "s3cret-value")
        log = tmp_path / "t.jsonl"
        text = "token s3cret-value and key sk-12345"
        args = ["--tool", "echo", "--tool-input", orjson.dumps({"text": text}).decode()]
        args += ["--log", str(log), "--redact-env", "MY_TOKEN", "--redact-pattern", r"sk-\d+"]
        result = run(*args)
        assert result.exit_code == 0
        assert "s3cret" not in result.stdout
        assert "sk-12345" not in result.stdout
        assert '"output":{"text":"token [REDACTED] and key [REDACTED]"}' in result.stdout
        document = run(*args, "--json").stdout
        assert "s3cret" not in document
        assert "sk-12345" not in document
        assert b"s3cret" not in log.read_bytes()


class TestReplayErrors:
    def test_a_missing_transcript_prints_nothing_on_stdout(self, tmp_path: Path) -> None:
        """`replay missing.jsonl` is one error line on stderr and nothing on stdout."""
        result = run("replay", str(tmp_path / "missing.jsonl"))
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr.startswith("[mini-harness] Error: ")


class TestGrammar:
    @pytest.mark.parametrize(
        ("schema", "value", "message"),
        [
            ({"type": "string", "minLength": 1}, "", "at least 1 character"),
            ({"type": "string", "maxLength": 1}, "ab", "at most 1 character"),
            ({"type": "array", "minItems": 1}, [], "at least 1 item"),
            ({"type": "array", "maxItems": 1}, [1, 2], "at most 1 item"),
            ({"type": "object", "minProperties": 1}, {}, "at least 1 property"),
            ({"type": "object", "maxProperties": 1}, {"a": 1, "b": 2}, "at most 1 property"),
            ({"type": "string", "minLength": 2}, "", "at least 2 characters"),
        ],
    )
    def test_validation_counts_agree_with_their_noun(
        self, schema: dict[str, Any], value: Any, message: str
    ) -> None:
        """'at least 1 character', never 'at least 1 characters'."""
        registry = default_registry()
        registry.add(
            "one",
            lambda data: data,
            description="Takes one value.",
            input_schema={"type": "object", "properties": {"v": schema}, "required": ["v"]},
        )
        with pytest.raises(ToolCallError) as caught:
            ToolRuntime(registry, NullSink()).dispatch("one", {"v": value})
        assert caught.value.message.endswith(message)

    def test_an_unknown_run_of_a_one_run_log(self, tmp_path: Path) -> None:
        """`replay --run 5` on a transcript of one run says 'it has 1 run'."""
        log = tmp_path / "t.jsonl"
        assert run("--tool", "echo", "--tool-input", HELLO, "--log", str(log)).exit_code == 0
        result = run("replay", str(log), "--run", "5")
        assert result.exit_code == 2
        assert "1 run" in result.stderr
        assert "1 runs" not in result.stderr

    def test_read_file_past_the_end_of_a_one_line_file(self, tmp_path: Path) -> None:
        """read_file's offset error counts '1 line'."""
        (tmp_path / "a.txt").write_text("one\n")
        result = run(
            "--workspace",
            str(tmp_path),
            "--tool",
            "read_file",
            "--tool-input",
            '{"path":"a.txt","offset":5}',
        )
        assert result.exit_code == 1
        assert result.stderr.endswith("(1 line)\n")
