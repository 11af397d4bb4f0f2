"""The package root offers the documented API, and says it is typed."""

from __future__ import annotations

import importlib.resources

import pytest

import mini_harness


class TestPackageRoot:
    def test_public_names_resolve(self) -> None:
        """Every name in mini_harness.__all__ can be imported from the package root."""
        for name in mini_harness.__all__:
            assert getattr(mini_harness, name) is not None, name

    def test_unknown_names_raise_attribute_error(self) -> None:
        """A misspelt name fails like any missing attribute."""
        with pytest.raises(AttributeError, match="ToolRuntim"):
            _ = mini_harness.ToolRuntim  # type: ignore[attr-defined]

    def test_the_package_says_it_is_typed(self) -> None:
        """PEP 561: a user's type checker reads the package's annotations (ToolRuntime,
        the typed-tool decorators, the errors) only if the package ships a py.typed marker."""
        assert importlib.resources.files("mini_harness").joinpath("py.typed").is_file()
