"""The package root offers the documented API, and says it is typed."""

from __future__ import annotations

import importlib
import importlib.resources
import inspect
import os
import pkgutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import mini_harness
import mini_harness.errors


class TestPackageRoot:
    def test_public_names_resolve(self) -> None:
        """Every name in mini_harness.__all__ can be imported from the package root."""
        for name in mini_harness.__all__:
            assert getattr(mini_harness, name) is not None, name

    @pytest.mark.parametrize("face", ["mini_harness.runtime", "mini_harness.transcripts"])
    def test_every_layer_face_offers_its_names(self, face: str) -> None:
        """Every name a package face lists (some imported on first use) can be imported."""
        module = importlib.import_module(face)
        for name in module.__all__:
            assert getattr(module, name) is not None, name

    def test_unknown_names_raise_attribute_error(self) -> None:
        """A misspelt name fails like any missing attribute."""
        with pytest.raises(AttributeError, match="ToolRuntim"):
            _ = mini_harness.ToolRuntim  # type: ignore[attr-defined]

    def test_the_package_says_it_is_typed(self) -> None:
        """PEP 561: a user's type checker reads the package's annotations (ToolRuntime,
        the typed-tool decorators, the errors) only if the package ships a py.typed marker."""
        assert importlib.resources.files("mini_harness").joinpath("py.typed").is_file()


