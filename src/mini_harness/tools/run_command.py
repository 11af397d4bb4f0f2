"""`run_command`: a program run in the workspace, sandboxed by bubblewrap where it is present.

The command gets an argv (a shell only when `shell` is asked for), a working directory
inside the workspace, a scrubbed environment, no stdin, a timeout that kills its whole
process group, and bounded output (head and tail kept). Under bubblewrap the workspace is
the only writable place besides a private /tmp, the rest of the system is read-only, and
there is no network.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from mini_harness.errors import WorkspaceError
from mini_harness.events import JsonObject
from mini_harness.runtime.results import WithEffects
from mini_harness.tools.definitions import RUN_DEFAULT_TIMEOUT
from mini_harness.tools.file_effects import MAX_TRACKED_FILES, changes, snapshot
from mini_harness.tools.process import run_bounded
from mini_harness.tools.workspace import Workspace

# Variables that look like credentials never reach a command, whatever the settings say.
SECRET_NAME = re.compile(
    r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY)", re.IGNORECASE
)


@functools.cache
def bubblewrap() -> str | None:
    """The bwrap program when it is installed and can make a sandbox here, else None."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    probe = [found, "--ro-bind", "/", "/", "--unshare-net", "--die-with-parent", "true"]
    try:
        finished = run_bounded(probe, cwd="/", env=os.environ, timeout=10)
    except OSError:
        return None
    return found if finished.exit_code == 0 else None


def sandbox_argv(
    bwrap: str, workspace: Workspace, cwd: str, argv: list[str], scratch: str
) -> list[str]:
    """argv wrapped in bubblewrap: everything read-only (so programs installed anywhere,
    /tmp included, still run), the workspace and a private scratch directory (the
    command's TMPDIR) writable, no network."""
    root = str(workspace.root)
    return [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--bind", scratch, scratch,
        "--setenv", "TMPDIR", scratch,
        "--bind", root, root,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--new-session",
        "--die-with-parent",
        "--chdir", cwd,
        "--",
        *argv,
    ]  # fmt: skip


def scrubbed_environment(
    environ: Mapping[str, str], redacted_names: Iterable[str] = ()
) -> dict[str, str]:
    """The caller's environment without redacted variables or anything named like a secret."""
    dropped = set(redacted_names)
    return {
        name: value
        for name, value in environ.items()
        if name not in dropped and not SECRET_NAME.search(name)
    }


@attrs.frozen
class RunCommand:
    """The run_command handler, bound to one workspace."""

    workspace: Workspace
    sandbox: str | None  # the bwrap program, or None: commands run unsandboxed
    redacted_names: tuple[str, ...] = ()
    max_tracked_files: int = MAX_TRACKED_FILES

    def __call__(self, tool_input: dict[str, Any]) -> JsonObject | WithEffects:
        argv: list[str] = list(tool_input["argv"])
        if tool_input.get("shell", False):
            if len(argv) != 1:
                raise WorkspaceError(
                    ".", "With shell: true, argv must hold exactly one string: the shell command"
                )
            argv = ["/bin/sh", "-c", argv[0]]
        if any("\0" in arg for arg in argv):
            raise WorkspaceError(".", "argv holds a NUL byte")
        cwd = self.workspace.locate_dir(tool_input.get("cwd", ".")).real
        timeout = float(tool_input.get("timeout", RUN_DEFAULT_TIMEOUT))
        env = scrubbed_environment(os.environ, self.redacted_names)
        root = str(self.workspace.root)
        before = snapshot(root, self.max_tracked_files)
        with tempfile.TemporaryDirectory(prefix="mini-harness-command-") as scratch:
            command = argv
            if self.sandbox is not None:
                command = sandbox_argv(self.sandbox, self.workspace, cwd, argv, scratch)
            try:
                finished = run_bounded(command, cwd=cwd, env=env, timeout=timeout)
            except OSError as exc:
                message = f"Cannot run {argv[0]!r}: {exc.strerror or exc}"
                raise WorkspaceError(".", message) from None
        output: JsonObject = {
            "exitCode": finished.exit_code,
            "stdout": finished.stdout.text(),
            "stderr": finished.stderr.text(),
            "truncated": finished.stdout.truncated or finished.stderr.truncated,
            "timedOut": finished.timed_out,
            "sandboxed": self.sandbox is not None,
            "effectsTracked": before is not None,
        }
        effects = changes(root, before) if before is not None else ()
        return WithEffects(output, effects) if effects else output
