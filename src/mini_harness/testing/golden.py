"""The `golden` fixture's object: record or run (a runtime, or the CLI with its output
rendered as one text), normalize, compare with a file, update."""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import click
import pytest
from click.testing import CliRunner

from mini_harness.errors import ToolCallError
from mini_harness.events import JsonValue
from mini_harness.runtime import MemorySink, ToolRegistry, ToolResult, ToolRuntime
from mini_harness.testing.normalize import Normalization, mask_prev
from mini_harness.testing.plugin import UPDATE_FLAG
from mini_harness.transcripts import JsonlTranscript, encode_line


@attrs.frozen
class CliOutcome:
    """What a command printed and how it exited."""

    prog: str
    args: tuple[str, ...]
    stdout: str
    stderr: str
    exit_code: int

    def render(self) -> str:
        """The command line, stdout, stderr and exit code as one text; streams kept exact."""
        parts = [f"$ {shlex.join((self.prog, *self.args))}\n"]
        for label, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            if not text:
                parts.append(f"--- {label} (empty)\n")
            elif text.endswith("\n"):
                parts.append(f"--- {label}\n{text}")
            else:
                parts.append(f"--- {label} (no newline at end)\n{text}\n")
        parts.append(f"--- exit code {self.exit_code}\n")
        return "".join(parts)


_RUN_AT_80_COLUMNS = """
import runpy, sys
import click.formatting
click.formatting.FORCED_WIDTH = 80
sys.argv[0] = "mini-harness"
runpy.run_module("mini_harness", run_name="__main__", alter_sys=True)
"""


@attrs.define
class GoldenSession:
    """Per pytest run: whether goldens may be written, and what was written.

    The claims are a directory every process of the run shares (pytest-xdist's workers
    are given the controller's, `shared_claims`): one file per golden checked, naming the
    test that checked it first, so that two tests checking one golden file are caught
    whichever worker runs each. It is made when first needed, and removed by `close` in
    the process that made it."""

    update: bool
    ci: bool
    root: Path
    shared_claims: Path | None = None
    created: list[Path] = attrs.Factory(list)
    updated: list[Path] = attrs.Factory(list)
    _own_claims: Path | None = None

    def claims(self) -> Path:
        """The run's claims directory (made by the first process that needs it)."""
        if self.shared_claims is not None:
            return self.shared_claims
        if self._own_claims is None:
            self._own_claims = Path(tempfile.mkdtemp(prefix="mini-harness-goldens-"))
        return self._own_claims

    def close(self) -> None:
        """Remove the claims directory this process made, if it made one."""
        if self._own_claims is not None:
            shutil.rmtree(self._own_claims, ignore_errors=True)
            self._own_claims = None

    def show(self, path: Path) -> str:
        """A path relative to the rootdir when it is inside it."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def claim(self, path: Path, nodeid: str, mine: set[Path]) -> None:
        """Refuse a second check of one golden file, which would overwrite the first: twice
        in one test (`mine`: the files this run of the test checked) or by two tests."""
        owner = self._owner(path, nodeid)
        if path in mine:
            why = f"twice in {nodeid}: give the second check its own name="
        elif owner != nodeid:
            why = f"by {owner} and by {nodeid}: give one of the checks its own name="
        else:
            mine.add(path)
            return
        pytest.fail(f"golden file {self.show(path)} is checked {why}", pytrace=False)

    def _owner(self, path: Path, nodeid: str) -> str:
        """The test that checked `path` first in this run, `nodeid` if none did: the claim
        file is made whole and linked into place, which only one process can do."""
        key = hashlib.sha256(os.fsencode(path.resolve())).hexdigest()
        claims = self.claims()
        claim = claims / key
        draft = claims / f"{key}.{os.getpid()}.{threading.get_ident()}"
        draft.write_text(nodeid, encoding="utf-8")
        try:
            os.link(draft, claim)
        except FileExistsError:
            return claim.read_text(encoding="utf-8")
        finally:
            draft.unlink()
        return nodeid

    def written(self) -> dict[str, list[str]]:
        """What this process created and updated, to be told to the process that reports
        (pytest-xdist's controller)."""
        return {
            "created": [str(path) for path in self.created],
            "updated": [str(path) for path in self.updated],
        }

    def add_written(self, written: dict[str, list[str]]) -> None:
        """Take in what a worker created and updated (see `written`)."""
        self.created.extend(Path(path) for path in written.get("created", []))
        self.updated.extend(Path(path) for path in written.get("updated", []))


class GoldenRuntime(ToolRuntime):
    """A ToolRuntime whose events go to the test's golden transcript."""

    async def attempt_async(self, name: str, tool_input: JsonValue) -> ToolResult | ToolCallError:
        """`attempt` from inside an event loop."""
        try:
            return await self.dispatch_async(name, tool_input)
        except ToolCallError as exc:
            return exc


def golden_base_name(node_name: str, class_name: str | None) -> str:
    """A file name for a test: `Class.test_name-param`, only characters safe everywhere."""
    name = f"{class_name}.{node_name}" if class_name else node_name
    name = name.replace("[", "-").replace("]", "")
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)
    if len(name) > 100:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[:90]}-{digest}"
    return name


