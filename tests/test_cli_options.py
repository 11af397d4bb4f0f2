"""Options declared once: every command that takes an option takes it the same way (one
decorator in cli/options.py and its neighbours), with the same checks."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mini_harness.cli import cli

SHARED = (
    "--step",
    "--run",
    "--json",
    "--context-report",
    "--max-steps",
    "--rerun",
    "--allow-side-effects",
    "--allow-unverified",
    "--registry",
    "--workspace",
    "--log",
    "--model",
    "--approve",
)
"""Options more than one command takes."""


def commands() -> dict[str, click.Command]:
    """Every command by its path (`transcript verify`), the root's own included."""
    ctx = cli.make_context("mini-harness", [], resilient_parsing=True)
    found: dict[str, click.Command] = {"": cli}
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        found[name] = command
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                inner = command.get_command(ctx, sub)
                assert inner is not None
                found[f"{name} {sub}"] = inner
    return found


def declaration(option: click.Option) -> tuple[object, ...]:
    """How an option is taken, all but its help text (which says what it does there)."""
    return (
        type(option).__name__,
        option.name,
        option.metavar,
        repr(option.type.to_info_dict()),
        option.is_flag,
        option.multiple,
        tuple(option.opts),
    )


class TestOneDeclaration:
    @pytest.mark.parametrize("spelling", SHARED)
    def test_every_command_takes_it_alike(self, spelling: str) -> None:
        """An option several commands take is declared the same way in each of them."""
        found = {
            path: declaration(param)
            for path, command in commands().items()
            for param in command.params
            if isinstance(param, click.Option) and spelling in param.opts
        }
        assert len(found) > 1, found
        assert len(set(found.values())) == 1, found

    @pytest.mark.parametrize(
        "args",
        [
            ["show", "{log}", "--step", "1", "--step", "2"],
            ["replay", "{log}", "--context-report", "--step", "1", "--step", "2"],
            ["run", "t", "--max-steps", "1", "--max-steps", "2"],
            ["resume", "{log}", "--max-steps", "1", "--max-steps", "2"],
        ],
    )
    def test_given_twice_is_refused_everywhere(self, args: list[str], tmp_path: Path) -> None:
        """A one-value option given twice is a usage error in every command, never the last
        value silently winning."""
        log = tmp_path / "t.jsonl"
        echo = ["--tool", "echo", "--tool-input", '{"text":"a"}', "--log", str(log)]
        assert CliRunner().invoke(cli, echo).exit_code == 0
        result = CliRunner().invoke(cli, [arg.format(log=log) for arg in args])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"[mini-harness] Error: {args[-2]} may be given only once")

    @pytest.mark.parametrize(
        ("args", "why"),
        [
            (["--tool", "echo", "--tool-input", '{"text":"a"}', "--fsync", "always"],
             "needs --log PATH"),
            (["mcp", "--fsync", "always"], "needs --log PATH"),
            (["run", "t", "--no-log", "--fsync", "always"],
             "cannot be combined with --no-log: nothing is recorded"),
            (["run", "t", "--no-log", "--max-event-bytes", "4096"],
             "cannot be combined with --no-log: nothing is recorded"),
        ],
    )  # fmt: skip
    def test_log_flags_need_a_log(self, args: list[str], why: str) -> None:
        """The flags that shape only the log file, given where nothing is recorded, are the
        same usage error for every command (run --no-log included, which let them pass)."""
        result = CliRunner().invoke(cli, args, input="")
        assert result.exit_code == 2, result.output
        assert result.stderr == f"[mini-harness] Error: {args[-2]} {why}\n"
        assert result.stdout == ""

    def test_redaction_stands_without_a_log(self, tmp_path: Path) -> None:
        """--redact-env also redacts what a command prints, so it is taken without --log."""
        result = CliRunner().invoke(
            cli,
            ["--tool", "echo", "--tool-input", '{"text":"tok-42"}', "--redact-env", "TOKEN"],
            env={"TOKEN": "tok-42"},
        )
        assert result.exit_code == 0, result.output
        assert '{"text":"[REDACTED]"}' in result.stdout
        assert "tok-42" not in result.output
