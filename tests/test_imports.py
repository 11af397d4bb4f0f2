"""Start-up stays lean: a logged CLI dispatch loads only what it uses, and the lazily
re-exported public names still resolve."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import mini_harness
import mini_harness.runtime
import mini_harness.transcripts

PROBE = """
import sys
sys.argv = ["mini-harness", "--tool", "echo", "--tool-input", '{"text":"hi"}', "--log", LOG]
from mini_harness.console import main
try:
    main()
except SystemExit:
    pass
print(" ".join(sorted(name for name in NAMES if name in sys.modules)))
"""


class TestLazyImports:
    def test_logged_dispatch_does_not_load_decoding_or_asyncio(self, tmp_path: Path) -> None:
        """`mini-harness --tool echo ... --log` imports only what that dispatch uses."""
        names = [
            "asyncio",
            "cattrs",
            "mini_harness.transcripts.reader",
            "mini_harness.transcripts.redaction",
            "mini_harness.runtime.context",
            "mini_harness.runtime.typed",
            "mini_harness.replay",
            "mini_harness.registry_spec",
            "jsonschema_rs",
            "email",
            "decimal",
            "socket",
            "mini_harness.cli.mcp",
            "mini_harness.cli.replay",
            "mini_harness.cli.tools",
            "mini_harness.cli.transcript",
            "click",  # the console script's quick route (mini_harness.console) needs no click
            "mini_harness.cli",
            # Classes the run does not use, kept apart: attrs compiles a class when defined.
            "mini_harness.runtime.memory",
            "mini_harness.runtime.violation",
            "mini_harness.transcripts.quarantine",
        ]
        code = PROBE.replace("LOG", repr(str(tmp_path / "t.jsonl"))).replace("NAMES", repr(names))
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        assert out.splitlines()[-1] == ""
        assert (tmp_path / "t.jsonl").read_bytes().count(b"\n") == 4

    def test_public_names_resolve_from_the_package_roots(self) -> None:
        """Every name in __all__ of mini_harness, .runtime and .transcripts can be imported."""
        for module in (mini_harness, mini_harness.runtime, mini_harness.transcripts):
            for name in module.__all__:
                assert getattr(module, name) is not None, name
            assert sorted(dir(module)) == sorted(module.__all__)

    def test_classes_moved_apart_still_import_from_their_old_modules(self) -> None:
        """MemorySink, Recorded, Violation and Quarantined are the same classes
        whether imported from where they live or from the module that used to hold them."""
        from mini_harness.runtime import memory, validation, violation
        from mini_harness.transcripts import quarantine, tail

        for old, new, name in [
            (validation, violation, "Violation"),
            (tail, quarantine, "Quarantined"),
        ]:
            assert getattr(old, name) is getattr(new, name), name
        assert mini_harness.runtime.MemorySink is memory.MemorySink
        assert mini_harness.runtime.Violation is violation.Violation
        assert mini_harness.transcripts.Quarantined is quarantine.Quarantined
        for module in (validation, tail):
            with pytest.raises(AttributeError, match="Nothing"):
                _ = module.Nothing

    def test_unknown_names_raise_attribute_error(self) -> None:
        """A misspelt name fails like any missing attribute."""
        misspelt = "ToolRuntim"
        for module in (mini_harness, mini_harness.runtime, mini_harness.transcripts):
            with pytest.raises(AttributeError, match=misspelt):
                getattr(module, misspelt)


def test_the_package_says_it_is_typed() -> None:
    """PEP 561: a user's type checker reads the package's annotations (ToolRuntime,
    the typed-tool decorators, the errors) only if the package ships a py.typed marker."""
    import importlib.resources

    assert importlib.resources.files("mini_harness").joinpath("py.typed").is_file()
