"""`run_command`: a program run in the workspace, sandboxed by bubblewrap where it is present.

The command gets an argv (a shell only when `shell` is asked for), a working directory
inside the workspace, an environment built from an allow-list, no stdin, limits on
processes and memory, a timeout that ends everything it started, and bounded output (head
and tail kept). What the sandbox confines is said in `sandbox`; here it gets the workspace
writable and the agent's controls inside it read-only, with stand-ins for those missing
(`controls`).
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from mini_harness.errors import WorkspaceError
from mini_harness.events import JsonObject
from mini_harness.runtime.results import WithEffects
from mini_harness.tools.controls import Controls, controls
from mini_harness.tools.definitions import RUN_DEFAULT_TIMEOUT
from mini_harness.tools.file_effects import MAX_TRACKED_FILES, changes, snapshot
from mini_harness.tools.sandbox import (
    Bubblewrap,
    ResourceLimits,
    allowed_environment,
    placeholders,
    run_sandboxed,
)
from mini_harness.tools.workspace import Workspace


@attrs.frozen
class RunCommand:
    """The run_command handler, bound to one workspace."""

    workspace: Workspace
    sandbox: Bubblewrap | None  # None: commands run unsandboxed
    redacted_names: tuple[str, ...] = ()
    max_tracked_files: int = MAX_TRACKED_FILES
    limits: ResourceLimits = attrs.field(factory=ResourceLimits.default)

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
        env = allowed_environment(os.environ, self.redacted_names)
        root = str(self.workspace.root)
        guarded = controls(self.workspace) if self.sandbox is not None else Controls((), ())
        before = snapshot(root, self.max_tracked_files)
        try:
            with placeholders(guarded.missing) as stand_ins:
                finished = run_sandboxed(
                    self.sandbox,
                    argv,
                    workspace=root,
                    cwd=cwd,
                    env=env,
                    timeout=timeout,
                    writable=True,
                    read_only=(*guarded.existing, *stand_ins),
                    limits=self.limits,
                )
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