@attrs.define(kw_only=True, repr=False)
class Golden:
    """Compare what a test produced with golden files in `directory`.

    Files are `<directory>/<base_name>[.<name>].<ext>`: `.txt` for text and CLI output,
    `.jsonl` for transcripts. `normalization` may be replaced or extended per test.
    """

    session: GoldenSession
    directory: Path
    base_name: str
    nodeid: str
    tmp_path: Path
    normalization: Normalization
    command: click.Command | None = None
    _log: JsonlTranscript | None = attrs.field(default=None, init=False)
    _claimed: set[Path] = attrs.field(factory=set, init=False)

    @property
    def transcript_path(self) -> Path:
        return self.tmp_path / "golden-transcript.jsonl"

    def __repr__(self) -> str:
        return f"<Golden({self.session.show(self.path('txt'))!r})>"

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    # --- extending the normalization ----------------------------------------------

    def scrub(self, pattern: str | re.Pattern[str], replacement: str) -> None:
        """For this test: replace a regular expression in text and transcript strings."""
        self.normalization = self.normalization.with_scrub(pattern, replacement)

    def volatile_field(
        self, key: str, placeholder: str | None = None, *, numbered: bool = False
    ) -> None:
        """For this test: replace the value of `key` anywhere in transcript lines."""
        self.normalization = self.normalization.with_field(key, placeholder, numbered=numbered)

    # --- producing output -----------------------------------------------------------

    def runtime(self, registry: ToolRegistry, **kwargs: Any) -> GoldenRuntime:
        """A new run against `registry`, appended to this test's transcript."""
        if self._log is None:
            self._log = JsonlTranscript(self.transcript_path)
        return GoldenRuntime(registry, self._log, **kwargs)

    def cli(
        self,
        *args: str,
        command: click.Command | None = None,
        prog: str = "mini-harness",
        input: str | None = None,
        env: Mapping[str, str | None] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> CliOutcome:
        """Run a click `command` (default: the `golden_command` fixture's) in-process with
        click's CliRunner, or else the mini-harness CLI in a child process.

        In-process, an unexpected exception propagates with its traceback. The child
        (`python -m mini_harness ARGS`, as a user's shell would run it) sees this process's
        import path (so `--registry` can name a module the tests import) and UTF-8 streams.
        Either way help text wraps at 80 columns whatever the terminal; `env` adds to the
        environment (None removes a variable).
        """
        command = command or self.command
        if command is not None:
            result = CliRunner().invoke(
                command,
                list(args),
                input=input,
                env={"COLUMNS": "80", **(env or {})},
                catch_exceptions=False,
                prog_name=prog,
            )
            return CliOutcome(prog, args, result.stdout, result.stderr, result.exit_code)
        child_env = dict(os.environ)
        child_env.update(
            PYTHONIOENCODING="utf-8",
            PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
        )
        for key, value in (env or {}).items():
            if value is None:
                child_env.pop(key, None)
            else:
                child_env[key] = value
        done = subprocess.run(  # noqa: S603 - our own interpreter and module, no shell
            [sys.executable, "-c", _RUN_AT_80_COLUMNS, *args],
            input=(input or "").encode(),
            capture_output=True,
            env=child_env,
            cwd=cwd,
            check=False,
        )
        stdout, stderr = (
            out.decode("utf-8", errors="replace") for out in (done.stdout, done.stderr)
        )
        return CliOutcome(prog, args, stdout, stderr, done.returncode)

    # --- checking -------------------------------------------------------------------

    def path(self, ext: str, name: str | None = None) -> Path:
        """Where the golden file of this test (and check `name`) lives."""
        stem = f"{self.base_name}.{name}" if name else self.base_name
        return self.directory / f"{stem}.{ext}"

    def check_text(self, text: str, *, name: str | None = None) -> None:
        """Compare normalized text with `<base>[.name].txt`."""
        __tracebackhide__ = True
        self._compare(self.path("txt", name), self.normalization.text(text), transcript=False)

    def check_cli(
        self,
        *args: str,
        name: str | None = None,
        command: click.Command | None = None,
        prog: str = "mini-harness",
        input: str | None = None,
        env: Mapping[str, str | None] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> CliOutcome:
        """Run the CLI as `cli` does and compare its rendered output (command, streams, exit
        code) with `<base>[.name].txt`."""
        __tracebackhide__ = True
        outcome = self.cli(*args, command=command, prog=prog, input=input, env=env, cwd=cwd)
        self.check_text(outcome.render(), name=name)
        return outcome

    def check_transcript(
        self,
        source: str | os.PathLike[str] | MemorySink | None = None,
        *,
        name: str | None = None,
    ) -> None:
        """Compare a normalized transcript with `<base>[.name].jsonl`.

        `source` is a JSONL file (e.g. a CLI `--log`), a MemorySink, or by default the
        transcript of this test's `runtime()` runs.
        """
        __tracebackhide__ = True
        if source is None:
            if self._log is None:
                pytest.fail("check_transcript(): no golden.runtime() was used in this test")
            data = self.transcript_path.read_bytes()
        elif isinstance(source, MemorySink):
            data = _memory_bytes(source)
        else:
            data = Path(source).read_bytes()
        normalized = self.normalization.transcript(data).decode()
        self._compare(self.path("jsonl", name), normalized, transcript=True)

    def _compare(self, path: Path, obtained: str, *, transcript: bool) -> None:
        __tracebackhide__ = True
        session = self.session
        session.claim(path, self.nodeid, self._claimed)
        obtained_path = path.with_name(path.name + ".obtained")
        expected = path.read_text(encoding="utf-8") if path.exists() else None
        if expected == obtained:
            obtained_path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        if session.update and not session.ci:  # goldens are never written in CI
            path.write_text(obtained, encoding="utf-8", newline="")
            obtained_path.unlink(missing_ok=True)
            (session.created if expected is None else session.updated).append(path)
            return
        obtained_path.write_text(obtained, encoding="utf-8", newline="")
        shown, shown_obtained = session.show(path), session.show(obtained_path)
        if expected is None:
            message = f"golden file {shown} is missing; this run's output is in {shown_obtained}."
        else:
            message = (
                f"output differs from golden file {shown} (- golden, + obtained):\n"
                f"{_diff(expected, obtained, transcript=transcript)}"
                f"The whole output is in {shown_obtained}."
            )
        pytest.fail(f"{message}\n{self._how_to_update(missing=expected is None)}", pytrace=False)

    def _how_to_update(self, *, missing: bool) -> str:
        if self.session.ci:
            ignored = f" ({UPDATE_FLAG} was ignored)" if self.session.update else ""
            return (
                f"CI is set, so goldens are never written here{ignored}: run "
                f"`pytest {UPDATE_FLAG}` locally and commit the goldens."
            )
        if missing:
            return f"Run `pytest {UPDATE_FLAG}` to create it."
        return f"If the change is intended, run `pytest {UPDATE_FLAG}` to accept it."


def _diff(expected: str, obtained: str, *, transcript: bool) -> str:
    old, new = expected.splitlines(), obtained.splitlines()
    note = ""
    if transcript:
        old, new = mask_prev(old), mask_prev(new)
        if old == new:
            return (
                "  (only the prev hashes differ: the golden was edited by hand and its chain "
                "no longer verifies)\n"
            )
        note = "  (prev hashes are shown as … in this diff)\n"
    lines = difflib.unified_diff(old, new, "golden", "obtained", lineterm="")
    body = "\n".join(lines)
    if not body:  # only line endings or a final newline differ
        body = f"  (only whitespace at line ends differs: {expected[-20:]!r} vs {obtained[-20:]!r})"
    return f"{note}{body}\n"


def _memory_bytes(sink: MemorySink) -> bytes:
    """A MemorySink's events as JSONL lines (without `prev`: normalization chains them)."""
    events = enumerate(sink.events)
    return b"".join(encode_line(event, seq, None) + b"\n" for seq, event in events)
