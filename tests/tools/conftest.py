from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mini_harness import MemorySink, ToolRuntime
from mini_harness.tools import Workspace, default_registry

BIG_LINE = "x" * 99 + "\n"


def build_workspace(base: Path) -> Path:
    """A small repository with everything the file tools must handle; returns its root."""
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    root = base / "ws"
    files = {
        ".gitignore": "# build output\n*.log\n!keep.log\nbuild-out/\n/only-root.txt\n"
        "docs/**/*.tmp\nsecret/\n",
        "README.md": "# Demo\nneedle in the readme\n",
        "only-root.txt": "ignored at the root\n",
        "src/only-root.txt": "anchored pattern: kept here\n",
        "src/app.py": "import os\n\ndef main():\n    return 'needle'\n",
        "src/pkg/__init__.py": "",
        "src/pkg/deep/mod.py": "VALUE = 1  # Needle, capitalised\n",
        "src/__pycache__/app.cpython-311.pyc": "needle in bytecode dir\n",
        "node_modules/lib/index.js": "needle in node_modules\n",
        "dist/bundle.js": "needle in dist\n",
        "build/out.txt": "needle in build\n",
        ".venv/bin/activate": "needle in venv\n",
        "build-out/a.txt": "needle in ignored dir\n",
        "debug.log": "needle in an ignored log\n",
        "keep.log": "needle in a re-included log\n",
        "docs/guide.md": "Guide\r\nwith CRLF needle\r\n",
        "docs/a/b/x.tmp": "needle in ignored tmp\n",
        "secret/token.txt": "needle in ignored secret dir\n",
        "sub/.gitignore": "*.txt\n",
        "sub/notes.txt": "needle in a txt ignored by sub/.gitignore\n",
        "sub/code.py": "needle = True\n",
        "ünïcødé/日本語.txt": "こんにちは needle\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    (root / "data").mkdir()
    (root / "data/image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0needle")
    (root / "data/latin1.txt").write_bytes(b"caf\xe9 needle\n")
    (root / "big.txt").write_text(BIG_LINE * 11_000)  # 1.1 MB, over read_file's limit
    (root / "link_inside").symlink_to("src/app.py")
    (root / "link_outside").symlink_to(outside / "secret.txt")
    (root / "link_outside_dir").symlink_to(outside)
    (root / "link_dir").symlink_to("src")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    os.mkfifo(root / "pipe")
    return root


@pytest.fixture(name="root", scope="session")
def _root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture workspace's root directory, shared: the tools never write to it."""
    return build_workspace(tmp_path_factory.mktemp("tree"))


@pytest.fixture(name="sink")
def _sink() -> MemorySink:
    return MemorySink()


@pytest.fixture(name="runtime")
def _runtime(root: Path, sink: MemorySink) -> ToolRuntime:
    """A runtime over the default registry bound to the fixture workspace."""
    return ToolRuntime(default_registry(Workspace(root)), sink)


@pytest.fixture(name="runtime_for")
def _runtime_for() -> Callable[[Path], ToolRuntime]:
    """Make a runtime over the default registry for another workspace directory."""
    return lambda path: ToolRuntime(default_registry(path), MemorySink())
