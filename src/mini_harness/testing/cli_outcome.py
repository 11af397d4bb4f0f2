"""Running the mini-harness CLI (or another click command) and rendering what it did as one
golden text."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence

import attrs
import click
from click.testing import CliRunner


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


def invoke(
    command: click.Command,
    args: Sequence[str],
    *,
    prog: str,
    input: str | None = None,
    env: Mapping[str, str | None] | None = None,
) -> CliOutcome:
    """Run `command` with CliRunner; an unexpected exception propagates with its traceback.

    COLUMNS is 80 unless `env` says otherwise, so that help text wraps the same everywhere.
    """
    result = CliRunner().invoke(
        command,
        list(args),
        input=input,
        env={"COLUMNS": "80", **(env or {})},
        catch_exceptions=False,
        prog_name=prog,
    )
    return CliOutcome(
        prog=prog,
        args=tuple(args),
        stdout=result.stdout,
        stderr=result.stderr,
        exit_code=result.exit_code,
    )


_RUN_AT_80_COLUMNS = """
import runpy, sys
import click.formatting
click.formatting.FORCED_WIDTH = 80
sys.argv[0] = "mini-harness"
runpy.run_module("mini_harness", run_name="__main__", alter_sys=True)
"""


def run_process(
    args: Sequence[str],
    *,
    prog: str,
    input: str | None = None,
    env: Mapping[str, str | None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> CliOutcome:
    """Run `python -m mini_harness ARGS` in a child process, as a user's shell would.

    The child sees this process's import path (so `--registry` can name a module the tests
    import) and UTF-8 streams, and wraps help text at 80 columns whatever the terminal, as
    `invoke` does; `env` adds to that (None removes a variable).
    """
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
    return CliOutcome(
        prog=prog,
        args=tuple(args),
        stdout=done.stdout.decode("utf-8", errors="replace"),
        stderr=done.stderr.decode("utf-8", errors="replace"),
        exit_code=done.returncode,
    )
