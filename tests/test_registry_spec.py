from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mini_harness.cli.registry_spec import load_registry
from mini_harness.errors import RegistrySpecError
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import default_registry

GOOD = """
from mini_harness.tools import default_registry

registry = default_registry()


def make():
    return default_registry()


class Holder:
    tools = default_registry()
"""

BROKEN_IMPORT = "import not_a_module_anywhere_xyz\n"
RAISES_ON_IMPORT = "raise RuntimeError('config missing')\n"
NOT_A_REGISTRY = """
value = 42


def wrong():
    return {"echo": None}


def explodes():
    raise ValueError("no tools today")


def duplicate():
    from mini_harness.tools import default_registry
    from mini_harness.tools.echo import ECHO, echo

    tools = default_registry()
    tools.register(ECHO, echo)
    return tools
"""


@pytest.fixture(name="project")
def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding user modules; sys.path and sys.modules restored after."""
    names = ("goodtools", "brokentools", "raisingtools", "badtools")
    for name, text in zip(
        names, (GOOD, BROKEN_IMPORT, RAISES_ON_IMPORT, NOT_A_REGISTRY), strict=True
    ):
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def message(spec: str) -> str:
    with pytest.raises(RegistrySpecError) as caught:
        load_registry(spec)
    return caught.value.message


class TestLoadRegistry:
    @pytest.mark.parametrize(
        "spec", ["goodtools:registry", "goodtools:make", "goodtools:Holder.tools"]
    )
    def test_loads_from_the_working_directory(self, project: Path, spec: str) -> None:
        """A registry, a factory or a nested attribute in ./module.py is found and loaded."""
        registry = load_registry(spec)
        assert isinstance(registry, ToolRegistry)
        assert [d.name for d in registry.list()] == [d.name for d in default_registry().list()]

    @pytest.mark.parametrize(
        ("spec", "expected"),
        [
            ("goodtools", "--registry must look like module:attribute (got 'goodtools')"),
            (":registry", "--registry must look like module:attribute (got ':registry')"),
            ("goodtools:", "--registry must look like module:attribute (got 'goodtools:')"),
            (
                "nosuchmodule:registry",
                "--registry nosuchmodule:registry: no module named 'nosuchmodule'",
            ),
            (
                "brokentools:registry",
                "--registry brokentools:registry: importing brokentools failed: "
                "ModuleNotFoundError: No module named 'not_a_module_anywhere_xyz'",
            ),
            (
                "raisingtools:registry",
                "--registry raisingtools:registry: importing raisingtools failed: "
                "RuntimeError: config missing",
            ),
            (
                "goodtools:nothing",
                "--registry goodtools:nothing: goodtools has no attribute 'nothing'",
            ),
            (
                "badtools:value",
                "--registry badtools:value: expected a ToolRegistry or a callable returning one, "
                "got int",
            ),
            (
                "badtools:wrong",
                "--registry badtools:wrong: wrong() returned dict, not a ToolRegistry",
            ),
            (
                "badtools:explodes",
                "--registry badtools:explodes: calling explodes() failed: "
                "ValueError: no tools today",
            ),
            ("badtools:duplicate", "--registry badtools:duplicate: Tool already registered: echo"),
        ],
    )
    def test_errors_say_what_is_wrong(self, project: Path, spec: str, expected: str) -> None:
        """Every way a spec can be wrong is a usage error naming the spec and the cause."""
        assert message(spec) == expected
