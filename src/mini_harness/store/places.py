"""Where mini-harness keeps what is the user's own: the session store and the user's
configuration file.

`MINI_HARNESS_HOME`, when set, holds both (`sessions/` and `config.toml`), as one
directory to move, back up or point at a scratch directory (the test suite does). Else
the XDG base directories: sessions under `$XDG_STATE_HOME/mini-harness/sessions`
(default `~/.local/state`), the configuration in `$XDG_CONFIG_HOME/mini-harness/
config.toml` (default `~/.config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

HOME_ENV: Final = "MINI_HARNESS_HOME"


def _directory(env: Mapping[str, str], name: str) -> Path | None:
    """An environment variable that names a directory, as an absolute path (the XDG spec
    says a relative one is to be ignored; so is an empty one)."""
    value = env.get(name, "")
    path = Path(value).expanduser() if value else None
    return path if path is not None and path.is_absolute() else None


def harness_home(env: Mapping[str, str]) -> Path | None:
    """`MINI_HARNESS_HOME`, if it is set to an absolute path."""
    return _directory(env, HOME_ENV)


def default_sessions_dir(env: Mapping[str, str]) -> Path:
    """The session store when nothing else is configured: `$MINI_HARNESS_HOME/sessions`,
    else `$XDG_STATE_HOME/mini-harness/sessions`, else `~/.local/state/mini-harness/sessions`."""
    home = harness_home(env)
    if home is not None:
        return home / "sessions"
    state = _directory(env, "XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return state / "mini-harness" / "sessions"


def user_config_path(env: Mapping[str, str]) -> Path:
    """The user's configuration file: `$MINI_HARNESS_HOME/config.toml`, else
    `$XDG_CONFIG_HOME/mini-harness/config.toml`, else `~/.config/mini-harness/config.toml`."""
    home = harness_home(env)
    if home is not None:
        return home / "config.toml"
    config = _directory(env, "XDG_CONFIG_HOME") or Path.home() / ".config"
    return config / "mini-harness" / "config.toml"
