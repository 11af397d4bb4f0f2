"""Settings from config.toml files: flags > environment > project > user, `mini-harness
config`, bad files, and a project file that may only tighten what keeps the user safe."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from mini_harness.events import RunStarted
from mini_harness.tools import sandbox
from mini_harness.transcripts import read_transcript

from .agent.recorded_runs import invoke, write_script


def user_config(text: str) -> Path:
    path = Path(os.environ["MINI_HARNESS_HOME"]) / "config.toml"
    path.write_text(text)
    return path


def project_config(ws: Path, text: str) -> Path:
    path = ws / ".mini-harness" / "config.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(name="ws")
def _ws(readme_ws: Path) -> Path:
    return readme_ws


def config_json(
    *args: str, env: dict[str, str | None] | None = None
) -> dict[str, dict[str, object]]:
    result = invoke(["config", "--json", *args], env=env)
    assert result.exit_code == 0, result.output
    settings: dict[str, dict[str, object]] = orjson.loads(result.stdout)["settings"]
    return settings


def run_started(log: Path) -> RunStarted:
    (event,) = [r.event for r in read_transcript(log) if isinstance(r.event, RunStarted)]
    return event


PATCH = "--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,2 @@\n-# Demo\n+# Patched\n A tiny project.\n"


def patching_script(tmp_path: Path) -> str:
    return write_script(
        tmp_path / "patch.json",
        [{"toolCalls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]},
         {"text": "Done."}],
    )  # fmt: skip


class TestPrecedence:
    def test_defaults(self, ws: Path) -> None:
        """Nothing configured: every setting says `default`."""
        settings = config_json()
        assert settings["approve"] == {"value": "ask", "source": "default"}
        assert settings["max-steps"] == {"value": 10, "source": "default"}
        assert settings["model"] == {"value": None, "source": "default"}

    def test_flags_over_environment_over_project_over_user(
        self, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Each place wins over the next, and `config` names the one that did."""
        user = user_config("max-steps = 2\nmax-context-tokens = 5000\nmodel = 'mock'\n")
        project = project_config(ws, "max-steps = 3\n")
        settings = config_json()
        assert settings["max-steps"] == {"value": 3, "source": f"project {project}"}
        assert settings["max-context-tokens"] == {"value": 5000, "source": f"user {user}"}
        assert settings["model"] == {"value": "mock", "source": f"user {user}"}
        monkeypatch.setenv("MINI_HARNESS_MAX_STEPS", "4")
        assert config_json()["max-steps"] == {
            "value": 4,
            "source": "environment MINI_HARNESS_MAX_STEPS",
        }
        log = tmp_path / "t.jsonl"
        model = write_script(tmp_path / "s.json", [{"text": "ok"}])
        result = invoke(["hi", "--model", model, "--max-steps", "5", "--log", str(log)])
        assert result.exit_code == 0, result.output
        started = run_started(log)
        assert started.max_steps == 5
        assert started.settings is not None
        assert started.settings.max_context_tokens == 5000

    def test_mini_harness_model_names_a_model_or_a_provider(self, ws: Path) -> None:
        """MINI_HARNESS_MODEL that names a provider is the environment's model setting;
        a model's name alone stays the name for the provider chosen otherwise."""
        user = user_config("model = 'anthropic'\n")
        named = config_json(env={"MINI_HARNESS_MODEL": "claude-sonnet-4-5"})["model"]
        assert named == {"value": "anthropic", "source": f"user {user}"}
        assert config_json(env={"MINI_HARNESS_MODEL": "mock"})["model"] == {
            "value": "mock",
            "source": "environment MINI_HARNESS_MODEL",
        }

    def test_the_configured_model_runs(self, ws: Path, tmp_path: Path) -> None:
        """A model in the user config is the run's, over the API keys' choice."""
        model = write_script(tmp_path / "s.json", [{"text": "from the config's script"}])
        user_config(f"model = {model!r}\n")
        result = invoke(["hi", "--no-log"], env={"OPENAI_API_KEY": "sk-not-used"})
        assert result.exit_code == 0, result.output
        assert f"Model provider: {model}" in result.stdout
        assert "from the config's script" in result.stdout

    def test_config_prints_each_source(self, ws: Path) -> None:
        """The text form: the files read, then one line per setting with its source."""
        user = user_config("approve = 'never'\n")
        result = invoke(["config"])
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert lines[0] == f"[mini-harness] User config: {user}"
        assert lines[1] == (
            f"[mini-harness] Project config: {ws.resolve()}/.mini-harness/config.toml (none)"
        )
        approve = next(line for line in lines if line.startswith("approve "))
        assert approve.split() == ["approve", '"never"', "user", str(user)]

    def test_redaction_adds_up(self, ws: Path, tmp_path: Path) -> None:
        """Names and patterns from the user's file, the project's and the flags all redact
        (a configured name whose variable is unset is passed over)."""
        user_config('redact-env = ["USER_SECRET", "UNSET_HERE"]\n')
        project_config(ws, 'redact-pattern = ["proj-[0-9]+"]\n')
        log = tmp_path / "t.jsonl"
        task = "say usersecret-1 proj-42 flagged-7"
        args = [task, "--log", str(log), "--redact-pattern", "flagged-[0-9]"]
        result = invoke(args, env={"USER_SECRET": "usersecret-1", "UNSET_HERE": None})
        assert result.exit_code == 0, result.output
        text = log.read_text()
        for secret in ("usersecret-1", "proj-42", "flagged-7"):
            assert secret not in text
            assert secret not in result.stdout
        assert text.count("[REDACTED]") >= 3


