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
    "mini_harness.testing": ("mini_harness.cli",),
}


class TestLayering:
    @pytest.mark.parametrize("layer", sorted(FORBIDDEN))
    def test_layer_does_not_import_upwards(self, layer: str) -> None:
        """Importing a layer (and all its modules) loads nothing from the layers above it.

        The package root (which re-exports the runtime's API) is left out: an empty module
        stands in for it, so only the layer's own imports count.
        """
        code = (
            "import importlib, importlib.util, pkgutil, sys, types\n"
            "spec = importlib.util.find_spec('mini_harness')\n"
            "root = types.ModuleType('mini_harness')\n"
            "root.__path__ = list(spec.submodule_search_locations)\n"
            "sys.modules['mini_harness'] = root\n"
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
