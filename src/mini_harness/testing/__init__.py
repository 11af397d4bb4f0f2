"""Test helpers shipped with mini-harness: golden files for transcripts, reports and CLI output.

The pytest plugin (`mini_harness.testing.plugin`) is registered through the `pytest11`
entry point; the `golden` fixture it offers is a `Golden`.
"""

from __future__ import annotations

from mini_harness.errors import NormalizationError
from mini_harness.testing.golden import CliOutcome, Golden, GoldenRuntime
from mini_harness.testing.normalize import DURATION_PLACEHOLDER, TS_PLACEHOLDER, Normalization

__all__ = [
    "DURATION_PLACEHOLDER",
    "TS_PLACEHOLDER",
    "CliOutcome",
    "Golden",
    "GoldenRuntime",
    "Normalization",
    "NormalizationError",
]