@pytest.fixture(name="loaded", scope="module")
def _loaded(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The modules `mini-harness --tool echo ... --log T` imports."""
    log = tmp_path_factory.mktemp("startup") / "t.jsonl"
    source = str(Path(mini_harness.__file__).parents[1])
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mini_harness", "--tool", "echo",
         "--tool-input", '{"text": "hi"}', "--log", str(log)],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": source},
    )  # fmt: skip
    assert log.read_text().count("\n") == 4  # it dispatched, and recorded it
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines()}


class TestStartUp:
    def test_a_dispatch_loads_no_agent(self, loaded: set[str]) -> None:
        """`mini-harness --tool echo ...` imports neither the agent (its loop, providers,
        the shell grammar of its approval), nor the replay layer, nor any SDK."""
        assert "mini_harness.cli.dispatch" in loaded
        heavy = ("mini_harness.agent", "mini_harness.replay", "tree_sitter", "openai", "anthropic")
        assert sorted(name for name in loaded if name.startswith(heavy)) == []

    def test_a_dispatch_loads_only_the_tool_it_calls(self, loaded: set[str]) -> None:
        """The registry lists every built-in tool, but a tool's module (and what it needs:
        the walker, the patch engine, git, the sandbox) loads only when the tool is called."""
        assert "mini_harness.tools.echo" in loaded
        tools = {name for name in loaded if name.startswith("mini_harness.tools.")}
        assert sorted(tools) == [
            "mini_harness.tools.definitions",
            "mini_harness.tools.echo",
            "mini_harness.tools.workspace",
        ]
        assert sorted(loaded & {"subprocess", "tempfile", "shutil", "concurrent"}) == []

    def test_a_dispatch_loads_what_it_runs(self, loaded: set[str]) -> None:
        """Writing a log loads the writer, not the reader, verify or repair; typed tools
        (schema derivation, cattrs), the Context Explorer and the regex engine (for text
        with characters to escape, and search_text) load when they are used."""
        assert "mini_harness.transcripts.writer" in loaded
        unused = {
            "mini_harness.transcripts.reader",
            "mini_harness.transcripts.verify",
            "mini_harness.transcripts.repair",
            "mini_harness.runtime.schema_derive",
            "mini_harness.runtime.typed",
            "mini_harness.runtime.context_report",
            "cattrs",
            "regex",
            "mini_harness.runtime.handler_threads",  # for timeouts and async handlers
            "mini_harness.runtime.approval",  # for a runtime with an approver
            "difflib",  # for an unknown tool's or subcommand's closest names
            "traceback",  # for --debug
        }
        assert sorted(loaded & unused) == []

    def test_an_agent_run_loads_no_opentelemetry(self, tmp_path: Path) -> None:
        """An agent run without --otel (and without an OTLP endpoint in the environment)
        imports nothing of OpenTelemetry, nor the export package; with --otel it does."""
        source = str(Path(mini_harness.__file__).parents[1])
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}

        def loaded(*flags: str) -> set[str]:
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-m", "mini_harness", "run", "hi",
                 "--model", "mock", *flags],
                capture_output=True, text=True, check=True, cwd=tmp_path,
                env={**env, "PYTHONPATH": source, "OTEL_EXPORTER_OTLP_ENDPOINT": ""},
            )  # fmt: skip
            return {line.split("|")[-1].strip() for line in done.stderr.splitlines()}

        otel = ("opentelemetry", "mini_harness.export", "google.protobuf", "requests")
        assert sorted(name for name in loaded() if name.startswith(otel)) == []
        assert "mini_harness.export.live" in loaded("--otel")

    def test_an_agent_run_loads_what_it_runs(self, tmp_path: Path) -> None:
        """A run that is not continued, with no policy file, imports neither the replay
        layer (the fold, reports, corpora: for reading transcripts), nor the shell grammar
        (tree-sitter, for a policy's command rules), nor the regex engine (for text with
        characters to escape): its first line comes sooner."""
        source = str(Path(mini_harness.__file__).parents[1])
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "mini_harness", "run", "hi",
             "--model", "mock", "--no-log"],
            capture_output=True, text=True, check=True, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": source},
        )  # fmt: skip
        assert "Mock model response:" in done.stdout
        loaded = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
        assert "mini_harness.agent.loop" in loaded
        unused = ("mini_harness.replay", "tree_sitter", "regex", "anthropic", "openai")
        assert sorted(name for name in loaded if name.startswith(unused)) == []

    @pytest.mark.parametrize("sdk", ["anthropic", "openai"])
    def test_a_run_prints_its_header_before_the_sdk_loads(self, sdk: str, tmp_path: Path) -> None:
        """With a remote model, the run's header is out before the model's SDK is
        imported (seconds on a busy machine): the SDK loads for the first request, whose
        failure then reads as one error line."""
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        prefix = sdk.upper()
        source = str(Path(mini_harness.__file__).parents[1])
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "mini_harness", "run", "hi",
             "--model", sdk, "--no-log"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path, check=False,
            env={**os.environ, "PYTHONPATH": source, f"{prefix}_API_KEY": "sk-test",
                 f"{prefix}_BASE_URL": f"http://127.0.0.1:{port}/v1",
                 "MINI_HARNESS_MODEL_RETRIES": "0"},
        )  # fmt: skip
        lines = done.stdout.splitlines()
        header = [i for i, line in enumerate(lines) if "Model provider:" in line]
        imported = [i for i, line in enumerate(lines) if line.split("|")[-1].strip() == sdk]
        assert len(header) == len(imported) == 1
        assert header[0] < imported[0]
        failed = [line for line in lines[imported[0] :] if line.startswith("[mini-harness] Error")]
        assert failed == [
            "[mini-harness] Error: model request failed: Could not reach the model server: "
            "[Errno 111] Connection refused"
        ]
        assert done.returncode == 1

    def test_help_loads_no_sdk(self) -> None:
        """`mini-harness --help` and `mini-harness run --help` import no model SDK."""
        source = str(Path(mini_harness.__file__).parents[1])
        for command in (["--help"], ["run", "--help"]):
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-m", "mini_harness", *command],
                capture_output=True, text=True, check=True,
                env={**os.environ, "PYTHONPATH": source},
            )  # fmt: skip
            loaded = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
            assert sorted(loaded & {"anthropic", "openai", "pydantic"}) == [], command


def package_modules() -> list[str]:
    """Every module of the package that imports here (an optional SDK may be missing)."""
    names = []
    for info in pkgutil.walk_packages(mini_harness.__path__, "mini_harness."):
        if info.name.endswith("__main__"):  # running it is the CLI
            continue
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").startswith("mini_harness"):
                raise
            continue
        names.append(info.name)
    return names


class TestErrors:
    def test_every_error_is_declared_in_errors(self) -> None:
        """Whatever mini-harness raises on purpose, a caller imports from mini_harness.errors:
        no module but errors.py declares an exception class."""
        modules = package_modules()
        assert len(modules) > 100
        elsewhere = sorted(
            f"{name}.{cls.__name__}"
            for name in modules
            if name != "mini_harness.errors"
            for cls in vars(sys.modules[name]).values()
            if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == name
        )
        assert elsewhere == []


class TestExit:
    def test_exit_handlers_still_run(self, tmp_path: Path) -> None:
        """The CLI skips the collector's passes at exit, but what a user's tools registered
        to run at exit still runs, after the command's own output."""
        (tmp_path / "farewell.py").write_text(
            "import atexit\n"
            "from mini_harness.tools import default_registry\n"
            "registry = default_registry()\n"
            "atexit.register(print, 'goodbye from the registry', flush=True)\n"
        )
        source = str(Path(mini_harness.__file__).parents[1])
        done = subprocess.run(
            [sys.executable, "-m", "mini_harness", "--registry", "farewell:registry",
             "--tool", "echo", "--tool-input", '{"text": "hi"}'],
            capture_output=True, text=True, check=True, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": source},
        )  # fmt: skip
        lines = done.stdout.splitlines()
        assert lines[-1] == "goodbye from the registry"
        assert "[mini-harness] Manual tool dispatch completed." in lines
