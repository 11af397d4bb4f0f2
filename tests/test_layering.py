"""The layers import downwards only: runtime <- transcripts <- replay, the CLI on top."""

from __future__ import annotations

import subprocess
import sys

import pytest

FORBIDDEN = {
    "mini_harness.events": (
        "mini_harness.runtime",
        "mini_harness.transcripts",
        "mini_harness.replay",
        "mini_harness.cli",
    ),
    "mini_harness.agent": ("mini_harness.transcripts", "mini_harness.replay", "mini_harness.cli"),
    "mini_harness.runtime": ("mini_harness.transcripts", "mini_harness.replay", "mini_harness.cli"),
    "mini_harness.transcripts": ("mini_harness.replay", "mini_harness.cli"),
    "mini_harness.replay": ("mini_harness.cli",),
}


class TestLayering:
    @pytest.mark.parametrize("layer", sorted(FORBIDDEN))
    def test_layer_does_not_import_upwards(self, layer: str) -> None:
        """Importing a layer (and all its modules) loads nothing from the layers above it."""
        code = (
            "import importlib, pkgutil, sys\n"
            f"package = importlib.import_module({layer!r})\n"
            "for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
            "    importlib.import_module(info.name)\n"
            "print('\\n'.join(sorted(sys.modules)))\n"
        )
        loaded = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
        above = [m for m in loaded if m.startswith(FORBIDDEN[layer])]
        assert above == []
