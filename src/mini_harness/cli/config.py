"""`mini-harness config`: the effective settings, and where each came from."""

from __future__ import annotations

import click

from mini_harness.cli.options import json_option, root_workspace, workspace_option
from mini_harness.cli.output import echo_json, info, warn
from mini_harness.cli.settings import KEYS, Settings, load_settings, shown_value
from mini_harness.runtime.terminal import printable


def _file(path: object, read: bool) -> str:
    return f"{path}" if read else f"{path} (none)"


@click.command("config", short_help="Print the effective settings and where each came from.")
@workspace_option(
    "The project whose .mini-harness/config.toml is read (default: the one given before "
    "the subcommand, else the current directory)."
)
@json_option("Print the settings as one JSON object.")
def config_command(workspace: str | None, as_json: bool) -> None:
    """Print the settings an agent run here would start with, each with where it came
    from: a flag, the environment, the project's .mini-harness/config.toml, the user's
    config.toml, or the default. The first of these that says wins, except that a project
    file may only tighten `approve` and `require-sandbox` and cannot set `log-dir` (what it
    says that is not taken is printed as a warning), and that the redaction lists add up.

    \b
    Keys (each is the long option it stands for):
      model = "anthropic:claude-haiku-4-5"   approve = "ask"
      max-steps = 20                         max-context-tokens = 60000
      model-timeout = 60                     model-retries = 4
      redact-env = ["GITHUB_TOKEN"]          redact-pattern = ["ghp_[A-Za-z0-9]+"]
      require-sandbox = true                 log-dir = "~/agent-sessions"

    Exit codes: 0 printed; 2 a config file cannot be used (the message names the file, the
    key and what was expected).
    """
    settings = load_settings(workspace or root_workspace())
    for passed in settings.passed:
        warn(passed.describe())
    if as_json:
        echo_json(_document(settings), indent=True)
        return
    info(f"User config: {_file(settings.user_file, settings.user_file.is_file())}")
    info(f"Project config: {_file(settings.project_file, settings.project_file.is_file())}")
    width = max(len(key.name) for key in KEYS) + 2
    values = [shown_value(settings[key.name]) for key in KEYS]
    value_width = min(max(len(value) for value in values) + 2, 48)
    for key, value in zip(KEYS, values, strict=True):
        source = settings.source(key.name)
        if key.name == "model" and settings[key.name] is None:
            source = "default: chosen by the API key that is set, else mock"
        click.echo(printable(f"{key.name:<{width}}{value:<{value_width}}{source}"))


def _document(settings: Settings) -> dict[str, object]:
    def plain(value: object) -> object:
        if isinstance(value, tuple):
            return list(value)
        plain_json = value is None or isinstance(value, bool | int | float | str)
        return value if plain_json else str(value)

    return {
        "userConfig": str(settings.user_file),
        "projectConfig": str(settings.project_file),
        "settings": {
            key.name: {"value": plain(settings[key.name]), "source": settings.source(key.name)}
            for key in KEYS
        },
        "notTaken": [passed.describe() for passed in settings.passed],
    }
