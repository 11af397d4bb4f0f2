"""Test helpers shipped with mini-harness: golden files for transcripts, reports and CLI output.

The pytest plugin (`mini_harness.testing.plugin`) is registered through the `pytest11`
entry point. Names here load on first use, so that the plugin costs nothing in test runs
that never ask for the `golden` fixture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_harness._lazy import lazy_exports

if TYPE_CHECKING:
    from mini_harness.testing.cli_outcome import CliOutcome
    from mini_harness.testing.golden import Golden, GoldenRuntime
    from mini_harness.testing.normalize import (
        DURATION_PLACEHOLDER,
        TS_PLACEHOLDER,
        Normalization,
        NormalizationError,
    )

_HOMES = {
    "CliOutcome": "cli_outcome",
    "Golden": "golden",
    "GoldenRuntime": "golden",
    "DURATION_PLACEHOLDER": "normalize",
    "TS_PLACEHOLDER": "normalize",
    "Normalization": "normalize",
    "NormalizationError": "normalize",
}

__all__ = [
    "DURATION_PLACEHOLDER",
    "TS_PLACEHOLDER",
    "CliOutcome",
    "Golden",
    "GoldenRuntime",
    "Normalization",
    "NormalizationError",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
