"""The project's own goldens run its CLI in-process: the same output as a child process
(tests/testing/test_plugin_features.py checks the child-process path), without starting an
interpreter for each command."""

from __future__ import annotations

import click
import pytest

from mini_harness.cli import cli


@pytest.fixture(name="golden_command")
def _golden_command() -> click.Command:
    """Every golden.cli in tests/golden runs the mini-harness CLI through click's CliRunner."""
    return cli
