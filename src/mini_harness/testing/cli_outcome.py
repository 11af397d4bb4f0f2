"""Running a click command in-process and rendering what it did as one golden text."""

from __future__ import annotations

import shlex
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
