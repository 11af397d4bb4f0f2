"""Goldens of everything the CLI prints: the seed behaviour, the report, errors, `tools`."""

from __future__ import annotations

import pytest

from mini_harness.testing import Golden

HELLO = '{"text":"hello"}'


class TestDispatch:
    def test_plain(self, golden: Golden) -> None:
        """The seed command prints the reference's four lines."""
        assert golden.check_cli("--tool", "echo", "--tool-input", HELLO).exit_code == 0

    def test_context_report(self, golden: Golden) -> None:
        """--context-report adds the Context Explorer table after the result."""
        golden.check_cli("--context-report", "--tool", "echo", "--tool-input", HELLO)

    def test_unicode_input(self, golden: Golden) -> None:
        """Non-ASCII text is printed as is, not escaped."""
        golden.check_cli("--tool", "echo", "--tool-input", '{"text":"héllo ✓"}')

    def test_with_log(self, golden: Golden) -> None:
        """--log adds a line naming the transcript and the run; the transcript is golden too."""
        log = golden.tmp_path / "t.jsonl"
        golden.check_cli("--tool", "echo", "--tool-input", HELLO, "--log", str(log))
        golden.check_transcript(log)


class TestSeedErrors:
    @pytest.mark.parametrize(
        "args",
        [
            pytest.param(["--tool", "echo", "--tool-input", '{"text":123}'], id="wrong-type"),
            pytest.param(["--tool", "echo", "--tool-input", "[1]"], id="not-an-object"),
            pytest.param(["--tool", "echo"], id="no-input"),
            pytest.param(["--tool", "nope", "--tool-input", "{}"], id="unknown-tool"),
            pytest.param(["--tool", "echo", "--tool-input", '{"text"'], id="invalid-json"),
        ],
    )
    def test_seed_error(self, golden: Golden, args: list[str]) -> None:
        """Each error of the seed CLI prints one line on stderr and exits 1 (2 for usage)."""
        assert golden.check_cli(*args).exit_code in (1, 2)


class TestUsageErrors:
    @pytest.mark.parametrize(
        "args",
        [
            pytest.param(["--bogus"], id="unknown-option"),
            pytest.param(["--tool-input", "{}"], id="input-without-tool"),
            pytest.param(["--context-report"], id="report-without-tool"),
            pytest.param(["--tool", "echo", "tools"], id="tool-with-subcommand"),
            pytest.param(["tools", "--format", "yaml"], id="unknown-format"),
            pytest.param(
                ["--tool", "echo", "--tool-input", HELLO, "--log", "/dev/null/t.jsonl"],
                id="unusable-log",
            ),
        ],
    )
    def test_usage_error(self, golden: Golden, args: list[str]) -> None:
        """Usage errors exit 2 with an error line (and a help hint for click's own errors)."""
        assert golden.check_cli(*args).exit_code == 2


class TestTools:
    @pytest.mark.parametrize("fmt", ["json", "mcp", "openai", "anthropic"])
    def test_format(self, golden: Golden, fmt: str) -> None:
        """`tools --format` prints the definitions in each ecosystem's shape."""
        assert golden.check_cli("tools", "--format", fmt).exit_code == 0

    def test_default_format(self, golden: Golden) -> None:
        """`tools` without --format prints the json shape."""
        golden.check_cli("tools")


class TestHelp:
    @pytest.mark.parametrize(
        "args",
        [
            pytest.param(["--help"], id="root"),
            pytest.param(["tools", "--help"], id="tools"),
            pytest.param(["transcript"], id="transcript-without-subcommand"),
        ],
    )
    def test_help(self, golden: Golden, args: list[str]) -> None:
        """--help explains the options and the exit codes."""
        golden.check_cli(*args)


class TestRegistry:
    def test_users_registry(self, golden: Golden) -> None:
        """check_cli runs the CLI with a registry of the user's own tools (a typed tool)."""
        spec = "tests.test_typed_tools_cli:typed_registry"
        outcome = golden.check_cli("--registry", spec, "--tool", "area", "--tool-input", "{}")
        assert outcome.exit_code == 1
        golden.check_cli(
            "--registry", spec, "--tool", "area", "--tool-input", '{"width":2}', name="ok"
        )
