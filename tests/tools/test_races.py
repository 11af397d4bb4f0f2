"""Listing while another process swaps a directory for a symlink to outside the workspace."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

from mini_harness import MemorySink, ToolHandlerError, ToolRuntime
from mini_harness.tools import default_registry

# Renames are atomic, so `d` is at every moment either the directory or the link.
SWAPPER = """
import os, sys
ws, outside = sys.argv[1], sys.argv[2]
d, held, link = (os.path.join(ws, name) for name in ("d", ".held", ".link"))
os.symlink(outside, link)
print("ready", flush=True)
while True:
    os.rename(d, held)
    os.rename(link, d)
    os.rename(d, link)
    os.rename(held, d)
"""


@attrs.define
class RaceResult:
    listings: int = 0
    refused: int = 0  # "d" was the link when the path was checked
    without_d: int = 0  # the walk met "d" as the link, or could not open it
    leaked: list[str] = attrs.Factory(list)  # names from outside: must stay empty


def race(tmp_path: Path, seconds: float) -> RaceResult:
    """List `.` and `d` for `seconds` while a second process swaps `d` and a link out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for index in range(20):
        (outside / f"outside-secret-{index}.txt").write_text("SECRET\n")
    workspace = tmp_path / "ws"
    (workspace / "d").mkdir(parents=True)
    (workspace / "d" / "inside.txt").write_text("fine\n")
    runtime = ToolRuntime(default_registry(workspace), MemorySink())
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(workspace), str(outside)],
        stdout=subprocess.PIPE,
        text=True,
    )
    result = RaceResult()
    try:
        assert swapper.stdout is not None
        assert swapper.stdout.readline() == "ready\n"
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            path = "d" if result.listings % 2 else "."
            result.listings += 1
            try:
                output = runtime.dispatch("list_files", {"path": path}).output
            except ToolHandlerError:
                result.refused += 1
                continue
            assert isinstance(output, dict)
            names = [str(entry["path"]) for entry in output["files"]]
            result.leaked += [name for name in names if "secret" in name]
            if "d/inside.txt" not in names:
                result.without_d += 1
    finally:
        swapper.kill()
        swapper.wait()
    return result


class TestDirectorySwappedForALink:
    def test_a_listing_never_shows_names_from_outside(self, tmp_path: Path) -> None:
        """Two seconds of listings against a process swapping a directory and a symlink to
        outside: many listings meet the swap, none shows a name from outside."""
        result = race(tmp_path, 2.0)
        assert result.leaked == []
        assert result.listings > 20
        assert result.without_d + result.refused > 0  # the race was really run

    @pytest.mark.thorough
    def test_a_long_race_never_shows_names_from_outside(self, tmp_path: Path) -> None:
        """The same race for a minute."""
        result = race(tmp_path, 60.0)
        assert result.leaked == []
        assert result.without_d + result.refused > 0
