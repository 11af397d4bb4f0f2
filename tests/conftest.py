from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from mini_harness.runtime import ToolAnnotations, ToolDefinition, ToolRegistry
from mini_harness.tools import default_registry

pytest_plugins = ["pytester"]

# `make mutate` (mutmut) runs each test many times in one process; Hypothesis would take
# that for a test called from different executors.
settings.register_profile("mutate", suppress_health_check=[HealthCheck.differing_executors])


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--thorough",
        action="store_true",
        default=False,
        help="run long stress and fuzz tests in their thorough mode",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--thorough"):
        return
    skip = pytest.mark.skip(reason="thorough mode only: run with --thorough")
    for item in items:
        if "thorough" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _scratch_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test (and every process it starts) keeps its session store and user config in
    a scratch MINI_HARNESS_HOME: the suite never writes to, or reads, the real home's.
    Settings the environment could give are cleared (the terminal's width too), so no test
    depends on the shell or on how the suite is run."""
    monkeypatch.setenv("MINI_HARNESS_HOME", str(tmp_path_factory.mktemp("home")))
    for name in (
        "MINI_HARNESS_APPROVE",
        "MINI_HARNESS_MAX_STEPS",
        "MINI_HARNESS_MAX_CONTEXT_TOKENS",
        "MINI_HARNESS_REQUIRE_SANDBOX",
        "COLUMNS",  # pytest-xdist's workers set 80: lines are cut only where a test asks
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(name="readme_ws")
def _readme_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace holding only a README, made the current directory."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\nA tiny project.\n")
    monkeypatch.chdir(root)
    return root


@pytest.fixture(name="thorough")
def _thorough(request: pytest.FixtureRequest) -> bool:
    """True when the run asked for the long versions of stress and fuzz tests."""
    return bool(request.config.getoption("--thorough"))


@pytest.fixture(name="registry")
def _registry() -> ToolRegistry:
    """The built-in registry plus a few tools that fail in each possible way."""
    registry = default_registry()

    def boom(_: object) -> object:
        raise ValueError("boom")

    def nan(_: object) -> object:
        return {"value": float("nan")}

    registry.register(
        ToolDefinition("boom", "Always raises.", {"type": "object"}),
        boom,
    )
    registry.register(
        ToolDefinition("nan", "Returns NaN.", {"type": "object"}),
        nan,
    )
    registry.register(
        ToolDefinition(
            "add",
            "Adds two numbers.",
            {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
            annotations=ToolAnnotations(read_only_hint=True),
        ),
        lambda data: {"sum": data["a"] + data["b"]},
    )
    return registry
