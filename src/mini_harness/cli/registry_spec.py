"""`--registry module:attribute`: load a user's ToolRegistry, with errors that say why not."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

import click

from mini_harness.cli.options import F, SingleOption
from mini_harness.cli.output import describe
from mini_harness.errors import MiniHarnessError, RegistrySpecError, UsageError
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import Workspace, WorkspaceLike, default_registry, register_coding_tools


def registry_option(when: str | None = None) -> Callable[[F], F]:
    """The `--registry MODULE:ATTRIBUTE` option of every command that takes one (passed as
    `registry_spec`); `when` names the option it applies with, if any (`--rerun`)."""
    lead = f"With {when}: use" if when else "Use"
    return click.option(
        "--registry",
        "registry_spec",
        cls=SingleOption,
        metavar="MODULE:ATTRIBUTE",
        help=f"{lead} the tools of this ToolRegistry (or of a zero-argument callable "
        "returning one) instead of the built-in tools. The current directory is importable.",
    )


def chosen_registry(spec: str | None, workspace: WorkspaceLike | None) -> ToolRegistry:
    """The registry `--registry` names, else the built-in tools in `workspace`."""
    if spec is None:
        return default_registry(workspace)
    if workspace is not None:
        raise UsageError(
            "--workspace applies to the built-in tools; it cannot be used with --registry"
        )
    return registry_from(spec)


def agent_registry(
    workspace: WorkspaceLike | None,
    redacted_names: tuple[str, ...] = (),
    sandbox: bool | None = None,
) -> ToolRegistry:
    """The built-in tools an agent run gets: echo, the file tools and the coding tools
    (git_status, git_diff, apply_patch, run_command), in `workspace` (default: the cwd; a
    Workspace with `protected` files keeps the run's transcripts out of the tools' reach
    for writing). `sandbox` True requires bubblewrap (WorkspaceError without it). A re-run
    of an agent's transcript finds the same tools here."""
    if isinstance(workspace, Workspace):
        bound = workspace
    else:
        bound = Workspace.current() if workspace is None else Workspace(workspace)
    registry = default_registry(bound)
    register_coding_tools(registry, bound, redacted_names=redacted_names, sandbox=sandbox)
    return registry


def complete_tool_name(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Shell completion of `--tool NAME`: the built-in tools (a `--registry` module is not
    imported to complete a word)."""
    from click.shell_completion import CompletionItem

    tools = agent_registry(None).list()
    return [
        CompletionItem(tool.name, help=tool.description.partition("\n")[0])
        for tool in tools
        if tool.name.startswith(incomplete)
    ]


def agent_tools(
    spec: str | None,
    workspace: WorkspaceLike | None,
    redacted_names: tuple[str, ...] = (),
    sandbox: bool | None = None,
) -> ToolRegistry:
    """The tools of an agent run (`run`, `resume`, `fork`): the registry `--registry`
    names, else the built-in tools with the coding tools, which the approval policy stands
    in front of (see agent_registry)."""
    if spec is None:
        return agent_registry(workspace, redacted_names, sandbox)
    return chosen_registry(spec, workspace)


def registry_from(spec: str) -> ToolRegistry:
    """`load_registry` for a command: with the root's --debug, the user's traceback
    (an import or a factory that failed) is printed before the one-line error."""
    try:
        return load_registry(spec)
    except RegistrySpecError as exc:
        root = click.get_current_context(silent=True)
        debug = root is not None and (root.find_root().obj or {}).get("debug")
        if debug and exc.__cause__ is not None:
            import traceback

            traceback.print_exception(exc.__cause__, file=sys.stderr)
        raise


def load_registry(spec: str) -> ToolRegistry:
    """Import `module:attribute` and return the registry it names; RegistrySpecError if not."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise RegistrySpecError(spec, f"--registry must look like module:attribute (got {spec!r})")
    # Console scripts put their own directory on sys.path, not the working directory;
    # users expect `--registry mytools:registry` to find ./mytools.py, as `python -m` would.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    where = f"--registry {spec}"
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # whatever the user's module raises on import
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing is not None and (
            missing == module_name or module_name.startswith(f"{missing}.")
        ):
            raise RegistrySpecError(spec, f"{where}: no module named {module_name!r}") from None
        raise RegistrySpecError(
            spec, f"{where}: importing {module_name} failed: {describe(exc)}"
        ) from exc

    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise RegistrySpecError(
                spec, f"{where}: {module_name} has no attribute {attribute!r}"
            ) from None

    if isinstance(target, ToolRegistry):
        return target
    if not callable(target):
        raise RegistrySpecError(
            spec,
            f"{where}: expected a ToolRegistry or a callable returning one, "
            f"got {type(target).__name__}",
        )
    try:
        result = target()
    except MiniHarnessError as exc:
        # e.g. a RegistrationError: our own message already says what is wrong.
        raise RegistrySpecError(spec, f"{where}: {exc.message}") from None
    except Exception as exc:  # the factory is user code
        raise RegistrySpecError(
            spec, f"{where}: calling {attribute}() failed: {describe(exc)}"
        ) from exc
    if not isinstance(result, ToolRegistry):
        raise RegistrySpecError(
            spec, f"{where}: {attribute}() returned {type(result).__name__}, not a ToolRegistry"
        )
    return result
