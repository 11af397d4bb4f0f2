"""Options declared once for every command that takes them, and the rules of their values:
an option that takes one value is given once, with a value, and named as the user typed
it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import attrs
import click
from click.core import ParameterSource

from mini_harness.errors import UsageError

_SPELLINGS = "mini_harness.spellings"
F = TypeVar("F", bound=Callable[..., Any])


class SingleOption(click.Option):
    """An option taking one value, refused when repeated or when its value is missing.

    Each spelling (`--log`, `--transcript`) goes to the parser on its own, so that a
    repeated option is noticed instead of the last value silently winning, and messages
    can name the spelling the user typed. A value that is empty or is itself one of the
    command's options (`--tool --tool-input '{}'`) means the value was forgotten, unless
    `empty_ok` lets the command answer an empty value itself (`replay --run ''` lists the
    runs there are).
    """

    def __init__(self, *args: Any, empty_ok: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.empty_ok = empty_ok

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        for spelling in self.opts:
            parser.add_option(
                obj=self, opts=[spelling], dest=_dest(self, spelling), action="append"
            )

    def handle_parse_result(
        self, ctx: click.Context, opts: Mapping[str, Any], args: list[str]
    ) -> tuple[Any, list[str]]:
        given = [(s, v) for s in self.opts for v in opts.get(_dest(self, s)) or ()]
        if given and not ctx.resilient_parsing:
            spelling, value = given[0]
            if len(given) > 1:
                raise UsageError(f"{spelling} may be given only once")
            if (value == "" and not self.empty_ok) or value in _option_names(ctx):
                raise UsageError(f"{spelling} requires a value")
            ctx.meta.setdefault(_SPELLINGS, {})[ctx.command.name, self.name] = spelling
            opts = {**opts, str(self.name): value}
        return super().handle_parse_result(ctx, opts, args)


def option_group(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator that adds these options to a command, in this order."""

    def add(command: F) -> F:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return add


