"""How long each attempt of a model request may wait, and how often a failed one is tried
again: the defaults, and the one check of a value given (a flag, the environment, a
config file). The agent's providers use them (agent/providers/choice.py); they live below
the agent so that reading the settings (cli/settings.py), which every command that acts
does, loads no agent.
"""

from __future__ import annotations

import contextlib
import math

DEFAULT_TIMEOUT = 120.0
"""Seconds an attempt of a model request may take (connecting, or waiting for data)."""
DEFAULT_RETRIES = 2
"""How many times a failed attempt the retry policy allows is tried again."""


def request_timeout(value: object) -> float:
    """A model request's timeout as given (a number, or its text): seconds above 0, else a
    ValueError saying what was expected. The one check of every place that sets it."""
    number = math.nan
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value.strip())
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError("a number of seconds above 0")
    return number


def request_retries(value: object) -> int:
    """How often a failed model request is tried again, as given (a whole number, or its
    text): 0 or more, else a ValueError saying what was expected."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if type(value) is not int or value < 0:
        raise ValueError("a whole number, 0 or more")
    return value