class TestProjectFilesOnlyTighten:
    def test_approve_auto_from_a_project_is_not_taken(self, ws: Path, tmp_path: Path) -> None:
        """A repository that says `approve = "auto"` does not get its calls run unasked:
        the value is not taken, a warning says so and how to choose it; the patch is denied
        (no terminal to ask on)."""
        project = project_config(ws, 'approve = "auto"\n')
        result = invoke(["patch it", "--model", patching_script(tmp_path)])
        assert result.exit_code == 0, result.output
        assert (ws / "README.md").read_text() == "# Demo\nA tiny project.\n"
        assert (
            f'[mini-harness] Warning: {project}: approve = "auto" is not taken: a project '
            'file may only tighten approve, and "auto" is looser than "ask" (default); to '
            "use it, pass --approve auto or set it in your user config"
        ) in result.stderr
        assert config_json()["approve"] == {"value": "ask", "source": "default"}

    def test_the_user_may_choose_auto(self, ws: Path, tmp_path: Path) -> None:
        """The same setting in the user's own file is taken, and then the project's is too."""
        user_config('approve = "auto"\n')
        project_config(ws, 'approve = "auto"\n')
        result = invoke(["patch it", "--model", patching_script(tmp_path)])
        assert result.exit_code == 0, result.output
        assert "Warning" not in result.stderr
        assert (ws / "README.md").read_text() == "# Patched\nA tiny project.\n"

    def test_a_project_may_tighten(self, ws: Path) -> None:
        """A stricter value from the project is taken over the user's."""
        user_config('approve = "auto"\n')
        project = project_config(ws, 'approve = "never"\nrequire-sandbox = true\n')
        settings = config_json()
        assert settings["approve"] == {"value": "never", "source": f"project {project}"}
        assert settings["require-sandbox"] == {"value": True, "source": f"project {project}"}

    def test_a_project_cannot_move_the_store(self, ws: Path) -> None:
        """log-dir from a project file is not taken (and said); from the user's it is."""
        project = project_config(ws, 'log-dir = "/tmp/elsewhere"\n')
        result = invoke(["config", "--json"], env={"MINI_HARNESS_HOME": None})
        document = orjson.loads(result.stdout)
        assert document["settings"]["log-dir"]["source"] == "default"
        assert f"{project}: log-dir" in result.stderr
        assert "a project file cannot move the session store" in result.stderr

    def test_require_sandbox_without_bubblewrap(
        self, ws: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """require-sandbox where bubblewrap cannot run: exit 2 before anything runs, naming
        where the requirement came from."""
        project = project_config(ws, "require-sandbox = true\n")
        monkeypatch.setattr(sandbox, "bubblewrap", lambda: None)
        result = invoke(["hi", "--model", "mock"])
        assert result.exit_code == 2
        assert "A sandbox was required, but bubblewrap" in result.stderr
        assert f"(require-sandbox is set by project {project})" in result.stderr


class TestBadFiles:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("max_step = 3\n", "unknown key 'max_step' (the keys are: model, approve,"),
            ("max-steps = 'ten'\n", 'max-steps must be a whole number of at least 1, not "ten"'),
            ("approve = 'sometimes'\n", 'approve must be one of "auto", "ask", "never", not'),
            ("require-sandbox = 1\n", "require-sandbox must be true or false, not 1"),
            ("redact-pattern = ['']\n", "redact-pattern must be patterns that can be used"),
            ("log-dir = 'relative'\n", "log-dir must be an absolute directory path"),
            ("max-steps = \n", "is not valid TOML"),
        ],
    )
    def test_exit_2_naming_file_key_and_expectation(
        self, ws: Path, text: str, message: str
    ) -> None:
        """A config that cannot be used stops every run and `config` with exit 2."""
        user = user_config(text)
        for args in (["config"], ["hi", "--model", "mock"]):
            result = invoke(args)
            assert result.exit_code == 2, result.output
            assert result.stderr.startswith(f"[mini-harness] Error: {user}")
            assert message in result.stderr

    def test_a_fifo_is_never_waited_on(self, ws: Path) -> None:
        """A project config that is a FIFO is refused at once, never read."""
        (ws / ".mini-harness").mkdir()
        os.mkfifo(ws / ".mini-harness" / "config.toml")
        result = invoke(["config"])
        assert result.exit_code == 2
        assert "is a FIFO, not a regular file: it was not read" in result.stderr

    def test_an_environment_value_that_cannot_be_used(
        self, ws: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A setting's variable with a bad value: exit 2 naming the variable."""
        monkeypatch.setenv("MINI_HARNESS_APPROVE", "yes")
        result = invoke(["config"])
        assert result.exit_code == 2
        assert 'MINI_HARNESS_APPROVE must be one of "auto", "ask", "never", not "yes"' in (
            result.stderr
        )