def gathered(cls: type[Any], keyword: str, *decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Options whose values the command gets as one typed value: the `decorators` add them
    (each named as a field of the attrs class `cls`), and the command is called with
    `keyword=cls(...)` in their place. A field the command declares elsewhere (beside
    these options) is gathered too; one it does not declare keeps its default."""
    fields = [field.name for field in attrs.fields(cls)]

    def add(command: F) -> F:
        @functools.wraps(command)
        def call(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in fields if name in kwargs}
            return command(*args, **{keyword: cls(**values)}, **kwargs)

        return option_group(*decorators)(call)  # type: ignore[arg-type]

    return add


def given_options(ctx: click.Context, names: Iterable[str] | None = None) -> list[str]:
    """The options among `names` (default: all the command's) the user gave, as typed, in
    the order the command declares them."""
    wanted = None if names is None else set(names)
    return [
        typed(ctx, str(param.name))
        for param in ctx.command.params
        if isinstance(param, click.Option)
        and (wanted is None or param.name in wanted)
        and ctx.get_parameter_source(str(param.name)) is ParameterSource.COMMANDLINE
    ]


def root_workspace() -> str | None:
    """The root's --workspace (`mini-harness --workspace DIR SUBCOMMAND`), if it was given."""
    workspace: str | None = (click.get_current_context().find_root().obj or {}).get("workspace")
    return workspace


def workspace_option(help_text: str, **settings: Any) -> Callable[[F], F]:
    """The `--workspace DIR` option: an existing directory the built-in tools work in."""
    return click.option(
        "--workspace",
        cls=SingleOption,
        metavar="DIR",
        type=click.Path(exists=True, file_okay=False),
        help=help_text,
        **settings,
    )


def typed(ctx: click.Context, name: str) -> str:
    """The spelling of option `name` the user typed (its first one if it was not given)."""
    spelling = ctx.meta.get(_SPELLINGS, {}).get((ctx.command.name, name))
    if spelling is None:
        (spelling,) = [p.opts[0] for p in ctx.command.params if p.name == name]
    return str(spelling)


def _dest(option: click.Option, spelling: str) -> str:
    return f"{option.name}\0{spelling}"


def _option_names(ctx: click.Context) -> set[str]:
    names = set(ctx.help_option_names)
    for param in ctx.command.params:
        if isinstance(param, click.Option):
            names.update(param.opts, param.secondary_opts)
    return names


def run_option(default: str, **settings: Any) -> Callable[[F], F]:
    """The `--run ID|INDEX` option of every command that picks one run of a transcript;
    `default` says what is picked without it (the rule is replay/history/select.py's)."""
    return click.option(
        "--run",
        "run",
        cls=SingleOption,
        metavar="ID|INDEX",
        help="The run: its 1-based index in the transcript, or its id or a prefix of the id "
        f"that no other run shares. Default: {default}.",
        **settings,
    )


STEP_HELP = (
    "N counts an agent run's model requests from 1; a step no run made is an error naming "
    "the steps there are."
)
"""What every `--step N` takes, said the same way in every command."""


APPROVE_HELP = (
    "How calls that need approval are decided: ask (prompt on a terminal; denied without "
    "one), auto (allow them), never (deny them). Deny rules of .mini-harness/policy.toml "
    "always stand; read-only tools are allowed."
)

RERUN_APPROVE_HELP = (
    "With --rerun: how the calls a re-run would run again are decided by today's "
    ".mini-harness/policy.toml (of the workspace they run in, else the current directory): "
    "auto allows what asks; ask (the default) and never deny it, as a re-run never prompts. "
    "Deny rules always stand; read-only tools are allowed; a call recorded as denied never "
    "runs again."
)


def approve_option(func: F, help_text: str = APPROVE_HELP, default: str | None = "ask") -> F:
    """The `--approve auto|ask|never` option, passed as `approve`; None by `default` when
    the settings decide (an agent run's: cli/settings.py)."""
    return click.option(
        "--approve",
        "approve",
        type=click.Choice(["auto", "ask", "never"]),
        default=default,
        show_default=default is not None,
        help=help_text,
    )(func)


def number_option(
    *names: str, help_text: str, minimum: int = 1, **settings: Any
) -> Callable[[F], F]:
    """An option that takes one whole number N, at least `minimum` (None when not given,
    unless `settings` make it required)."""
    return click.option(
        *names,
        cls=SingleOption,
        type=click.IntRange(min=minimum),
        metavar="N",
        help=help_text,
        **settings,
    )


def step_option(what: str) -> Callable[[F], F]:
    """The `--step N` option of every command that picks one step of agent runs (passed as
    `step`); `what` says what it does there. Its meaning and range are the same everywhere."""
    return number_option("--step", help_text=f"{what} {STEP_HELP}")


def json_option(what: str) -> Callable[[F], F]:
    """The `--json` flag (passed as `as_json`); `what` says what is printed instead."""
    return click.option("--json", "as_json", is_flag=True, help=what)


def context_report_option(what: str) -> Callable[[F], F]:
    """The `--context-report` flag (the Context Explorer report); `what` says of what."""
    return click.option("--context-report", is_flag=True, help=what)


def max_steps_option(default: str) -> Callable[[F], F]:
    """The `--max-steps N` option of every command that runs the agent (None when not
    given); `default` says how many without it."""
    return number_option("--max-steps", help_text=f"At most N model requests (default: {default}).")


def side_effects_option(when: str) -> Callable[[F], F]:
    """The `--allow-side-effects` flag of what runs recorded calls again; `when` names the
    option it applies with."""
    return click.option(
        "--allow-side-effects",
        is_flag=True,
        help=f"With {when}: also run tools not marked readOnlyHint or idempotentHint.",
    )


def refuse_without(ctx: click.Context, names: Iterable[str], needed: str, *, given: bool) -> None:
    """The options among `names` apply only with `needed` (an option, or what it asks for:
    `--tool NAME`); unless it is `given`, the first of them the user gave is a usage error
    (`--registry needs --rerun`)."""
    if not given:
        for spelling in given_options(ctx, names):
            raise UsageError(f"{spelling} needs {needed}")
