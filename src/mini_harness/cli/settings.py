"""Settings: what an agent run uses when a flag does not say, and where each came from.

Four places, the first that says wins: flags, the environment, the project's
`.mini-harness/config.toml` (in the workspace), the user's `config.toml`
(store/places.py says where). A project file comes with the repository, so it may only
tighten what keeps the user safe: its `approve` and `require-sandbox` are taken only when
at least as strict as the user's (or the default), and it cannot move the session store
(`log-dir`); a value it gives that is not taken is said once per run, never dropped in
silence. Redaction adds up: the names and patterns of every place are redacted.

Both files are read by the reader of policy files (a regular file of bounded size, never
a FIFO or a device) and parsed by tomllib; a file that cannot be used is a usage error
naming the file, the key and what was expected.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from mini_harness.errors import PolicyError, RedactionError, UsageError
from mini_harness.runtime.control_file import read_control_file
from mini_harness.runtime.request_limits import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    request_retries,
    request_timeout,
)
from mini_harness.store import (
    HOME_ENV,
    default_sessions_dir,
    harness_home,
    user_config_path,
)
from mini_harness.transcripts import Redactor

if TYPE_CHECKING:
    from mini_harness.store import SessionStore

PROJECT_CONFIG: Final = ".mini-harness/config.toml"
DEFAULT = "default"


def _model(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a model as --model takes it: PROVIDER:MODEL, mock or script:FILE")
    return value.strip()


def _approve(value: Any) -> str:
    if value not in ("auto", "ask", "never"):
        raise ValueError('one of "auto", "ask", "never"')
    return str(value)


def _positive(value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if type(value) is not int or value < 1:
        raise ValueError("a whole number of at least 1")
    return value


def _boolean(value: Any) -> bool:
    if isinstance(value, str):
        words = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}
        if value.strip().lower() in words:
            return words[value.strip().lower()]
    if type(value) is not bool:
        raise ValueError("true or false")
    return value


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("an array of environment variable names")
    return tuple(value)


def _patterns(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("an array of regular expressions (Python syntax)")
    for pattern in value:
        try:  # the one check a --redact-pattern gets
            Redactor.from_config(patterns=[pattern])
        except RedactionError as exc:
            raise ValueError(f"patterns that can be used: {exc.message}") from None
    return tuple(value)


def _directory(value: Any) -> Path:
    path = Path(value).expanduser() if isinstance(value, str) and value else None
    if path is None or not path.is_absolute():
        raise ValueError("an absolute directory path (~ for the home directory)")
    return path


@attrs.frozen
class Key:
    """One setting: its key (the long option it stands for, without `--`), how a value is
    read, its default, the environment variable that sets it, and, for a setting that
    keeps the user safe, how strict each value is (a project file may only raise it)."""

    name: str
    parse: Callable[[Any], Any]
    default: Any
    env: str | None = None
    strictness: Mapping[Any, int] | None = None
    project: bool = True  # whether a project file may set it
    adds_up: bool = False  # a list every place adds to
    help: str = ""


KEYS: Final = (
    Key("model", _model, None, "MINI_HARNESS_MODEL",
        help="the model, as --model takes it (default: chosen by which API key is set)"),
    Key("approve", _approve, "ask", "MINI_HARNESS_APPROVE", {"auto": 0, "ask": 1, "never": 2},
        help="how calls that need approval are decided: auto, ask or never"),
    Key("max-steps", _positive, 10, "MINI_HARNESS_MAX_STEPS",
        help="at most this many model requests per run"),
    Key("max-context-tokens", _positive, None, "MINI_HARNESS_MAX_CONTEXT_TOKENS",
        help="the budget of each request, in estimated tokens (default: none)"),
    Key("model-timeout", request_timeout, DEFAULT_TIMEOUT, "MINI_HARNESS_MODEL_TIMEOUT",
        help="seconds each attempt of a model request may wait for the server"),
    Key("model-retries", request_retries, DEFAULT_RETRIES, "MINI_HARNESS_MODEL_RETRIES",
        help="how often a failed model request is tried again"),
    Key("redact-env", _names, (), adds_up=True,
        help="environment variables whose values are written as [REDACTED]"),
    Key("redact-pattern", _patterns, (), adds_up=True,
        help="regular expressions whose matches are written as [REDACTED]"),
    Key("require-sandbox", _boolean, False, "MINI_HARNESS_REQUIRE_SANDBOX", {False: 0, True: 1},
        help="refuse to run when run_command cannot run inside bubblewrap"),
    Key("log-dir", _directory, None, HOME_ENV, project=False,
        help="the session store: where runs without --log are recorded"),
)  # fmt: skip
"""Every setting, in the order `mini-harness config` prints them."""
_BY_NAME: Final = {key.name: key for key in KEYS}


@attrs.frozen
class Setting:
    """A setting's effective value and where it came from (`--max-steps`, `environment
    MINI_HARNESS_MAX_STEPS`, `project /repo/.mini-harness/config.toml`, `user ...`,
    `default`); a setting that adds up names every place that added to it."""

    name: str
    value: Any
    source: str


@attrs.frozen
class Passed:
    """A value of the project file that was not taken, and why."""

    name: str
    value: Any
    file: Path
    why: str

    def describe(self) -> str:
        return f"{self.file}: {self.name} = {_shown(self.value)} is not taken: {self.why}"


@attrs.frozen
class Settings:
    """The effective settings, the files they were read from, and what of the project file
    was passed over."""

    values: Mapping[str, Setting]
    user_file: Path
    project_file: Path
    passed: tuple[Passed, ...] = ()
    model_name: str | None = None
    """The model's name alone that MINI_HARNESS_MODEL holds (one that names no provider),
    for the provider chosen otherwise; None with `--model` (the flag wins) or none set."""

    def __getitem__(self, name: str) -> Any:
        return self.values[name].value

    def source(self, name: str) -> str:
        return self.values[name].source

    @property
    def sessions_dir(self) -> Path:
        """The session store's directory."""
        directory: Path = self.values["log-dir"].value
        return directory


def read_config(path: Path) -> dict[str, Any]:
    """The settings a config.toml holds, each checked; {} when there is no file. UsageError
    naming the file, the key and what was expected otherwise."""
    try:
        raw = read_control_file(path, str(path))
    except PolicyError as exc:
        raise UsageError(exc.message) from None
    if raw is None:
        return {}
    import tomllib  # only for a file there is

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from None
    values: dict[str, Any] = {}
    for name, value in data.items():
        key = _BY_NAME.get(name)
        if key is None:
            known = ", ".join(_BY_NAME)
            raise UsageError(f"{path}: unknown key {name!r} (the keys are: {known})")
        values[name] = _parsed(key, value, f"{path}: {name} must be")
    return values


def _parsed(key: Key, value: Any, where: str) -> Any:
    try:
        return key.parse(value)
    except ValueError as exc:  # its argument says what was expected
        raise UsageError(f"{where} {exc.args[0]}, not {_shown(value)}") from None


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    return str(value)


def _from_env(key: Key, env: Mapping[str, str]) -> Any:
    """The value the environment gives `key`, or None."""
    if key.env is None:
        return None
    raw = env.get(key.env, "").strip()
    if not raw:
        return None
    if key.name == "log-dir":
        home = harness_home(env)
        return None if home is None else home / "sessions"
    if key.name == "model":
        from mini_harness.agent.providers import PROVIDER_NAMES  # only when it is set

        if raw.partition(":")[0].strip().lower() not in PROVIDER_NAMES:
            return None  # a model's name alone: the name for the provider chosen otherwise
    return _parsed(key, raw, f"{key.env} must be")


def load_settings(
    workspace: str | os.PathLike[str] | None,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    project: bool = True,
) -> Settings:
    """The effective settings of a run in `workspace` (None: the current directory), with
    the `flags` the command was given (by key; None or empty: not given). Without
    `project`, the project's file is not read (a command that only needs the session
    store: a project cannot move it)."""
    env = os.environ if env is None else env
    flags = flags or {}
    user_file = user_config_path(env)
    project_file = Path(workspace or os.curdir).resolve() / PROJECT_CONFIG
    user = read_config(user_file)
    in_project = read_config(project_file) if project else {}
    values: dict[str, Setting] = {}
    passed: list[Passed] = []
    for key in KEYS:
        if key.adds_up:
            places = [
                (user, f"user {user_file}"),
                (in_project, f"project {project_file}"),
                (flags, f"--{key.name}"),
            ]
            values[key.name] = _added_up(key, places)
            continue
        setting = Setting(key.name, key.default, DEFAULT)
        if key.name in user:
            setting = Setting(key.name, user[key.name], f"user {user_file}")
        if key.name in in_project:
            why = _not_taken(key, in_project[key.name], setting)
            if why is None:
                setting = Setting(key.name, in_project[key.name], f"project {project_file}")
            else:
                passed.append(Passed(key.name, in_project[key.name], project_file, why))
        from_env = _from_env(key, env)
        if from_env is not None:
            setting = Setting(key.name, from_env, f"environment {key.env}")
        flag = flags.get(key.name)
        if flag is not None:
            setting = Setting(key.name, flag, f"--{key.name}")
        values[key.name] = setting
    if values["log-dir"].value is None:
        values["log-dir"] = Setting("log-dir", default_sessions_dir(env), DEFAULT)
    named = env.get("MINI_HARNESS_MODEL", "").strip()
    alone = named if named and _from_env(_BY_NAME["model"], env) is None else None
    model_name = None if flags.get("model") is not None else alone
    return Settings(values, user_file, project_file, tuple(passed), model_name)


def session_store() -> SessionStore:
    """The session store, where the user's settings put it (a project cannot move it)."""
    from mini_harness.store import SessionStore  # it reads transcripts: only when used

    return SessionStore(load_settings(None, project=False).sessions_dir)


def _not_taken(key: Key, value: Any, below: Setting) -> str | None:
    """Why a project file's `value` for `key` is not taken over `below` (None: it is)."""
    if not key.project:
        return (
            f"a project file cannot move the session store; set it in your user config or {key.env}"
        )
    if key.strictness is None or key.strictness[value] >= key.strictness[below.value]:
        return None
    flag = "--approve auto" if key.name == "approve" else f"{key.env}=0"
    return (
        f"a project file may only tighten {key.name}, and {_shown(value)} is looser than "
        f"{_shown(below.value)} ({below.source}); to use it, pass {flag} or set it in "
        "your user config"
    )


def _added_up(key: Key, places: list[tuple[Mapping[str, Any], str]]) -> Setting:
    """A list every place adds to, in the order given (no repeats)."""
    items: list[str] = []
    sources: list[str] = []
    for values, source in places:
        given = values.get(key.name)
        if given:
            items.extend(item for item in given if item not in items)
            sources.append(source)
    return Setting(key.name, tuple(items), " + ".join(sources) or DEFAULT)


def shown_value(value: Any) -> str:
    """A setting's value as `mini-harness config` prints it."""
    if value is None:
        return "(none)"
    if isinstance(value, tuple) and not value:
        return "(none)"
    if isinstance(value, Path):
        return str(value)
    return _shown(value)
